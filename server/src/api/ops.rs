//! Operational endpoints: `GET /healthz`.

use super::schema::{ErrorEnvelope, Health};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// `{status: "ok"}` when the database answers, else 503.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    operation_id = "healthz",
    summary = "Liveness and database check",
    responses(
        (status = 200, description = "The database answers", body = Health, example = json!({"status": "ok"})),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`", body = ErrorEnvelope),
        (status = 503, description = "The database does not answer", body = Health),
    )
)]
pub async fn healthz(State(state): State<AppState>) -> Response {
    match state.engine.ping().await {
        Ok(()) => axum::Json(json!({"status": "ok"})).into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "unavailable", "error": e.to_string()})),
        )
            .into_response(),
    }
}
