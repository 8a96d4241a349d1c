//! Runs and interrupts.

use super::error::{ApiError, ApiResult};
use super::extract::{idempotency, ApiPath, ApiQuery, Authed, JsonBody};
use super::metrics::{self, ResolveOutcome};
use super::schema::*;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use tollgate::auth::Scope;
use tollgate::ids::{encode_path_id, parse_run_id};
use tollgate::{CreateRun, InterruptFilter, Outcome};

/// Answers an idempotent outcome, marking replays.
pub fn respond<T: serde::Serialize>(
    outcome: Outcome<T>,
    ok: StatusCode,
    shape: impl FnOnce(T) -> Value,
) -> Response {
    let replayed = outcome.replayed;
    let mut res = match outcome.result {
        Ok(v) => (ok, Json(shape(v))).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    };
    if replayed {
        res.headers_mut()
            .insert("openwop-idempotent-replay", HeaderValue::from_static("true"));
    }
    res
}

#[utoipa::path(
    post,
    path = "/runs",
    tag = "runs",
    operation_id = "createRun",
    summary = "Start a run",
    security(("bearer" = ["runs:create"])),
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "`^[A-Za-z0-9._~-]{22,128}$`; the same key and body replay the stored answer with `OpenWOP-Idempotent-Replay: true`"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body = CreateRunRequest,
    responses(
        (status = 201, description = "The run was created", body = CreateRunResponse),
        (status = 400, description = "`validation_error` (`details.field` names the member) or `idempotency_key_invalid`", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope; `id_tenant_mismatch`: the run belongs to another tenant", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: unknown workflow", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`idempotency_key_mismatch`: the key was used with another body; `run_state_conflict`: the run would open a conversation whose id is already open in the tenant", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn create_run(
    State(state): State<AppState>,
    auth: Authed,
    headers: HeaderMap,
    JsonBody(req, raw): JsonBody<CreateRun>,
) -> ApiResult<Response> {
    auth.require(Scope::RunsCreate)?;
    let idem = idempotency(&headers, "createRun", &raw)?;
    let outcome = state.engine.create_run(req, &auth.actor, idem).await?;
    let base = state
        .config
        .server
        .public_url
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_string();
    Ok(respond(outcome, StatusCode::CREATED, |r| {
        let seg = encode_path_id(&r.run_id);
        json!({
            "runId": r.run_id,
            "status": r.status,
            "eventsUrl": format!("{base}/runs/{seg}/events"),
            "statusUrl": format!("{base}/runs/{seg}"),
        })
    }))
}

#[utoipa::path(
    get,
    path = "/runs/{runId}",
    tag = "runs",
    operation_id = "getRun",
    summary = "The RunSnapshot",
    security(("bearer" = ["runs:read"])),
    params(
        ("runId" = String, Path, description = "Tenant-bound run id as one segment in the OpenWOP wire form: `tenant~2Fopaque` (or `tenant%2Fopaque`); `~` and two hex digits are one byte (`~7E` is `~`, `~3A` is `:`). A malformed escape or anything else is 400 `validation_error` naming `runId`", pattern = r"^(anon(:|~3[Aa]))?[A-Za-z0-9._-]{1,128}(~2[Ff]|/)([A-Za-z0-9._-]|~7[Ee]){16,128}$"),
        ("If-None-Match" = Option<String>, Header, description = "An ETag from an earlier answer; 304 when it still matches"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "RunSnapshot v2", body = RunSnapshot, headers(("ETag" = String, description = "Strong ETag of the snapshot"))),
        (status = 304, description = "Not modified (`If-None-Match` matched)"),
        (status = 400, description = "`validation_error`: malformed run id", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope; `id_tenant_mismatch`: the run belongs to another tenant", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such run", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// RunSnapshot v2 with an ETag; `If-None-Match` with the current tag answers 304.
pub async fn get_run(
    State(state): State<AppState>,
    auth: Authed,
    headers: HeaderMap,
    ApiPath(run_id): ApiPath<String>,
) -> ApiResult<Response> {
    auth.require(Scope::RunsRead)?;
    let run_id = parse_run_id(&run_id)?;
    let snapshot = state.engine.snapshot(&run_id, &auth.actor).await?;
    Ok(super::with_etag(&headers, snapshot))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    reason: Option<String>,
}

#[utoipa::path(
    post,
    path = "/runs/{runId}/cancel",
    tag = "runs",
    operation_id = "cancelRun",
    summary = "Cancel a run",
    security(("bearer" = ["runs:cancel"])),
    params(
        ("runId" = String, Path, description = "Tenant-bound run id as one segment in the OpenWOP wire form: `tenant~2Fopaque` (or `tenant%2Fopaque`); `~` and two hex digits are one byte (`~7E` is `~`, `~3A` is `:`). A malformed escape or anything else is 400 `validation_error` naming `runId`", pattern = r"^(anon(:|~3[Aa]))?[A-Za-z0-9._-]{1,128}(~2[Ff]|/)([A-Za-z0-9._-]|~7[Ee]){16,128}$"),
        ("Idempotency-Key" = Option<String>, Header, description = "`^[A-Za-z0-9._~-]{22,128}$`; the same key and body replay the stored answer with `OpenWOP-Idempotent-Replay: true`"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body = CancelRequest,
    responses(
        (status = 200, description = "The run is cancelled", body = CancelResponse),
        (status = 400, description = "`validation_error` (malformed run id or body) or `idempotency_key_invalid`", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope; `id_tenant_mismatch`: the run belongs to another tenant", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such run", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`run_terminal`: the run already ended; `idempotency_key_mismatch`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn cancel_run(
    State(state): State<AppState>,
    auth: Authed,
    headers: HeaderMap,
    ApiPath(run_id): ApiPath<String>,
    JsonBody(body, raw): JsonBody<CancelBody>,
) -> ApiResult<Response> {
    auth.require(Scope::RunsCancel)?;
    let run_id = parse_run_id(&run_id)?;
    let idem = idempotency(&headers, &format!("cancelRun {run_id}"), &raw)?;
    let outcome = state
        .engine
        .cancel_run(&run_id, body.reason, &auth.actor, idem)
        .await?;
    Ok(respond(
        outcome,
        StatusCode::OK,
        |r| json!({ "runId": r.run_id, "status": r.status }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResolveBody {
    pub resume_value: Value,
}

#[utoipa::path(
    post,
    path = "/runs/{runId}/interrupts/{nodeId}",
    tag = "interrupts",
    operation_id = "resolveInterruptByRun",
    summary = "Resolve (or vote on) an interrupt",
    security(("bearer" = ["approvals:respond"])),
    params(
        ("runId" = String, Path, description = "Tenant-bound run id as one segment in the OpenWOP wire form: `tenant~2Fopaque` (or `tenant%2Fopaque`); `~` and two hex digits are one byte (`~7E` is `~`, `~3A` is `:`). A malformed escape or anything else is 400 `validation_error` naming `runId`", pattern = r"^(anon(:|~3[Aa]))?[A-Za-z0-9._-]{1,128}(~2[Ff]|/)([A-Za-z0-9._-]|~7[Ee]){16,128}$"),
        ("nodeId" = String, Path, description = "The interrupted node", pattern = r"^[A-Za-z0-9._~:-]{1,128}$"),
        ("Idempotency-Key" = Option<String>, Header, description = "`^[A-Za-z0-9._~-]{22,128}$`; the same key and body replay the stored answer with `OpenWOP-Idempotent-Replay: true`"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body = ResolveRequest,
    responses(
        (status = 200, description = "Resolved, or a vote recorded that does not decide yet (status unchanged)", body = ResolveResponse, headers(("OpenWOP-Idempotent-Replay" = Option<String>, description = "`true` on a replay"))),
        (status = 400, description = "`validation_error`: `details.field` names the member, `details.errors` lists resumeSchema failures; `idempotency_key_invalid`", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope or the caller is not eligible (self-approval, not an approver); `id_tenant_mismatch`", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such run or no interrupt at the node", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`interrupt_already_resolved`, `run_terminal` or `idempotency_key_mismatch`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn resolve(
    State(state): State<AppState>,
    auth: Authed,
    headers: HeaderMap,
    ApiPath((run_id, node_id)): ApiPath<(String, String)>,
    JsonBody(body, raw): JsonBody<ResolveBody>,
) -> ApiResult<Response> {
    let started = std::time::Instant::now();
    let result = async {
        auth.require(Scope::ApprovalsRespond)?;
        let run_id = parse_run_id(&run_id)?;
        let node_id = parse_node_id(&node_id)?;
        let idem = idempotency(
            &headers,
            &format!("resolveInterruptByRun {run_id} {node_id}"),
            &raw,
        )?;
        Ok::<_, ApiError>(
            state
                .engine
                .resolve(&run_id, &node_id, body.resume_value, &auth.actor, idem)
                .await?,
        )
    }
    .await;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            metrics::record_resolve("api", ResolveOutcome::Error(e.code), started);
            return Err(e);
        }
    };
    let measured = match &outcome.result {
        Err(e) => ResolveOutcome::Error(e.code()),
        Ok(r) if !r.status.is_waiting() => ResolveOutcome::Decided,
        // Still waiting: decided only if the interrupt at the node is no longer pending.
        Ok(r) => match state
            .engine
            .inspect_interrupt(&r.run_id, &r.node_id, &auth.actor)
            .await
        {
            Ok(view) if view.status == "pending" => ResolveOutcome::VoteRecorded,
            _ => ResolveOutcome::Decided,
        },
    };
    metrics::record_resolve("api", measured, started);
    Ok(respond(
        outcome,
        StatusCode::OK,
        |r| json!({ "runId": r.run_id, "nodeId": r.node_id, "status": r.status }),
    ))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct InspectQuery {
    intent: Option<TokenIntent>,
}

/// A node id from the path: 400 naming `nodeId` when it is not of the grammar.
pub(super) fn parse_node_id(s: &str) -> ApiResult<String> {
    tollgate::ids::check_node_id(s)?;
    Ok(s.to_string())
}

#[utoipa::path(
    get,
    path = "/runs/{runId}/interrupts/{nodeId}",
    tag = "interrupts",
    operation_id = "getInterruptByRun",
    summary = "The interrupt at a node (host extension)",
    security(("bearer" = ["runs:read"])),
    params(
        ("runId" = String, Path, description = "Tenant-bound run id as one segment in the OpenWOP wire form: `tenant~2Fopaque` (or `tenant%2Fopaque`); `~` and two hex digits are one byte (`~7E` is `~`, `~3A` is `:`). A malformed escape or anything else is 400 `validation_error` naming `runId`", pattern = r"^(anon(:|~3[Aa]))?[A-Za-z0-9._-]{1,128}(~2[Ff]|/)([A-Za-z0-9._-]|~7[Ee]){16,128}$"),
        ("nodeId" = String, Path, description = "The interrupted node", pattern = r"^[A-Za-z0-9._~:-]{1,128}$"),
        ("intent" = Option<TokenIntent>, Query, description = "`inspect`: the link in the answer may only inspect. Without it (or with `resolve`) the link resolves only when the caller holds `approvals:respond` and may decide; otherwise it is an inspect link. The answer's `intent` says which"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "The latest interrupt at the node with its contract, votes and deadline", body = InterruptView),
        (status = 400, description = "`validation_error`: malformed run id", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope; `id_tenant_mismatch`: the run belongs to another tenant", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such run or no interrupt at the node", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// Host extension: the interrupt at a node with its contract, votes and deadline.
pub async fn inspect(
    State(state): State<AppState>,
    auth: Authed,
    ApiPath((run_id, node_id)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<InspectQuery>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    let run_id = parse_run_id(&run_id)?;
    let node_id = parse_node_id(&node_id)?;
    let intent = q.intent.map(|i| match i {
        TokenIntent::Resolve => tollgate::token::Intent::Resolve,
        TokenIntent::Inspect => tollgate::token::Intent::Inspect,
    });
    let view = state
        .engine
        .inspect_interrupt(&run_id, &node_id, &auth.actor)
        .await?;
    let mut body = serde_json::to_value(view).map_err(|e| ApiError::from(tollgate::EngineError::from(e)))?;
    // A link for the calling principal, so API clients can hand it on; the
    // engine decides what it may do.
    if let Some((token, expires, intent)) = state
        .engine
        .link_for(&auth.actor, &run_id, &node_id, intent)
        .await?
    {
        body["token"] = json!(token);
        body["expiresAt"] = json!(tollgate::clock::rfc3339(expires));
        body["intent"] = json!(intent);
    }
    Ok(Json(body))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListQuery {
    status: Option<InterruptStatus>,
    workflow_id: Option<String>,
    kind: Option<tollgate::interrupt::InterruptKind>,
    limit: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/interrupts",
    tag = "interrupts",
    operation_id = "listInterrupts",
    summary = "Interrupts of the caller's tenant, newest first (host extension)",
    security(("bearer" = ["runs:read"])),
    params(
        ("status" = Option<InterruptStatus>, Query, description = "Only interrupts in this status"),
        ("workflowId" = Option<String>, Query, description = "Only this workflow", pattern = r"^[A-Za-z0-9._~:-]{1,128}$"),
        ("kind" = Option<InterruptKind>, Query, description = "Only this interrupt kind"),
        ("limit" = Option<i64>, Query, description = "At most this many, 1–500 (default 50)", minimum = 1, maximum = 500),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "The interrupts", body = InterruptList),
        (status = 400, description = "`validation_error`: unknown or malformed query parameter", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// Host extension: interrupts in the caller's tenant, newest first.
pub async fn list_interrupts(
    State(state): State<AppState>,
    auth: Authed,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::validation("limit", "limit must be between 1 and 500"));
    }
    if let Some(w) = q
        .workflow_id
        .as_deref()
        .filter(|w| !tollgate::ids::is_workflow_id(w))
    {
        return Err(ApiError::validation(
            "workflowId",
            format!("workflowId {w:?} does not match ^[A-Za-z0-9._~:-]{{1,128}}$"),
        ));
    }
    let filter = InterruptFilter {
        status: q.status.map(InterruptStatus::typed),
        workflow_id: q.workflow_id,
        kind: q.kind,
        limit,
    };
    let items = state.engine.list_interrupts(&auth.actor, &filter).await?;
    Ok(Json(json!({ "interrupts": items })))
}
