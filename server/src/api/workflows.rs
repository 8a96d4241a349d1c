//! Workflow definitions.

use super::error::{ApiError, ApiResult};
use super::extract::{Authed, JsonBody};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use tollgate::auth::Scope;
use tollgate::EngineError;

pub async fn list(State(state): State<AppState>, auth: Authed) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    Ok(Json(json!({ "workflows": state.engine.workflows() })))
}

pub async fn get(
    State(state): State<AppState>,
    auth: Authed,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    state
        .engine
        .workflow(&id)
        .map(Json)
        .ok_or_else(|| EngineError::NotFound(format!("no workflow \"{id}\"")).into())
}

/// Registers or replaces a definition; it is validated first (400 naming node and problem).
pub async fn put(
    State(state): State<AppState>,
    auth: Authed,
    Path(id): Path<String>,
    JsonBody(mut def, _): JsonBody<Value>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    auth.require(Scope::Admin)?;
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
    let existed = state.engine.workflow(&id).is_some();
    let info = state.engine.register_workflow(def).await?;
    let status = if existed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((
        status,
        Json(serde_json::to_value(info).map_err(EngineError::from)?),
    ))
}
