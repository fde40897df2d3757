//! What the server tells its operators: request metrics by route template (recorded by the
//! route layer in `security::authn`, which every routed request passes), request ids that tie
//! a request's log lines together, and `/metrics` in Prometheus' text format.
//!
//! Libraries report to the `metrics` facade; the binary installs the recorder and hands this
//! module the function that renders it ([`set_exporter`]). Labels are route templates,
//! methods, statuses and outcomes only: never a tenant, catalog or table name, which would
//! both leak between tenants and grow without bound.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{LazyLock, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use metrics::{
    Counter, Histogram, SharedString, Unit, counter, describe_counter, describe_gauge,
    describe_histogram, gauge, histogram,
};
use parking_lot::RwLock;
use tracing::Instrument as _;

use crate::security::routes::Route;
use crate::state::AppState;

pub const REQUESTS: &str = "pangolin_http_requests_total";
pub const REQUEST_SECONDS: &str = "pangolin_http_request_duration_seconds";
pub const AUDIT_WRITE_SECONDS: &str = "pangolin_audit_write_duration_seconds";
pub const AUDIT_WRITE_FAILURES: &str = "pangolin_audit_write_failures_total";
pub const CACHE_HITS: &str = "pangolin_object_cache_hits_total";
pub const CACHE_MISSES: &str = "pangolin_object_cache_misses_total";
pub const CACHE_ENTRIES: &str = "pangolin_object_cache_entries";
pub const CACHE_BYTES: &str = "pangolin_object_cache_bytes";
pub const METADATA_CACHE_HITS: &str = "pangolin_metadata_cache_hits_total";
pub const METADATA_CACHE_MISSES: &str = "pangolin_metadata_cache_misses_total";
pub const METADATA_CACHE_FILES: &str = "pangolin_metadata_cache_files";
pub const METADATA_CACHE_BYTES: &str = "pangolin_metadata_cache_bytes";

/// The route label of requests no route matched.
const UNMATCHED: &str = "unmatched";
/// The route label of requests to a route no need was declared for (refused).
const UNDECLARED: &str = "undeclared";

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
    describe_counter!(
        METADATA_CACHE_HITS,
        "Table metadata lookups answered from memory"
    );
    describe_counter!(
        METADATA_CACHE_MISSES,
        "Table metadata lookups that read and parsed the file"
    );
    describe_gauge!(
        METADATA_CACHE_FILES,
        "Parsed table metadata files held, for every warehouse"
    );
    describe_gauge!(
        METADATA_CACHE_BYTES,
        Unit::Bytes,
        "Memory the held metadata files are taken to use (seven times their size)"
    );
    pangolin_catalog::telemetry::describe();
}

/// Counts and times one answered request of `route` (None: a route no need was declared for).
pub fn record(
    method: &Method,
    route: Option<&'static Route>,
    status: StatusCode,
    started: Instant,
) {
    let method = match (method, route) {
        (&Method::HEAD, _) => "HEAD",
        (_, Some(route)) => route.method,
        (other, None) => static_method(other),
    };
    let route = route.map_or(UNDECLARED, |r| r.path);
    let seconds = started.elapsed().as_secs_f64();
    let key = (method, route, status.as_u16());
    // The handles of each (method, route, status) are made once: building a metric's key
    // (labels sorted and hashed, allocated) on every request cost more than the request's
    // own routing.
    if let Some((latency, count)) = HANDLES.read().get(&key) {
        latency.record(seconds);
        count.increment(1);
        return;
    }
    let latency = histogram!(REQUEST_SECONDS, "method" => method, "route" => route);
    let count =
        counter!(REQUESTS, "method" => method, "route" => route, "status" => status_label(status));
    latency.record(seconds);
    count.increment(1);
    HANDLES.write().insert(key, (latency, count));
}

/// Request metric handles by (method, route template, status): bounded by the route table.
/// Made on a request's first answer, so after the binary installed its recorder.
static HANDLES: LazyLock<RwLock<HashMap<RequestKey, (Histogram, Counter)>>> =
    LazyLock::new(Default::default);

type RequestKey = (&'static str, &'static str, u16);

fn static_method(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// The status as a label: a static string for those the server gives, text for the rest.
fn status_label(status: StatusCode) -> SharedString {
    let known = match status.as_u16() {
        200 => "200",
        201 => "201",
        204 => "204",
        303 => "303",
        304 => "304",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        406 => "406",
        408 => "408",
        409 => "409",
        413 => "413",
        415 => "415",
        422 => "422",
        429 => "429",
        500 => "500",
        501 => "501",
        502 => "502",
        503 => "503",
        504 => "504",
        other => return SharedString::from(other.to_string()),
    };
    SharedString::const_str(known)
}

/// Counts a request that no route matched (the fallbacks answer those).
pub fn unmatched(method: &Method, status: StatusCode) {
    counter!(
        REQUESTS,
        "method" => static_method(method),
        "route" => UNMATCHED,
        "status" => status_label(status)
    )
    .increment(1);
}

/// A durable audit append that took `started` until now, or failed.
pub fn audit_written(started: Instant, ok: bool) {
    histogram!(AUDIT_WRITE_SECONDS).record(started.elapsed().as_secs_f64());
    if ok {
        counter!(pangolin_catalog::telemetry::AUDIT_EVENTS, "written" => "alone").increment(1);
    } else {
        counter!(AUDIT_WRITE_FAILURES).increment(1);
    }
}

/// `GET /metrics`: every metric in Prometheus' text format, with the caches' counters read at
/// the scrape.
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
    let metadata = state.catalogs.tenancy().metadata_cache();
    counter!(METADATA_CACHE_HITS).absolute(metadata.hits());
    counter!(METADATA_CACHE_MISSES).absolute(metadata.misses());
    gauge!(METADATA_CACHE_FILES).set(metadata.len() as f64);
    gauge!(METADATA_CACHE_BYTES).set(metadata.weight() as f64);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        render(),
    )
        .into_response()
}

/// The header carrying a request's id, in and out.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The outermost layer: the request's id (the client's `x-request-id` when it is short
/// printable text, a new UUID otherwise) on the request, on the span every log line of the
/// request is written in, and on the answer; and one log line per answer with its status and
/// latency. A tower layer of its own: a `from_fn` middleware here would clone every route's
/// whole service stack on every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestIds;

impl<S> tower::Layer<S> for RequestIds {
    type Service = WithRequestId<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WithRequestId { inner }
    }
}

/// A service whose requests and answers carry their id (see [`RequestIds`]).
#[derive(Debug, Clone)]
pub struct WithRequestId<S> {
    inner: S,
}

impl<S> tower::Service<Request> for WithRequestId<S>
where
    S: tower::Service<Request, Response = Response>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let started = Instant::now();
        let id = request
            .headers()
            .get(&REQUEST_ID)
            .filter(|v| v.len() <= 128 && v.to_str().is_ok())
            .cloned()
            .unwrap_or_else(new_request_id);
        request.headers_mut().insert(REQUEST_ID.clone(), id.clone());
        let span = tracing::info_span!(
            "request",
            method = %request.method(),
            uri = %request.uri(),
            request_id = id.to_str().unwrap_or_default(),
        );
        let answer = span.in_scope(|| self.inner.call(request));
        Box::pin(async move {
            let mut response = answer.instrument(span.clone()).await?;
            span.in_scope(|| {
                tracing::info!(
                    status = response.status().as_u16(),
                    latency_ms = started.elapsed().as_secs_f64() * 1e3,
                    "finished processing request"
                );
            });
            response.headers_mut().insert(REQUEST_ID.clone(), id);
            Ok(response)
        })
    }
}

fn new_request_id() -> HeaderValue {
    let id = uuid::Uuid::new_v4();
    HeaderValue::from_str(
        id.hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer()),
    )
    .expect("a UUID is a valid header value")
}
