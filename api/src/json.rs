//! A JSON body extractor whose failures are Iceberg errors (400 with the reason).

use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, MissingJsonContentType};
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Like `axum::Json`, but a malformed body, a wrong type or an unknown field is a
/// `BadRequestException` saying what was wrong.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(request.headers()) {
            return Err(refused(MissingJsonContentType::default().into()));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|e| refused(e.into()))?;
        // Tracking the path to every value costs each body; only a refusal's message needs it,
        // so a body is parsed without it and, when that fails, again with it (as `axum::Json`
        // parses, so the message is the one it would give).
        match serde_json::from_slice(&bytes) {
            Ok(value) => Ok(Self(value)),
            Err(_) => axum::Json::<T>::from_bytes(&bytes)
                .map(|axum::Json(value)| Self(value))
                .map_err(refused),
        }
    }
}

/// Whether the request says its body is JSON (`application/json`, or a `+json` type), as
/// `axum::Json` requires.
fn json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<mime::Mime>().ok())
        .is_some_and(|mime| {
            mime.type_() == "application"
                && (mime.subtype() == "json" || mime.suffix().is_some_and(|s| s == "json"))
        })
}

/// A refused body as an Iceberg error.
fn refused(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::BytesRejection(e) => {
            ApiError::new(e.status(), "BadRequestException", e.body_text())
        }
        other => ApiError::bad_request(format!("invalid request body: {}", other.body_text())),
    }
}

/// `Option<JsonBody<T>>`: `None` for a request without a body type (a bare `POST`), the body
/// parsed as [`JsonBody`] parses it otherwise.
impl<S, T> axum::extract::OptionalFromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Option<Self>, Self::Rejection> {
        if !request
            .headers()
            .contains_key(axum::http::header::CONTENT_TYPE)
        {
            return Ok(None);
        }
        <Self as FromRequest<S>>::from_request(request, state)
            .await
            .map(Some)
    }
}
