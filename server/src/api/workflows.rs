//! Workflow definitions.

use super::error::{ApiError, ApiResult};
use super::extract::{ApiPath, Authed, JsonBody};
use super::schema::*;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use tollgate::auth::Scope;
use tollgate::EngineError;

#[utoipa::path(
    get,
    path = "/workflows",
    tag = "workflows",
    operation_id = "listWorkflows",
    summary = "The workflows the caller's tenant may run: instance-wide and its own",
    security(("bearer" = ["runs:read"])),
    params(
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "The workflows", body = WorkflowList),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn list(State(state): State<AppState>, auth: Authed) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    Ok(Json(
        json!({ "workflows": state.engine.workflows_for(&auth.actor)? }),
    ))
}

#[utoipa::path(
    get,
    path = "/workflows/{workflowId}",
    tag = "workflows",
    operation_id = "getWorkflow",
    summary = "A workflow definition as registered",
    security(("bearer" = ["runs:read"])),
    params(
        ("workflowId" = String, Path, description = "Workflow id", pattern = r"^[A-Za-z0-9._~:-]{1,128}$"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "The definition", body = WorkflowDefinition),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such workflow", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    auth: Authed,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    check_workflow_id(&id)?;
    Ok(Json(state.engine.workflow_for(&auth.actor, &id).await?))
}

#[utoipa::path(
    put,
    path = "/workflows/{workflowId}",
    tag = "workflows",
    operation_id = "putWorkflow",
    summary = "Register or replace a workflow of the caller's tenant",
    security(("bearer" = ["admin"])),
    params(
        ("workflowId" = String, Path, description = "Workflow id; the body's `id`, when present, must match", pattern = r"^[A-Za-z0-9._~:-]{1,128}$"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    request_body = WorkflowDefinition,
    responses(
        (status = 200, description = "Replaced", body = WorkflowInfo),
        (status = 201, description = "Registered", body = WorkflowInfo),
        (status = 400, description = "`validation_error`: the definition is refused; the message names the node and the problem", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the admin scope, or the id names an instance-wide workflow (loaded from `[workflows] dirs`), which tenants cannot replace", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 422, description = "`capability_required`: a node uses a kind this instance does not offer (`details.capability`: `conversationPrimitive`, `oauth.credentialInterrupt`)", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// Registers or replaces a definition; it is validated first (400 naming node and problem).
pub async fn put(
    State(state): State<AppState>,
    auth: Authed,
    ApiPath(id): ApiPath<String>,
    JsonBody(mut def, _): JsonBody<Value>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    auth.require(Scope::Admin)?;
    check_workflow_id(&id)?;
    let obj = def
        .as_object_mut()
        .ok_or_else(|| ApiError::validation("body", "a workflow definition must be a JSON object"))?;
    match obj.get("id") {
        None => {
            obj.insert("id".into(), json!(id));
        }
        Some(Value::String(body_id)) if *body_id == id => {}
        Some(other) => {
            return Err(ApiError::validation(
                "id",
                format!("body id {other} does not match the path id \"{id}\""),
            ));
        }
    }
    let (info, created) = state.engine.put_tenant_workflow(&auth.actor, def).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(serde_json::to_value(info).map_err(EngineError::from)?),
    ))
}

/// A workflow id from the path: 400 naming `workflowId` when it is not of the grammar.
fn check_workflow_id(id: &str) -> ApiResult<()> {
    if tollgate::ids::is_workflow_id(id) {
        Ok(())
    } else {
        Err(ApiError::validation(
            "workflowId",
            "workflowId does not match ^[A-Za-z0-9._~:-]{1,128}$",
        ))
    }
}
