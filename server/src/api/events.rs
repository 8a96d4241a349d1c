//! The run event log over SSE (with `Last-Event-ID`) and long polling.

use super::error::{ApiError, ApiResult};
use super::extract::{ApiPath, ApiQuery, Authed};
use super::schema::*;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tollgate::auth::Scope;
use tollgate::ids::parse_run_id;
use tollgate::{Actor, Engine, RunEvent};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StreamQuery {
    stream_mode: Option<String>,
    after_sequence: Option<i64>,
    /// Accepted for compatibility (events are sent as they commit), but
    /// still checked: an int64 ≥ 0, as documented.
    buffer_ms: Option<i64>,
    /// RFC 0247: the client resumes with `Last-Event-ID` if the stream ends
    /// early. This host supports that either way, so the flag changes nothing.
    #[allow(dead_code)]
    resumable: Option<bool>,
}

fn check_stream_mode(mode: Option<&str>) -> ApiResult<()> {
    match mode {
        None | Some("updates") | Some("debug") => Ok(()),
        Some(other) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "unsupported_stream_mode",
            format!("streamMode {other:?} is not supported; use updates or debug"),
        )),
    }
}

#[utoipa::path(
    get,
    path = "/runs/{runId}/events",
    tag = "runs",
    operation_id = "streamRunEvents",
    summary = "The run event log (SSE or JSON)",
    security(("bearer" = ["runs:read"])),
    params(
        ("runId" = String, Path, description = "Tenant-bound run id as one segment in the OpenWOP wire form: `tenant~2Fopaque` (or `tenant%2Fopaque`); `~` and two hex digits are one byte (`~7E` is `~`, `~3A` is `:`). A malformed escape or anything else is 400 `validation_error` naming `runId`", pattern = r"^(anon(:|~3[Aa]))?[A-Za-z0-9._-]{1,128}(~2[Ff]|/)([A-Za-z0-9._-]|~7[Ee]){16,128}$"),
        ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this sequence (wins over `afterSequence`)", minimum = -1),
        ("afterSequence" = Option<i64>, Query, description = "Events after this sequence (default -1: all)", minimum = -1),
        ("streamMode" = Option<StreamMode>, Query, description = "`updates` or `debug`"),
        ("bufferMs" = Option<i64>, Query, description = "Accepted for compatibility; events are sent as they commit", minimum = 0),
        ("resumable" = Option<bool>, Query, description = "RFC 0247: the client resumes with `Last-Event-ID` when a stream ends before the terminal event; this host supports that whether or not the flag is set"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "SSE (`id:` sequence, `event:` type, `data:` the event; keep-alives every 15 s; closes after the terminal event), or `{runId, events}` with `Accept: application/json`", content((EventsResponse = "application/json"), (EventStream = "text/event-stream"))),
        (status = 400, description = "`validation_error` (malformed run id, query or `Last-Event-ID`; `details.field` names it) or `unsupported_stream_mode`", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope; `id_tenant_mismatch`: the run belongs to another tenant", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such run", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// `GET /runs/{runId}/events`: SSE, or `{events}` JSON when the client asks for JSON.
pub async fn stream(
    State(state): State<AppState>,
    auth: Authed,
    headers: HeaderMap,
    ApiPath(run_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<StreamQuery>,
) -> ApiResult<Response> {
    auth.require(Scope::RunsRead)?;
    check_stream_mode(q.stream_mode.as_deref())?;
    if q.buffer_ms.is_some_and(|ms| ms < 0) {
        return Err(ApiError::validation("bufferMs", "bufferMs must be ≥ 0"));
    }
    let run_id = parse_run_id(&run_id)?;
    // Checked even where `Last-Event-ID` wins over it: a bad parameter is
    // refused whatever else the request says.
    if q.after_sequence.is_some_and(|seq| seq < -1) {
        return Err(ApiError::validation(
            "afterSequence",
            "afterSequence must be ≥ -1",
        ));
    }
    let after = match last_event_id(&headers)? {
        Some(seq) => seq,
        None => q.after_sequence.unwrap_or(-1),
    };
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/event-stream"));
    if wants_json {
        let (events, _) = state
            .engine
            .events_after(&run_id, &auth.actor, after, 10_000)
            .await?;
        return Ok(Json(json!({ "runId": run_id, "events": events })).into_response());
    }
    // Fail before streaming if the run is not visible.
    state.engine.snapshot(&run_id, &auth.actor).await?;
    let notices = state.engine.subscribe();
    let body = event_stream(state.engine.clone(), auth.actor, run_id, after, notices);
    Ok(Sse::new(body)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// `Last-Event-ID`: the sequence of the last event the client saw (≥ -1);
/// anything else is 400 naming the header.
fn last_event_id(headers: &HeaderMap) -> ApiResult<Option<i64>> {
    let Some(v) = headers.get("last-event-id") else {
        return Ok(None);
    };
    v.to_str()
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|seq| *seq >= -1)
        .map(Some)
        .ok_or_else(|| {
            ApiError::validation(
                "Last-Event-ID",
                "Last-Event-ID must be an event sequence (an integer ≥ -1)",
            )
        })
}

struct Cursor {
    engine: Engine,
    actor: Actor,
    run_id: tollgate::RunId,
    after: i64,
    buffer: VecDeque<RunEvent>,
    notices: broadcast::Receiver<String>,
    /// The server is shutting down: end the stream rather than hold it up.
    closing: watch::Receiver<bool>,
    done: bool,
}

fn event_stream(
    engine: Engine,
    actor: Actor,
    run_id: tollgate::RunId,
    after: i64,
    notices: broadcast::Receiver<String>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let cursor = Cursor {
        engine,
        actor,
        run_id,
        after,
        buffer: VecDeque::new(),
        notices,
        closing: crate::live::closing(),
        done: false,
    };
    stream::unfold(cursor, |mut c| async move {
        loop {
            if let Some(e) = c.buffer.pop_front() {
                c.after = e.sequence;
                if e.is_terminal() {
                    c.done = true;
                }
                let data = serde_json::to_string(&e).unwrap_or_default();
                let event = Event::default()
                    .id(e.sequence.to_string())
                    .event(e.event_type.as_str())
                    .data(data);
                return Some((Ok(event), c));
            }
            if c.done || *c.closing.borrow() {
                return None;
            }
            match c.engine.events_after(&c.run_id, &c.actor, c.after, 500).await {
                Ok((events, snapshot)) => {
                    if events.is_empty() {
                        let terminal = snapshot["status"]
                            .as_str()
                            .and_then(tollgate::RunStatus::parse)
                            .is_some_and(tollgate::RunStatus::is_terminal);
                        if terminal {
                            return None;
                        }
                        // Wait for this run's log to grow; on a shared store
                        // also read again now and then, as a notice of an
                        // instance that died after its commit never comes.
                        let shared = c.engine.shares_store();
                        loop {
                            let notice = tokio::select! {
                                n = c.notices.recv() => n,
                                _ = c.closing.changed() => return None,
                                _ = tokio::time::sleep(tollgate::engine::PEER_RECHECK), if shared => break,
                            };
                            match notice {
                                Ok(id) if id == c.run_id => break,
                                Ok(_) => continue,
                                Err(broadcast::error::RecvError::Lagged(_)) => break,
                                Err(broadcast::error::RecvError::Closed) => return None,
                            }
                        }
                    }
                    c.buffer.extend(events);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "event stream ended");
                    return None;
                }
            }
        }
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PollQuery {
    after_sequence: Option<i64>,
    timeout: Option<f64>,
    stream_mode: Option<String>,
}

#[utoipa::path(
    get,
    path = "/runs/{runId}/events/poll",
    tag = "runs",
    operation_id = "pollRunEvents",
    summary = "Long poll for run events",
    security(("bearer" = ["runs:read"])),
    params(
        ("runId" = String, Path, description = "Tenant-bound run id as one segment in the OpenWOP wire form: `tenant~2Fopaque` (or `tenant%2Fopaque`); `~` and two hex digits are one byte (`~7E` is `~`, `~3A` is `:`). A malformed escape or anything else is 400 `validation_error` naming `runId`", pattern = r"^(anon(:|~3[Aa]))?[A-Za-z0-9._-]{1,128}(~2[Ff]|/)([A-Za-z0-9._-]|~7[Ee]){16,128}$"),
        ("afterSequence" = Option<i64>, Query, description = "Events after this sequence (≥ -1, default -1)", minimum = -1),
        ("timeout" = Option<f64>, Query, description = "Seconds to wait for an event, 1–60 (default 30)", minimum = 1, maximum = 60),
        ("streamMode" = Option<StreamMode>, Query, description = "`updates` or `debug`"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "Events after `afterSequence` (empty when the timeout passed)", body = PollResponse),
        (status = 400, description = "`validation_error` (`details.field`: `timeout`, `afterSequence`, malformed run id) or `unsupported_stream_mode`", body = ErrorEnvelope),
        (status = 401, description = "`unauthenticated`: missing, malformed or unknown API key", body = ErrorEnvelope, headers(("WWW-Authenticate" = String, description = "`Bearer`"))),
        (status = 403, description = "`forbidden`: the key lacks the scope; `id_tenant_mismatch`: the run belongs to another tenant", body = ErrorEnvelope),
        (status = 404, description = "`not_found`: no such run", body = ErrorEnvelope),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
        (status = 500, description = "`internal_error`", body = ErrorEnvelope),
    )
)]
/// `GET /runs/{runId}/events/poll`: long poll for events after `afterSequence`.
pub async fn poll(
    State(state): State<AppState>,
    auth: Authed,
    ApiPath(run_id): ApiPath<String>,
    ApiQuery(q): ApiQuery<PollQuery>,
) -> ApiResult<Json<Value>> {
    auth.require(Scope::RunsRead)?;
    check_stream_mode(q.stream_mode.as_deref())?;
    let run_id = parse_run_id(&run_id)?;
    let timeout = q.timeout.unwrap_or(30.0);
    if !(1.0..=60.0).contains(&timeout) {
        return Err(ApiError::validation(
            "timeout",
            "timeout must be between 1 and 60 seconds",
        ));
    }
    let after = q.after_sequence.unwrap_or(-1);
    if after < -1 {
        return Err(ApiError::validation(
            "afterSequence",
            "afterSequence must be ≥ -1",
        ));
    }
    let mut closing = crate::live::closing();
    let (events, snapshot) = tokio::select! {
        r = state.engine.poll_events(&run_id, &auth.actor, after, Duration::from_secs_f64(timeout)) => r?,
        // Shutting down: answer now with what there is instead of holding the shutdown up.
        _ = closing.changed() => state.engine.poll_events(&run_id, &auth.actor, after, Duration::ZERO).await?,
    };
    let last = events.last().map(|e| e.sequence).unwrap_or(-1);
    let status = snapshot["status"].clone();
    let terminal = status
        .as_str()
        .and_then(tollgate::RunStatus::parse)
        .is_some_and(tollgate::RunStatus::is_terminal);
    Ok(Json(json!({
        "runId": run_id,
        "events": events,
        "lastSequence": last,
        "status": status,
        "isTerminal": terminal,
    })))
}
