//! The OpenWOP v2 REST surface. Handlers parse, call one engine operation and
//! map the result; no domain rule lives here.

pub mod admin;
pub mod delegations;
pub mod discovery;
pub mod edge;
pub mod error;
pub mod events;
pub mod extract;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod runs;
pub mod schema;
pub mod tokens;
pub mod workflows;

use crate::state::AppState;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use error::ApiError;

include!("route_table.rs");

/// The protocol version this host speaks; sent on every protocol response.
pub const PROTOCOL_VERSION: &str = "2.0";

/// Builds a router from the route table.
macro_rules! build_router {
    ($($method:ident $path:literal => $handler:path,)*) => {{
        let router: Router<AppState> = Router::new();
        $(
            let router = router.route(
                $path,
                axum::routing::on(axum::routing::MethodFilter::$method, $handler),
            );
        )*
        router
    }};
}

/// Lists the route table as `(method, path)`.
macro_rules! list_routes {
    ($($method:ident $path:literal => $handler:path,)*) => {
        vec![$((Method::$method, $path),)*]
    };
}

/// Every route `router()` serves, from the same table.
#[cfg_attr(not(test), allow(dead_code))]
pub fn api_routes() -> Vec<(Method, &'static str)> {
    api_route_table!(list_routes)
}

/// The REST API, `/healthz`, `/metrics` and `/openapi.json`. Routes come only
/// from `route_table.rs`, which the OpenAPI test compares with the document;
/// `edge::edge` checks credential, version and query in that order.
pub fn router(state: &AppState) -> Router<AppState> {
    metrics::install();
    api_route_table!(build_router)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), edge::edge))
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
