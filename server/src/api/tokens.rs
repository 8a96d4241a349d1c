//! The signed-token surface: `GET|POST /interrupts/{token}`. The token is the
//! credential; no Authorization header is needed.

use super::error::{ApiError, ApiResult};
use super::extract::{idempotency, ApiPath, JsonBody};
use super::metrics::{self, ResolveOutcome};
use super::runs::{respond, ResolveBody};
use super::schema::*;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use serde_json::{json, Value};

#[utoipa::path(
    get,
    path = "/interrupts/{token}",
    tag = "tokens",
    operation_id = "getInterruptByToken",
    summary = "The interrupt a token links to",
    params(
        ("token" = String, Path, description = "An interrupt token `ow2.hs256.<kid>.<payload>.<mac>`; checked before anything else (401, 410)", pattern = r"^ow2\.[A-Za-z0-9_~-]+\.[A-Za-z0-9_~-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "The InterruptPayload with `contract`, `request`, `expiresAt`, `intent`", body = TokenInterrupt),
        (status = 401, description = "`interrupt_token_invalid`: grammar, algorithm, key id or MAC", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such interrupt", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`interrupt_already_resolved`: resolved, run ended or link revoked", body = ErrorEnvelope),
        (status = 410, description = "`interrupt_expired`: the link has expired", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// The InterruptPayload with its contract.
pub async fn inspect(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
) -> ApiResult<Json<Value>> {
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

#[utoipa::path(
    post,
    path = "/interrupts/{token}",
    tag = "tokens",
    operation_id = "resolveInterruptByToken",
    summary = "Resolve (or vote on) an interrupt as the token's recipient",
    params(
        ("token" = String, Path, description = "An interrupt token `ow2.hs256.<kid>.<payload>.<mac>`; checked before anything else (401, 410)", pattern = r"^ow2\.[A-Za-z0-9_~-]+\.[A-Za-z0-9_~-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"),
        ("Idempotency-Key" = Option<String>, Header, description = "`^[A-Za-z0-9._~-]{22,128}$`; the same key and body replay the stored answer with `OpenWOP-Idempotent-Replay: true`"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body = ResolveRequest,
    responses(
        (status = 200, description = "Resolved, or a vote recorded (status unchanged)", body = ResolveResponse, headers(("OpenWOP-Idempotent-Replay" = Option<String>, description = "`true` on a replay"))),
        (status = 400, description = "`validation_error` (`details.field`, `details.errors`) or `idempotency_key_invalid`", body = ErrorEnvelope),
        (status = 401, description = "`interrupt_token_invalid`: grammar, algorithm, key id or MAC", body = ErrorEnvelope),
        (status = 403, description = "`forbidden`: an inspect token, or the recipient is not eligible", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such interrupt", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`interrupt_already_resolved` (resolved, run ended, revoked), `run_terminal` or `idempotency_key_mismatch`", body = ErrorEnvelope),
        (status = 410, description = "`interrupt_expired`: the link has expired", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn resolve(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(token): ApiPath<String>,
    JsonBody(body, raw): JsonBody<ResolveBody>,
) -> ApiResult<Response> {
    let started = std::time::Instant::now();
    let result = async {
        // The record names the token by its fingerprint: no usable link is stored.
        let operation = format!("resolveInterruptByToken {}", tollgate::token::fingerprint(&token));
        let idem = idempotency(&headers, &operation, &raw)?;
        Ok::<_, ApiError>(
            state
                .engine
                .resolve_by_token(&token, body.resume_value, idem)
                .await?,
        )
    }
    .await;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            metrics::record_resolve("token", ResolveOutcome::Error(e.code), started);
            return Err(e);
        }
    };
    let measured = match &outcome.result {
        Err(e) => ResolveOutcome::Error(e.code()),
        Ok(r) if !r.status.is_waiting() => ResolveOutcome::Decided,
        // Still waiting: the token still inspects a pending interrupt after a mere vote.
        Ok(_) => match state.engine.inspect_by_token(&token).await {
            Ok((view, _)) if view.status == "pending" => ResolveOutcome::VoteRecorded,
            _ => ResolveOutcome::Decided,
        },
    };
    metrics::record_resolve("token", measured, started);
    Ok(respond(
        outcome,
        StatusCode::OK,
        |r| json!({ "runId": r.run_id, "nodeId": r.node_id, "status": r.status }),
    ))
}
