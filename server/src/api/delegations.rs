//! Host extension: delegation (a person's decisions taken by another person
//! of the tenant for a period) and an admin's reassignment of one pending
//! approval's seat. The rules are the engine's (`tollgate::delegation`).

use super::error::ApiResult;
use super::extract::{ApiPath, ApiQuery, Authed, JsonBody};
use super::runs::parse_node_id;
use super::schema::*;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use tollgate::engine::delegations::NewDelegation;
use tollgate::ids::parse_run_id;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    all: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DelegationBody {
    delegate: String,
    delegator: Option<String>,
    starts_at: Option<String>,
    ends_at: String,
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReassignBody {
    from: String,
    to: String,
    reason: Option<String>,
}

#[utoipa::path(
    get,
    path = "/delegations",
    tag = "delegations",
    operation_id = "listDelegations",
    summary = "Delegations the caller gave or was given, newest first (host extension)",
    security(("bearer" = ["runs:read"])),
    params(
        ("all" = Option<bool>, Query, description = "Every delegation of the tenant (needs `admin`)"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "At most 200 delegations", body = DelegationList),
        (status = 400, description = "`validation_error`: unknown parameter", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope (`all` needs `admin`)", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    auth: Authed,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<serde_json::Value>> {
    let items = state
        .engine
        .delegations(&auth.actor, q.all.unwrap_or(false))
        .await?;
    Ok(Json(json!({ "items": items })))
}

#[utoipa::path(
    post,
    path = "/delegations",
    tag = "delegations",
    operation_id = "createDelegation",
    summary = "Hand the caller's decisions (or, as admin, someone's) to another person for a period (host extension)",
    security(("bearer" = ["approvals:respond"])),
    params(
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body = DelegationRequest,
    responses(
        (status = 201, description = "The delegation", body = Delegation),
        (status = 400, description = "`validation_error`: `details.field` names the member (`delegate`, `delegator`, `startsAt`, `endsAt`, `reason`)", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks `approvals:respond`, or names another delegator without `admin`", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    auth: Authed,
    JsonBody(body, _): JsonBody<DelegationBody>,
) -> ApiResult<Response> {
    let new = NewDelegation {
        delegator: body.delegator,
        delegate: body.delegate,
        starts_at: body.starts_at,
        ends_at: Some(body.ends_at),
        reason: body.reason,
    };
    let d = state.engine.delegate(&auth.actor, new).await?;
    Ok((StatusCode::CREATED, Json(d)).into_response())
}

#[utoipa::path(
    post,
    path = "/delegations/{delegationId}/revoke",
    tag = "delegations",
    operation_id = "revokeDelegation",
    summary = "End a delegation now: its delegator, its delegate or an admin (host extension)",
    security(("bearer" = ["runs:read"])),
    params(
        ("delegationId" = String, Path, description = "The delegation id", pattern = r"^[0-9a-f]{32}$"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body(content = JsonObject, description = "Empty object (ignored)"),
    responses(
        (status = 200, description = "The delegation, revoked", body = Delegation),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks `runs:read`", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such delegation the caller is part of in their tenant", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`conflict`: already revoked", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn revoke(
    State(state): State<AppState>,
    auth: Authed,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<tollgate::wire::delegation::Delegation>> {
    Ok(Json(state.engine.revoke_delegation(&auth.actor, &id).await?))
}

#[utoipa::path(
    post,
    path = "/runs/{runId}/interrupts/{nodeId}/reassign",
    tag = "delegations",
    operation_id = "reassignInterrupt",
    summary = "Move one person's seat on a pending approval to another person (host extension)",
    security(("bearer" = ["admin"])),
    params(
        ("runId" = String, Path, description = "Tenant-bound run id as one segment in the OpenWOP wire form: `tenant~2Fopaque` (or `tenant%2Fopaque`); `~` and two hex digits are one byte (`~7E` is `~`, `~3A` is `:`). A malformed escape or anything else is 400 `validation_error` naming `runId`", pattern = r"^(anon(:|~3[Aa]))?[A-Za-z0-9._-]{1,128}(~2[Ff]|/)([A-Za-z0-9._-]|~7[Ee]){16,128}$"),
        ("nodeId" = String, Path, description = "The interrupted node", pattern = r"^[A-Za-z0-9._~:-]{1,128}$"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body = ReassignRequest,
    responses(
        (status = 201, description = "The reassignment (a delegation for this interrupt only); the new person is mailed a link", body = Delegation),
        (status = 400, description = "`validation_error`: `details.field` names `runId`, `nodeId`, `from` (no seat on the gate), `to` (unknown, the same person, or whose request it is) or `reason`", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks `admin`; `id_tenant_mismatch`: the run belongs to another tenant", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such run or interrupt", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 409, description = "`already_resolved`: the interrupt is closed; `conflict`: not an approval", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn reassign(
    State(state): State<AppState>,
    auth: Authed,
    ApiPath((run_id, node_id)): ApiPath<(String, String)>,
    JsonBody(body, _): JsonBody<ReassignBody>,
) -> ApiResult<Response> {
    let run_id = parse_run_id(&run_id)?;
    let node_id = parse_node_id(&node_id)?;
    let d = state
        .engine
        .reassign(&auth.actor, &run_id, &node_id, &body.from, &body.to, body.reason)
        .await?;
    Ok((StatusCode::CREATED, Json(d)).into_response())
}
