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
        .layer(axum::middleware::from_fn(protocol_version))
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
