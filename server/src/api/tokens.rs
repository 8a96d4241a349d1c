//! The signed-token surface: `GET|POST /interrupts/{token}`. The token is the
//! credential; no Authorization header is needed.

use super::error::ApiResult;
use super::extract::{idempotency, JsonBody};
use super::runs::{respond, ResolveBody};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use serde_json::{json, Value};

/// The InterruptPayload with its contract.
pub async fn inspect(State(state): State<AppState>, Path(token): Path<String>) -> ApiResult<Json<Value>> {
    let (view, claims) = state.engine.inspect_by_token(&token).await?;
    let mut body = view.payload.clone();
    body["interruptId"] = json!(view.interrupt_id);
    body["runId"] = json!(view.run_id);
    body["nodeId"] = json!(view.node_id);
    body["contract"] = json!({
        "requestSchema": view.request_schema,
        "resumeSchema": view.resume_schema,
        "outcomes": view.outcomes,
        "typed": view.typed,
    });
    body["request"] = view.request;
    body["expiresAt"] = json!(tollgate::clock::rfc3339(claims.e));
    body["intent"] = json!(claims.t);
    Ok(Json(body))
}

pub async fn resolve(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
    JsonBody(body, raw): JsonBody<ResolveBody>,
) -> ApiResult<Response> {
    let idem = idempotency(&headers, &format!("resolveInterruptByToken {token}"), &raw)?;
    let outcome = state
        .engine
        .resolve_by_token(&token, body.resume_value, idem)
        .await?;
    Ok(respond(
        outcome,
        StatusCode::OK,
        |r| json!({ "runId": r.run_id, "nodeId": r.node_id, "status": r.status }),
    ))
}
