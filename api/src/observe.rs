//! What the server tells its operators: request metrics by route template, request ids that
//! tie a request's log lines together, and `/metrics` in Prometheus' text format.
//!
//! Libraries report to the `metrics` facade; the binary installs the recorder and hands this
//! module the function that renders it ([`set_exporter`]). Labels are route templates,
//! methods, statuses and outcomes only: never a tenant, catalog or table name, which would
//! both leak between tenants and grow without bound.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

use crate::state::AppState;

pub const REQUESTS: &str = "pangolin_http_requests_total";
pub const REQUEST_SECONDS: &str = "pangolin_http_request_duration_seconds";
pub const AUDIT_WRITE_SECONDS: &str = "pangolin_audit_write_duration_seconds";
pub const AUDIT_WRITE_FAILURES: &str = "pangolin_audit_write_failures_total";
pub const CACHE_HITS: &str = "pangolin_object_cache_hits_total";
pub const CACHE_MISSES: &str = "pangolin_object_cache_misses_total";
pub const CACHE_ENTRIES: &str = "pangolin_object_cache_entries";
pub const CACHE_BYTES: &str = "pangolin_object_cache_bytes";

/// The route label of requests no route matched.
const UNMATCHED: &str = "unmatched";

type Render = Box<dyn Fn() -> String + Send + Sync>;

static EXPORTER: OnceLock<Render> = OnceLock::new();

/// Serves `render` (the installed recorder's text) at `/metrics`; the first call wins, as the
/// recorder is the process's one.
pub fn set_exporter(render: impl Fn() -> String + Send + Sync + 'static) {
    describe();
    let _ = EXPORTER.set(Box::new(render));
}

fn describe() {
    describe_counter!(
        REQUESTS,
        "HTTP requests by method, route template and status"
    );
    describe_histogram!(
        REQUEST_SECONDS,
        Unit::Seconds,
        "HTTP request latency by method and route template"
    );
    describe_histogram!(
        AUDIT_WRITE_SECONDS,
        Unit::Seconds,
        "Time to append one audit event durably"
    );
    describe_counter!(
        AUDIT_WRITE_FAILURES,
        "Audit events that could not be written (each also logged as an error)"
    );
    describe_counter!(CACHE_HITS, "Object cache lookups that found their object");
    describe_counter!(CACHE_MISSES, "Object cache lookups that read the backend");
    describe_gauge!(CACHE_ENTRIES, "Decoded objects in the cache");
    describe_gauge!(
        CACHE_BYTES,
        Unit::Bytes,
        "Approximate size of the cache's decoded objects"
    );
    pangolin_catalog::telemetry::describe();
}

/// The route layer that counts and times every matched request.
pub async fn layer(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, |m| m.as_str())
        .to_owned();
    let response = next.run(request).await;
    record(method.as_str(), route, response.status(), started);
    response
}

fn record(method: &str, route: String, status: StatusCode, started: Instant) {
    histogram!(REQUEST_SECONDS, "method" => method.to_owned(), "route" => route.clone())
        .record(started.elapsed().as_secs_f64());
    counter!(
        REQUESTS,
        "method" => method.to_owned(),
        "route" => route,
        "status" => status.as_u16().to_string()
    )
    .increment(1);
}

/// Counts a request that no route matched (the fallbacks answer those).
pub fn unmatched(method: &str, status: StatusCode) {
    counter!(
        REQUESTS,
        "method" => method.to_owned(),
        "route" => UNMATCHED,
        "status" => status.as_u16().to_string()
    )
    .increment(1);
}

/// A durable audit append that took `started` until now, or failed.
pub fn audit_written(started: Instant, ok: bool) {
    histogram!(AUDIT_WRITE_SECONDS).record(started.elapsed().as_secs_f64());
    if !ok {
        counter!(AUDIT_WRITE_FAILURES).increment(1);
    }
}

/// `GET /metrics`: every metric in Prometheus' text format, with the object cache's counters
/// read at the scrape.
pub async fn metrics(State(state): State<AppState>) -> Response {
    let Some(render) = EXPORTER.get() else {
        return (
            StatusCode::NOT_FOUND,
            "metrics are not recorded in this process",
        )
            .into_response();
    };
    counter!(CACHE_HITS).absolute(state.cache.hits());
    counter!(CACHE_MISSES).absolute(state.cache.misses());
    gauge!(CACHE_ENTRIES).set(state.cache.len() as f64);
    gauge!(CACHE_BYTES).set(state.cache.weight() as f64);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        render(),
    )
        .into_response()
}

/// The span of one request: its method, path and id (`x-request-id`, the client's or a new
/// one), so every log line the request causes carries the id.
pub fn request_span<B>(request: &axum::http::Request<B>) -> tracing::Span {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!(
        "request",
        method = %request.method(),
        uri = %request.uri(),
        request_id = %id,
    )
}
