//! Runs and interrupts.

use super::error::{ApiError, ApiResult};
use super::extract::{idempotency, Authed, JsonBody};
use crate::state::AppState;
use axum::extract::{Path, Query, State};
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

/// RunSnapshot v2 with an ETag; `If-None-Match` with the current tag answers 304.
pub async fn get_run(
    State(state): State<AppState>,
    auth: Authed,
    headers: HeaderMap,
    Path(run_id): Path<String>,
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

pub async fn cancel_run(
    State(state): State<AppState>,
    auth: Authed,
    headers: HeaderMap,
    Path(run_id): Path<String>,
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

pub async fn resolve(
    State(state): State<AppState>,
    auth: Authed,
    headers: HeaderMap,
    Path((run_id, node_id)): Path<(String, String)>,
    JsonBody(body, raw): JsonBody<ResolveBody>,
) -> ApiResult<Response> {
    auth.require(Scope::ApprovalsRespond)?;
    let run_id = parse_run_id(&run_id)?;
    let idem = idempotency(
        &headers,
        &format!("resolveInterruptByRun {run_id} {node_id}"),
        &raw,
    )?;
    let outcome = state
        .engine
        .resolve(&run_id, &node_id, body.resume_value, &auth.actor, idem)
        .await?;
    Ok(respond(
        outcome,
        StatusCode::OK,
        |r| json!({ "runId": r.run_id, "nodeId": r.node_id, "status": r.status }),
    ))
}

/// Host extension: the interrupt at a node with its contract, votes and deadline.
pub async fn inspect(
    State(state): State<AppState>,
    auth: Authed,
    Path((run_id, node_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    let run_id = parse_run_id(&run_id)?;
    let view = state
        .engine
        .inspect_interrupt(&run_id, &node_id, &auth.actor)
        .await?;
    Ok(Json(
        serde_json::to_value(view).map_err(|e| ApiError::from(tollgate::EngineError::from(e)))?,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListQuery {
    status: Option<String>,
    workflow_id: Option<String>,
    kind: Option<String>,
    limit: Option<i64>,
}

/// Host extension: interrupts in the caller's tenant, newest first.
pub async fn list_interrupts(
    State(state): State<AppState>,
    auth: Authed,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    let filter = InterruptFilter {
        status: q.status,
        workflow_id: q.workflow_id,
        kind: q.kind,
        limit: q.limit.unwrap_or(50),
    };
    let items = state.engine.list_interrupts(&auth.actor, &filter).await?;
    Ok(Json(json!({ "interrupts": items })))
}
