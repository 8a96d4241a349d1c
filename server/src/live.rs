//! `GET /inbox/stream`: the live inbox. A server-sent event stream for the
//! signed-in person (session cookie; 401 without one) that sends
//! `event: inbox` whenever a committed change may have changed their inbox.
//! The engine decides which changes concern whom
//! ([`tollgate::Engine::inbox_concerns`]); the event carries no content, only
//! how many changes it stands for, and the page fetches its inbox again.
//!
//! `?since=<n>`: the engine's change count the page was drawn at
//! ([`tollgate::Engine::change_count`]); when changes happened since, the
//! stream starts with an event, so nothing between drawing the page and
//! opening the stream is missed.

use crate::state::AppState;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde::Deserialize;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tollgate::{Engine, Principal};
use tollgate_app::api::SignedIn;

/// Keep-alive comments this often (proxies close idle connections).
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Changes arriving this soon after one that concerns the person are sent
/// as one event (a burst of runs causes one refetch, not one per run).
pub const COALESCE: Duration = Duration::from_millis(150);

/// Live streams one person may hold open on this instance at once (tabs,
/// devices); one more is refused with 429 until one closes.
pub const STREAMS_PER_PERSON: usize = 16;

/// Open streams by person, on this instance.
static OPEN_STREAMS: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Default::default);

/// One open stream of a person; counted down when the stream is dropped.
struct StreamSlot(String);

impl StreamSlot {
    fn take(principal: &str) -> Option<StreamSlot> {
        let mut open = OPEN_STREAMS.lock().unwrap_or_else(|p| p.into_inner());
        let held = open.entry(principal.to_string()).or_default();
        if *held >= STREAMS_PER_PERSON {
            return None;
        }
        *held += 1;
        Some(StreamSlot(principal.to_string()))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = OPEN_STREAMS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = open.get_mut(&self.0) {
            *held -= 1;
            if *held == 0 {
                open.remove(&self.0);
            }
        }
    }
}

/// How soon the browser reopens a renewed stream.
const RENEW_RETRY: Duration = Duration::from_millis(500);

/// Set when the server shuts down: open streams (the inbox's and the run
/// event streams) end, so a graceful shutdown does not wait for clients.
static CLOSING: LazyLock<watch::Sender<bool>> = LazyLock::new(|| watch::channel(false).0);

/// Ends every open stream.
pub fn close_streams() {
    CLOSING.send_replace(true);
}

/// Changes to `true` when the server shuts down.
pub fn closing() -> watch::Receiver<bool> {
    CLOSING.subscribe()
}

#[derive(Deserialize)]
pub struct StreamQuery {
    since: Option<u64>,
}

pub async fn inbox_stream(
    State(state): State<AppState>,
    Query(q): Query<StreamQuery>,
    req: Request,
) -> Response {
    let Some(SignedIn(principal)) = req.extensions().get::<SignedIn>().cloned() else {
        return (StatusCode::UNAUTHORIZED, "sign in to follow the inbox").into_response();
    };
    let Some(slot) = StreamSlot::take(&principal.id) else {
        let mut refused = (
            StatusCode::TOO_MANY_REQUESTS,
            format!("at most {STREAMS_PER_PERSON} live inbox streams per person are open at once; close one"),
        )
            .into_response();
        refused.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("30"),
        );
        return refused;
    };
    // Subscribe before comparing the count: a change is either counted
    // already or arrives on the receiver.
    let notices = state.engine.subscribe();
    let missed = q
        .since
        .is_some_and(|n| state.engine.change_count(&principal.tenant) > n);
    let follow = Follow {
        engine: state.engine.clone(),
        principal,
        notices,
        closing: closing(),
        missed,
        _slot: slot,
        // The stream ends after `[server] live_stream_renew_seconds` and the
        // browser opens it again (a short `retry` says how soon): the session
        // is checked at each opening, so a stream held open by a session that
        // has since signed out (or lost its password) stops within that, like
        // every other request of that session.
        renew_at: Some(
            tokio::time::Instant::now()
                + Duration::from_secs(state.config.server.live_stream_renew_seconds.max(1)),
        ),
    };
    let mut res = Sse::new(stream::unfold(follow, next_event))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    res.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    res
}

struct Follow {
    engine: Engine,
    principal: Principal,
    notices: broadcast::Receiver<String>,
    closing: watch::Receiver<bool>,
    missed: bool,
    /// When to end the stream; `None` once its last event is sent.
    renew_at: Option<tokio::time::Instant>,
    /// Held while the stream is open.
    _slot: StreamSlot,
}

fn inbox_event(changes: usize) -> Result<Event, Infallible> {
    Ok(Event::default()
        .event("inbox")
        .data(format!("{{\"changes\":{changes}}}")))
}

async fn next_event(mut f: Follow) -> Option<(Result<Event, Infallible>, Follow)> {
    if *f.closing.borrow() {
        return None;
    }
    let renew_at = f.renew_at?;
    if f.missed {
        f.missed = false;
        return Some((inbox_event(1), f));
    }
    // Wait for a change that concerns this person.
    loop {
        let notice = tokio::select! {
            n = f.notices.recv() => n,
            _ = f.closing.changed() => return None,
            _ = tokio::time::sleep_until(renew_at) => {
                // The last event: reopen soon (and be checked again).
                f.renew_at = None;
                return Some((Ok(Event::default().retry(RENEW_RETRY).comment("renew")), f));
            }
        };
        match notice {
            Ok(run_id) => match f
                .engine
                .inbox_concerns(&f.principal, &tollgate::RunId::trusted(run_id))
                .await
            {
                Ok(true) => break,
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "inbox stream: relevance check failed; sending a refresh");
                    break;
                }
            },
            // Missed notices: the person's inbox may have changed.
            Err(broadcast::error::RecvError::Lagged(_)) => break,
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
    // Coalesce what follows closely (no relevance check needed: one event is
    // sent anyway); counted only within the person's tenant, so the number
    // says nothing of other tenants' activity.
    let mut changes = 1;
    let until = tokio::time::Instant::now() + COALESCE;
    while let Ok(r) = tokio::time::timeout_at(until, f.notices.recv()).await {
        match r {
            Ok(run_id) if tollgate::ids::tenant_of(&run_id) == f.principal.tenant => changes += 1,
            Ok(_) => {}
            // Missed notices of any tenant: not counted (the event goes anyway).
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
    Some((inbox_event(changes), f))
}
