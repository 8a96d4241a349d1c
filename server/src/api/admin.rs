//! Host extension for administrators: the outbox (emails, including the dev
//! outbox where mail lands without `[smtp]`, and run callbacks).

use super::error::{ApiError, ApiResult};
use super::extract::{ApiPath, ApiQuery, Authed};
use super::schema::*;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use tollgate::auth::Scope;
use tollgate::clock::rfc3339;
use tollgate::engine::outbox::{OutboxFilter, OutboxItem};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboxQuery {
    kind: Option<String>,
    status: Option<String>,
    limit: Option<i64>,
}

/// The wire view of one outbox row: times in RFC 3339, a callback body as JSON.
fn view(item: OutboxItem) -> Value {
    let body = item
        .body
        .as_deref()
        .map(|b| serde_json::from_str::<Value>(b).unwrap_or(Value::String(b.to_string())));
    let mut v = json!({
        "id": item.id,
        "kind": item.kind,
        "reason": item.reason,
        "runId": item.run_id,
        "status": item.status,
        "attempts": item.attempts,
        "address": item.address,
        "createdAt": rfc3339(item.created_at),
        "nextAttemptAt": rfc3339(item.next_attempt_at),
    });
    let optional = [
        ("nodeId", (!item.node_id.is_empty()).then(|| json!(item.node_id))),
        (
            "interruptId",
            (!item.interrupt_id.is_empty()).then(|| json!(item.interrupt_id)),
        ),
        (
            "recipient",
            (!item.recipient.is_empty()).then(|| json!(item.recipient)),
        ),
        ("lastError", item.last_error.map(Value::String)),
        ("responseStatus", item.response_status.map(Value::from)),
        ("deliveredVia", item.delivered_via.map(Value::String)),
        ("message", item.message.map(Value::String)),
        ("sentAt", item.sent_at.map(|t| json!(rfc3339(t)))),
        ("body", body),
    ];
    for (k, val) in optional {
        if let Some(val) = val {
            v[k] = val;
        }
    }
    v
}

#[utoipa::path(
    get,
    path = "/admin/outbox",
    tag = "admin",
    operation_id = "listOutbox",
    summary = "Outbox messages of the caller's tenant, newest first (host extension)",
    security(("bearer" = ["admin"])),
    params(
        ("kind" = Option<OutboxKind>, Query, description = "Only this kind"),
        ("status" = Option<OutboxStatus>, Query, description = "Only this delivery status"),
        ("limit" = Option<i64>, Query, description = "At most this many, 1–1000 (default 100)", minimum = 1, maximum = 1000),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "The messages: delivery state, attempts, last error, HTTP status of the last callback attempt", body = OutboxList),
        (status = 400, description = "`validation_error`: unknown parameter, kind, status or limit (`details.field` names it)", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the `admin` scope", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// Host extension: the outbox, newest first.
pub async fn list_outbox(
    State(state): State<AppState>,
    auth: Authed,
    ApiQuery(q): ApiQuery<OutboxQuery>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::Admin)?;
    let filter = OutboxFilter {
        tenant: None,
        kind: q.kind,
        status: q.status,
        limit: q.limit,
    };
    let items = state.engine.outbox_list_for(&auth.actor, &filter).await?;
    Ok(Json(
        json!({ "items": items.into_iter().map(view).collect::<Vec<_>>() }),
    ))
}

#[utoipa::path(
    post,
    path = "/admin/outbox/{outboxId}/retry",
    tag = "admin",
    operation_id = "retryOutbox",
    summary = "Queue a failed or dropped message again (host extension)",
    security(("bearer" = ["admin"])),
    params(
        ("outboxId" = i64, Path, description = "The message id"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body(content = JsonObject, description = "Empty object (ignored)"),
    responses(
        (status = 200, description = "Queued again: status `pending`, attempts reset", body = OutboxMessage),
        (status = 400, description = "`validation_error`: `outboxId` is not an integer", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the `admin` scope", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no failed or dropped message with this id in the caller's tenant", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// Host extension: put a failed message back in the queue.
pub async fn retry_outbox(
    State(state): State<AppState>,
    auth: Authed,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::Admin)?;
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::validation("outboxId", format!("outboxId {id:?} is not an integer")))?;
    // The message as the retry queued it (a worker may already be at it).
    let queued = state.engine.outbox_retry_for_tenant(&auth.actor, id).await?;
    Ok(Json(view(queued)))
}
