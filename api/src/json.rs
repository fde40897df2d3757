//! A JSON body extractor whose failures are Iceberg errors (400 with the reason).

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
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
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(match rejection {
                JsonRejection::BytesRejection(e) => {
                    ApiError::new(e.status(), "BadRequestException", e.body_text())
                }
                other => {
                    ApiError::bad_request(format!("invalid request body: {}", other.body_text()))
                }
            }),
        }
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
