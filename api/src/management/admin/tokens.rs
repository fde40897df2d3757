//! Revoking a token by its id (root only): for a leaked token whose holder cannot log out.

use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::identity;
use crate::error::ApiError;
use crate::json::JsonBody;
use crate::state::AppState;

/// `POST /api/v1/tokens/revoke`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RevokeToken {
    /// The token's `jti` claim (a UUID).
    pub token_id: String,
}

/// Revokes a token by id: it is refused from now on, on every server.
#[utoipa::path(post, path = "/api/v1/tokens/revoke", tag = "tokens", request_body = RevokeToken,
    responses((status = 204), (status = 400), (status = 403)))]
pub async fn revoke(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<RevokeToken>,
) -> Result<StatusCode, ApiError> {
    identity(&state)?.revoke_token_id(&body.token_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
