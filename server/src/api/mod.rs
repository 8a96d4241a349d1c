//! The OpenWOP v2 REST surface. Handlers parse, call one engine operation and
//! map the result; no domain rule lives here.

pub mod discovery;
pub mod error;
pub mod events;
pub mod extract;
pub mod runs;
pub mod tokens;
pub mod workflows;

use crate::state::AppState;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use error::ApiError;

/// The protocol version this host speaks; sent on every protocol response.
pub const PROTOCOL_VERSION: &str = "2.0";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/.well-known/openwop", get(discovery::discovery))
        .route("/runs", post(runs::create_run))
        .route("/runs/{run_id}", get(runs::get_run))
        .route("/runs/{run_id}/cancel", post(runs::cancel_run))
        .route("/runs/{run_id}/events", get(events::stream))
        .route("/runs/{run_id}/events/poll", get(events::poll))
        .route(
            "/runs/{run_id}/interrupts/{node_id}",
            post(runs::resolve).get(runs::inspect),
        )
        .route("/workflows", get(workflows::list))
        .route(
            "/workflows/{workflow_id}",
            get(workflows::get).put(workflows::put),
        )
        .route("/interrupts", get(runs::list_interrupts))
        .route("/interrupts/{token}", get(tokens::inspect).post(tokens::resolve))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(protocol_version))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}

/// A JSON answer with a strong ETag; 304 when `If-None-Match` carries it.
pub fn with_etag(headers: &axum::http::HeaderMap, body: serde_json::Value) -> Response {
    use sha2::{Digest, Sha256};
    let etag = format!(
        "\"{}\"",
        &hex::encode(Sha256::digest(body.to_string().as_bytes()))[..32]
    );
    let matches = headers
        .get(axum::http::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut res = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        axum::Json(body).into_response()
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        res.headers_mut().insert(axum::http::header::ETAG, v);
    }
    res
}

/// Refuses an unsupported requested major and stamps `OpenWOP-Version`.
async fn protocol_version(req: Request, next: Next) -> Response {
    if let Some(v) = req.headers().get("openwop-version") {
        let major = v
            .to_str()
            .unwrap_or("")
            .split('.')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        if major != "2" {
            let mut e = ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                "protocol_version_unsupported",
                format!("this host speaks OpenWOP {PROTOCOL_VERSION}; requested {major:?}"),
            );
            e.details = Some(serde_json::json!({ "protocolVersions": [PROTOCOL_VERSION] }));
            let mut res = e.into_response();
            res.headers_mut()
                .insert("openwop-version", HeaderValue::from_static(PROTOCOL_VERSION));
            return res;
        }
    }
    let mut res = next.run(req).await;
    res.headers_mut()
        .insert("openwop-version", HeaderValue::from_static(PROTOCOL_VERSION));
    res
}
