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
//! - `tollgate_pending_interrupts` (gauge, refreshed on every scrape)
//! - `tollgate_outbox_backlog` (gauge: outbox messages not yet delivered,
//!   refreshed on every scrape)

use super::error::ApiError;
use crate::state::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
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

/// Counts every request by method, matched route template and status.
pub async fn track_http(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let method = req.method().as_str().to_string();
    let started = Instant::now();
    let res = next.run(req).await;
    let status = res.status().as_u16().to_string();
    metrics::histogram!(
        "tollgate_http_request_duration_seconds",
        "method" => method.clone(),
        "route" => route.clone(),
    )
    .record(started.elapsed().as_secs_f64());
    metrics::counter!(
        "tollgate_http_requests_total",
        "method" => method,
        "route" => route,
        "status" => status,
    )
    .increment(1);
    res
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
    metrics::counter!(
        "tollgate_resolves_total",
        "via" => via,
        "outcome" => outcome,
        "code" => code,
    )
    .increment(1);
    metrics::histogram!("tollgate_resolve_duration_seconds", "via" => via)
        .record(started.elapsed().as_secs_f64());
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
    match state.engine.overview().await {
        Ok(o) => metrics::gauge!("tollgate_pending_interrupts").set(o.pending_interrupts as f64),
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
