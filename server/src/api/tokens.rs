//! The signed-token surface: `GET|POST /interrupts/{token}` and the host
//! extension `GET /interrupts/{token}/context`. The token is the credential;
//! no Authorization header is needed.

use super::error::{ApiError, ApiResult};
use super::extract::{idempotency, ApiPath, JsonBody};
use super::metrics::{self, ResolveOutcome};
use super::runs::{respond, ResolveBody};
use super::schema::*;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

// Tollgate's scalar extras, as response headers of `GET /interrupts/{token}`
// (its body is the closed InterruptPayload; the rest is at `/context`).
const INTERRUPT_ID_HEADER: &str = "x-tollgate-interrupt-id";
const RUN_ID_HEADER: &str = "x-tollgate-run-id";
const NODE_ID_HEADER: &str = "x-tollgate-node-id";
const EXPIRES_AT_HEADER: &str = "x-tollgate-expires-at";
const INTENT_HEADER: &str = "x-tollgate-intent";

fn intent_str(intent: tollgate::token::Intent) -> &'static str {
    match intent {
        tollgate::token::Intent::Resolve => "resolve",
        tollgate::token::Intent::Inspect => "inspect",
    }
}

#[utoipa::path(
    get,
    path = "/interrupts/{token}",
    tag = "tokens",
    operation_id = "getInterruptByToken",
    summary = "The InterruptPayload a token links to",
    description = "The body is exactly the closed OpenWOP `InterruptPayload` (`kind`, `key`, `data`, `resumeSchema?`, `timeoutMs?`). \
Tollgate's extras travel as `X-Tollgate-*` headers; the contract and the request are at `GET /interrupts/{token}/context`.",
    params(
        ("token" = String, Path, description = "An interrupt token `ow2.hs256.<kid>.<payload>.<mac>`; checked before anything else (401, 410)", pattern = r"^ow2\.[A-Za-z0-9_~-]+\.[A-Za-z0-9_~-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "The InterruptPayload, verbatim as `interrupt.requested` recorded it", body = InterruptPayload, headers(
            ("X-Tollgate-Interrupt-Id" = String, description = "Host extension: the interrupt id (`tenant/opaque`)"),
            ("X-Tollgate-Run-Id" = String, description = "Host extension: the run id (`tenant/opaque`)"),
            ("X-Tollgate-Node-Id" = String, description = "Host extension: the interrupted node"),
            ("X-Tollgate-Expires-At" = String, description = "Host extension: when the token expires (RFC 3339)"),
            ("X-Tollgate-Intent" = String, description = "Host extension: `resolve` or `inspect`, what the token may do"),
        )),
        (status = 401, description = "`interrupt_token_invalid`: grammar, algorithm, key id or MAC", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such interrupt", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`interrupt_already_resolved`: resolved, run ended or link revoked", body = ErrorEnvelope),
        (status = 410, description = "`interrupt_expired`: the link has expired", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// The InterruptPayload, with Tollgate's scalar extras as headers.
pub async fn inspect(State(state): State<AppState>, ApiPath(token): ApiPath<String>) -> ApiResult<Response> {
    let (view, claims) = state.engine.inspect_by_token(&token).await?;
    let mut res = Json(view.payload).into_response();
    let expires = tollgate::clock::rfc3339(claims.e);
    for (name, value) in [
        (INTERRUPT_ID_HEADER, view.interrupt_id.as_str()),
        (RUN_ID_HEADER, view.run_id.as_str()),
        (NODE_ID_HEADER, view.node_id.as_str()),
        (EXPIRES_AT_HEADER, expires.as_str()),
        (INTENT_HEADER, intent_str(claims.t)),
    ] {
        // Ids follow their ASCII grammars; a value that could not be a header is left out.
        if let Ok(v) = HeaderValue::from_str(value) {
            res.headers_mut().insert(name, v);
        }
    }
    Ok(res)
}

#[utoipa::path(
    get,
    path = "/interrupts/{token}/context",
    tag = "tokens",
    operation_id = "getInterruptContextByToken",
    summary = "What Tollgate knows about a token's interrupt beyond the InterruptPayload (host extension)",
    description = "The same token checks and answers as `GET /interrupts/{token}`; the body holds the interrupt's identity, \
its contract (`requestSchema`, `resumeSchema`, `outcomes`, `typed`), the validated request, and the token's `expiresAt` and `intent`.",
    params(
        ("token" = String, Path, description = "An interrupt token `ow2.hs256.<kid>.<payload>.<mac>`; checked before anything else (401, 410)", pattern = r"^ow2\.[A-Za-z0-9_~-]+\.[A-Za-z0-9_~-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "`{interruptId, runId, nodeId, contract, request, expiresAt, intent}`", body = TokenInterruptContext),
        (status = 401, description = "`interrupt_token_invalid`: grammar, algorithm, key id or MAC", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such interrupt", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`interrupt_already_resolved`: resolved, run ended or link revoked", body = ErrorEnvelope),
        (status = 410, description = "`interrupt_expired`: the link has expired", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// Host extension: the token's interrupt with its contract and request.
pub async fn context(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let (view, claims) = state.engine.inspect_by_token(&token).await?;
    Ok(Json(json!({
        "interruptId": view.interrupt_id,
        "runId": view.run_id,
        "nodeId": view.node_id,
        "contract": {
            "requestSchema": view.request_schema,
            "resumeSchema": view.resume_schema,
            "outcomes": view.outcomes,
            "typed": view.typed,
        },
        "request": view.request,
        "expiresAt": tollgate::clock::rfc3339(claims.e),
        "intent": intent_str(claims.t),
    })))
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
        (status = 403, description = "`forbidden`: an inspect token, or the recipient is not eligible; `auth_elevation_required`: the gate is decided only by a signed-in approver (profile `openwop-interrupt-auth-required`), never by a link", body = ErrorEnvelope),
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
