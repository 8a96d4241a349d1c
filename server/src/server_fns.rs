//! The console's server functions (`/api/…`) answer arguments they cannot
//! decode with 400, like every other route: server_fn answers them 500
//! (`Args|…`) before the function runs. Refusals from the functions
//! themselves carry their status already (`tollgate_app::api::fail`).

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// How server_fn prefixes an error from decoding a call's arguments.
const ARGS_ERROR: &[u8] = b"Args|";
/// An error body longer than this is passed on as it is.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Whether a request is a server function call.
pub fn is_server_fn(path: &str) -> bool {
    path.starts_with("/api/")
}

/// A server function's answer, with 400 for arguments it could not decode.
pub async fn args_status(res: Response) -> Response {
    if res.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, ERROR_BODY_LIMIT).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "error body too large").into_response();
    };
    if bytes.starts_with(ARGS_ERROR) {
        parts.status = StatusCode::BAD_REQUEST;
    }
    Response::from_parts(parts, Body::from(bytes))
}
