//! Idempotency keys: a client that retries a mutation with the same `Idempotency-Key` gets the
//! answer of the first attempt instead of applying it twice.
//!
//! The first request with a key claims it (a record created only if absent), runs, and stores
//! its answer under the key; a retry replays that answer. A retry while the first attempt still
//! runs is told to wait (409), and a key reused for a different request is refused (422). Server
//! errors release the key, so the client may try again. Keys live in the record store, scoped by
//! tenant, and expire after [`LIFETIME`].

use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequestParts, RawPathParams};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pangolin_records::{ExpectedVersion, RecordError, RecordKey};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::security::Caller;
use crate::state::AppState;

/// How long a key is remembered; advertised in `GET /v1/config`.
pub const LIFETIME: Duration = Duration::from_secs(30 * 60);

/// [`LIFETIME`] as the ISO 8601 duration the config advertises.
pub const LIFETIME_ISO8601: &str = "PT30M";

pub const HEADER: &str = "idempotency-key";

/// Largest answer kept for replay; larger ones are answered but not stored.
const MAX_STORED_BODY: usize = 4 << 20;

#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    /// The request the key was first used for.
    method: String,
    path: String,
    created_ms: i64,
    /// `None` while the first attempt runs.
    answer: Option<Answer>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Answer {
    status: u16,
    content_type: Option<String>,
    body: String,
    /// The answer carried the warehouse's client `config` (which may hold storage
    /// credentials): it is not stored, and is put back from the live settings on replay.
    #[serde(default)]
    had_config: bool,
}

fn error(status: StatusCode, kind: &'static str, message: String) -> Response {
    ApiError::new(status, kind, message).into_response()
}

/// The middleware: applies to mutations that carry the header, passes everything else.
pub async fn layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(raw) = request.headers().get(HEADER) else {
        return next.run(request).await;
    };
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return next.run(request).await;
    }
    let key = match raw.to_str() {
        Ok(k) if !k.is_empty() && k.len() <= 128 && k.bytes().all(|b| b.is_ascii_graphic()) => {
            k.to_owned()
        }
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequestException",
                "Idempotency-Key must be 1 to 128 visible ASCII characters".to_owned(),
            );
        }
    };
    // Keys are the caller's own: another principal (or tenant) using the same key gets
    // nothing of this one's answers.
    let (tenant, principal) = Caller::current().map_or_else(
        || (state.tenant.clone(), "anonymous".to_owned()),
        |c| (c.tenant, c.principal.id),
    );
    let record_key = match RecordKey::new(format!("{PREFIX}{tenant}/{principal}/{key}")) {
        Ok(k) => k,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequestException",
                format!("unusable Idempotency-Key: {e}"),
            );
        }
    };
    let (method, path) = (
        request.method().to_string(),
        request.uri().path().to_owned(),
    );
    // The catalog, decoded from the path, for the `config` of a replayed answer.
    let (mut parts, body) = request.into_parts();
    let prefix = RawPathParams::from_request_parts(&mut parts, &state)
        .await
        .ok()
        .and_then(|params| {
            params
                .iter()
                .find(|(name, _)| *name == "prefix")
                .map(|(_, value)| value.to_owned())
        });
    let request = Request::from_parts(parts, body);
    let now = Timestamp::now().as_millis();
    let records = &state.store;
    let expected = match records.get_record(&record_key).await {
        Err(e) => return ApiError::from(e).into_response(),
        Ok(None) => ExpectedVersion::Absent,
        Ok(Some(record)) => {
            let stored: Option<Stored> = serde_json::from_slice(&record.value).ok();
            match stored {
                Some(s) if now - s.created_ms < lifetime_ms() => {
                    if s.method != method || s.path != path {
                        return error(
                            StatusCode::UNPROCESSABLE_ENTITY,
                            "UnprocessableEntityException",
                            format!(
                                "Idempotency-Key `{key}` was used for {} {}; use a new key for a different request",
                                s.method, s.path
                            ),
                        );
                    }
                    return match s.answer {
                        Some(answer) => replay(&state, prefix.as_deref(), answer).await,
                        None => error(
                            StatusCode::CONFLICT,
                            "CommitFailedException",
                            format!(
                                "a request with Idempotency-Key `{key}` is still running; retry later"
                            ),
                        ),
                    };
                }
                // Expired or unreadable: the key starts afresh.
                _ => ExpectedVersion::Is(record.version),
            }
        }
    };
    let claim = Stored {
        method,
        path,
        created_ms: now,
        answer: None,
    };
    let version = match records
        .put_record(&record_key, expected, encode(&claim))
        .await
    {
        Ok(version) => version,
        Err(RecordError::VersionMismatch { .. }) => {
            return error(
                StatusCode::CONFLICT,
                "CommitFailedException",
                format!("a request with Idempotency-Key `{key}` is already running; retry later"),
            );
        }
        Err(e) => return ApiError::internal(&e).into_response(),
    };

    let response = next.run(request).await;
    let status = response.status();
    if status.is_server_error() {
        // The outcome may be a failure the client can retry: release the key.
        if let Err(e) = records.delete_record(&record_key, version).await {
            tracing::warn!(error = %e, "releasing an idempotency key");
        }
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_STORED_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::warn!(error = %e, "answer too large to keep for idempotent replay");
            let _ = records.delete_record(&record_key, version).await;
            return ApiError::internal(&*e.into_inner()).into_response();
        }
    };
    let (body, had_config) = without_config(&bytes);
    let done = Stored {
        answer: Some(Answer {
            status: status.as_u16(),
            content_type: parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body,
            had_config,
        }),
        ..claim
    };
    if let Err(e) = records
        .put_record(&record_key, ExpectedVersion::Is(version), encode(&done))
        .await
    {
        tracing::warn!(error = %e, "storing an idempotent answer");
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Where every idempotency key is kept, under `<tenant>/<principal>/<key>`.
const PREFIX: &str = "idempotency/";

/// Records listed per page while expiring.
const EXPIRY_PAGE: usize = 500;

/// Deletes the keys that expired by `now` (and unreadable ones, which a request would treat
/// as expired anyway); returns how many. A key reused or deleted meanwhile is left alone: the
/// delete asks for the version that was read.
pub async fn expire(
    records: &dyn pangolin_records::RecordStore,
    now: Timestamp,
) -> Result<u64, pangolin_store::BackendError> {
    let mut after: Option<RecordKey> = None;
    let mut deleted = 0;
    loop {
        let page = records
            .list_records(PREFIX, after.as_ref(), EXPIRY_PAGE)
            .await?;
        for record in &page.records {
            let expired = serde_json::from_slice::<Stored>(&record.value)
                .map_or(true, |s| now.as_millis() - s.created_ms >= lifetime_ms());
            if !expired {
                continue;
            }
            match records.delete_record(&record.key, record.version).await {
                Ok(()) => deleted += 1,
                Err(RecordError::VersionMismatch { .. }) => {}
                Err(RecordError::Backend(e)) => return Err(e),
            }
        }
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(deleted),
        }
    }
}

fn lifetime_ms() -> i64 {
    i64::try_from(LIFETIME.as_millis()).unwrap_or(i64::MAX)
}

fn encode(stored: &Stored) -> Bytes {
    Bytes::from(serde_json::to_vec(stored).unwrap_or_default())
}

/// The answer's body with its top-level `config` and `storage-credentials` removed (both may
/// hold credentials, which are never stored), and whether there was a `config`. A replay
/// carries the warehouse's config as it is then and no vended credentials: the client asks
/// the credentials route for fresh ones.
fn without_config(bytes: &[u8]) -> (String, bool) {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(serde_json::Value::Object(mut map)) if map.contains_key("config") => {
            map.remove("config");
            map.remove("storage-credentials");
            (serde_json::Value::Object(map).to_string(), true)
        }
        _ => (String::from_utf8_lossy(bytes).into_owned(), false),
    }
}

/// The stored answer, with the `config` of the catalog's warehouse as it is now.
async fn replay(state: &AppState, prefix: Option<&str>, answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let body = match (answer.had_config, serde_json::from_str(&answer.body)) {
        (true, Ok(serde_json::Value::Object(mut map))) => {
            let scope = match prefix {
                Some(prefix) => state.scope(prefix).await,
                None => Err(ApiError::bad_request("no catalog in the path")),
            };
            let config = match scope {
                Ok(scope) => scope
                    .catalog
                    .warehouse()
                    .map(|w| w.client_config().clone())
                    .unwrap_or_default(),
                Err(error) => return error.into_response(),
            };
            map.insert(
                "config".to_owned(),
                serde_json::to_value(config).unwrap_or_default(),
            );
            serde_json::Value::Object(map).to_string()
        }
        _ => answer.body,
    };
    let mut response = (status, body).into_response();
    if let Some(value) = answer
        .content_type
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
        .headers_mut()
        .insert("idempotency-replayed", HeaderValue::from_static("true"));
    response
}
