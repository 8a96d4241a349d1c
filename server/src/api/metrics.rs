//! `GET /metrics`: Prometheus text from the `metrics` facade. The recorder is
//! installed once per process and rendered through its handle (no listener of
//! its own).
//!
//! - `tollgate_http_requests_total{method, route, status}` (route is the
//!   matched path template, `unmatched` otherwise)
//! - `tollgate_http_request_duration_seconds{method, route}` (histogram)
//! - `tollgate_resolves_total{via, outcome, code}`: `outcome` is `decided`,
//!   `vote_recorded` or `error` (then `code` is the error code, else `none`)
//! - `tollgate_resolve_duration_seconds{via}` (histogram)
//! - `tollgate_pending_interrupts` (gauge, refreshed on every scrape from
//!   the counts the engine keeps: its cost does not grow with the store)
//! - `tollgate_outbox_backlog` (gauge: outbox messages not yet delivered,
//!   refreshed on every scrape)

use super::error::ApiError;
use crate::state::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock, RwLock};
use std::time::Instant;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Latency buckets in seconds, for request and resolve durations.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Installs the Prometheus recorder (idempotent). If another recorder is
/// already installed, `/metrics` renders an empty recorder of its own.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
            .expect("non-empty buckets");
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics will be empty");
        }
        metrics::describe_counter!(
            "tollgate_http_requests_total",
            "HTTP requests by method, matched route and status"
        );
        metrics::describe_histogram!(
            "tollgate_http_request_duration_seconds",
            metrics::Unit::Seconds,
            "HTTP request latency by method and matched route"
        );
        metrics::describe_counter!(
            "tollgate_resolves_total",
            "Interrupt resolve attempts by channel (api, token), outcome and error code"
        );
        metrics::describe_histogram!(
            "tollgate_resolve_duration_seconds",
            metrics::Unit::Seconds,
            "Resolve latency, from request to the engine's answer"
        );
        metrics::describe_gauge!("tollgate_pending_interrupts", "Interrupts waiting for a decision");
        metrics::describe_gauge!(
            "tollgate_outbox_backlog",
            "Outbox messages (emails, callbacks) not yet delivered"
        );
        handle
    })
}

/// Counts every request by method, matched route template and status: made
/// from the request, finished with the response's status
/// (`crate::middleware::respond`).
pub struct HttpTimer {
    method: &'static str,
    route: Option<MatchedPath>,
    started: Instant,
}

impl HttpTimer {
    pub fn start(req: &Request) -> HttpTimer {
        HttpTimer {
            method: method_label(req.method()),
            route: req.extensions().get::<MatchedPath>().cloned(),
            started: Instant::now(),
        }
    }

    pub fn finish(self, status: StatusCode) {
        let route = self.route.as_ref().map_or("unmatched", MatchedPath::as_str);
        let (requests, duration) = http_series(self.method, route, status.as_u16());
        duration.record(self.started.elapsed().as_secs_f64());
        requests.increment(1);
    }
}

/// A request's method as a label: one of the standard methods, else
/// `OTHER` (a client must not add series by inventing methods).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "OTHER",
    }
}

/// Handles of labelled series, kept once made so that counting neither
/// formats labels nor searches the recorder's registry (≈ 8 K instructions
/// a request; docs/performance.md): `find` under the read lock, else under
/// the write lock again, else `make` (after the recorder is installed:
/// handles made before would count nothing).
fn kept<M, T>(seen: &RwLock<M>, find: impl Fn(&M) -> Option<T>, make: impl FnOnce(&mut M) -> T) -> T {
    if let Some(found) = find(&seen.read().expect("metrics lock")) {
        return found;
    }
    let mut map = seen.write().expect("metrics lock");
    if let Some(found) = find(&map) {
        return found;
    }
    install();
    make(&mut map)
}

/// The handles of a request's two series, by route, method and status.
fn http_series(method: &'static str, route: &str, status: u16) -> (Counter, Histogram) {
    type Routes = HashMap<Box<str>, HashMap<(&'static str, u16), (Counter, Histogram)>>;
    static SEEN: LazyLock<RwLock<Routes>> = LazyLock::new(Default::default);
    kept(
        &SEEN,
        |routes| routes.get(route)?.get(&(method, status)).cloned(),
        |routes| {
            let handles = (
                metrics::counter!(
                    "tollgate_http_requests_total",
                    "method" => method,
                    "route" => route.to_string(),
                    "status" => status.to_string(),
                ),
                metrics::histogram!(
                    "tollgate_http_request_duration_seconds",
                    "method" => method,
                    "route" => route.to_string(),
                ),
            );
            routes
                .entry(route.into())
                .or_default()
                .insert((method, status), handles.clone());
            handles
        },
    )
}

/// How a resolve ended, for `tollgate_resolves_total`.
pub enum ResolveOutcome {
    Decided,
    VoteRecorded,
    Error(&'static str),
}

/// Records one resolve attempt through `via` (`api` or `token`).
pub fn record_resolve(via: &'static str, outcome: ResolveOutcome, started: Instant) {
    let (outcome, code) = match outcome {
        ResolveOutcome::Decided => ("decided", "none"),
        ResolveOutcome::VoteRecorded => ("vote_recorded", "none"),
        ResolveOutcome::Error(code) => ("error", code),
    };
    let (resolves, duration) = resolve_series(via, outcome, code);
    resolves.increment(1);
    duration.record(started.elapsed().as_secs_f64());
}

/// The handles of a resolve's two series, by channel, outcome and code.
fn resolve_series(via: &'static str, outcome: &'static str, code: &'static str) -> (Counter, Histogram) {
    type Key = (&'static str, &'static str, &'static str);
    static SEEN: LazyLock<RwLock<HashMap<Key, (Counter, Histogram)>>> = LazyLock::new(Default::default);
    let key = (via, outcome, code);
    kept(
        &SEEN,
        |seen| seen.get(&key).cloned(),
        |seen| {
            let handles = (
                metrics::counter!(
                    "tollgate_resolves_total",
                    "via" => via,
                    "outcome" => outcome,
                    "code" => code,
                ),
                metrics::histogram!("tollgate_resolve_duration_seconds", "via" => via),
            );
            seen.insert(key, handles.clone());
            handles
        },
    )
}

/// `GET /metrics`
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    operation_id = "metrics",
    summary = "Prometheus metrics",
    description = "Prometheus text exposition format 0.0.4: `tollgate_http_requests_total{method,route,status}`, \
`tollgate_http_request_duration_seconds{method,route}`, `tollgate_resolves_total{via,outcome,code}`, \
`tollgate_resolve_duration_seconds{via}`, `tollgate_pending_interrupts`, `tollgate_outbox_backlog`. \
Unauthenticated: restrict it at the reverse proxy.",
    responses(
        (status = 200, description = "Prometheus text", content_type = "text/plain; version=0.0.4", body = String),
        (status = 405, description = "`method_not_allowed`", body = super::schema::ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`", body = super::schema::ErrorEnvelope),
        (status = 500, description = "`internal_error`: the database did not answer", body = super::schema::ErrorEnvelope),
    )
)]
pub async fn render(State(state): State<AppState>) -> Response {
    let handle = install();
    match state.engine.pending_interrupts().await {
        Ok(n) => metrics::gauge!("tollgate_pending_interrupts").set(n as f64),
        Err(e) => return ApiError::from(e).into_response(),
    }
    match state.engine.outbox_backlog().await {
        Ok(n) => metrics::gauge!("tollgate_outbox_backlog").set(n as f64),
        Err(e) => return ApiError::from(e).into_response(),
    }
    handle.run_upkeep();
    let mut res = (StatusCode::OK, handle.render()).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invented_methods_share_one_label() {
        assert_eq!(method_label(&Method::POST), "POST");
        assert_eq!(method_label(&Method::TRACE), "TRACE");
        for invented in ["FOO", "BREW", "get"] {
            let method = Method::from_bytes(invented.as_bytes()).unwrap();
            assert_eq!(method_label(&method), "OTHER", "{invented}");
        }
    }
}
