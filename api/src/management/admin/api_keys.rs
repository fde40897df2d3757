//! API keys of the caller's tenant's service users. A key's secret is in the answer to its
//! creation or rotation and nowhere else: listings show everything but the secret.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::rfc3339;
use pangolin_identity::{ApiKeyInfo, CreatedApiKey, KeyId, TenantName};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{acting_tenant, caller, identity, not_found, optional_body};
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::state::AppState;

/// Longest lifetime or grace period a request may ask for: ten years.
const MAX_SECONDS: u64 = 10 * 366 * 24 * 60 * 60;

/// `POST /api/v1/service-users/{name}/keys`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CreateKey {
    /// The key expires this many seconds from now; never when absent.
    pub expires_in_seconds: Option<u64>,
}

/// `POST /api/v1/service-users/{name}/keys/{key}/rotate`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RotateKey {
    /// The old key keeps working this many seconds, so its clients can switch; it stops at
    /// once when absent.
    pub grace_seconds: Option<u64>,
    /// The new key expires this many seconds from now; never when absent.
    pub expires_in_seconds: Option<u64>,
}

/// An API key, without its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct KeyView {
    /// The key id (also the OAuth2 `client_id`).
    pub id: String,
    pub service_user: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub last_used_at: Option<String>,
}

impl KeyView {
    fn of(info: &ApiKeyInfo) -> Self {
        Self {
            id: info.id.to_string(),
            service_user: info.service.to_string(),
            created_at: rfc3339(info.created),
            expires_at: info.expires.map(rfc3339),
            revoked_at: info.revoked_at.map(rfc3339),
            last_used_at: info.last_used.map(rfc3339),
        }
    }
}

/// A new key: shown once, here only.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct NewKeyView {
    /// The whole key, `pgl_<id>_<secret>`: send it as `Authorization: Bearer <key>`. It
    /// cannot be shown again.
    pub key: String,
    /// The key id and the secret, for the OAuth2 client-credentials flow
    /// (`credential=<client-id>:<client-secret>`).
    pub client_id: String,
    pub client_secret: String,
    #[serde(flatten)]
    pub info: KeyView,
}

impl std::fmt::Debug for NewKeyView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewKeyView")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl NewKeyView {
    fn of(created: &CreatedApiKey) -> Self {
        Self {
            key: created.key.expose(),
            client_id: created.key.id().to_string(),
            client_secret: created.key.secret().to_owned(),
            info: KeyView::of(&created.info),
        }
    }
}

/// The keys of one service user.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyList {
    pub keys: Vec<KeyView>,
}

fn seconds(field: &str, value: Option<u64>) -> Result<Option<Duration>, ApiError> {
    match value {
        None => Ok(None),
        Some(0) => Err(ApiError::bad_request(format!(
            "`{field}` must be at least 1"
        ))),
        Some(s) if s > MAX_SECONDS => Err(ApiError::bad_request(format!(
            "`{field}` may be at most {MAX_SECONDS} (ten years)"
        ))),
        Some(s) => Ok(Some(Duration::from_secs(s))),
    }
}

fn expiry(value: Option<u64>) -> Result<Option<Timestamp>, ApiError> {
    Ok(seconds("expires-in-seconds", value)?.map(|d| {
        let millis = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Timestamp::from_millis(Timestamp::now().as_millis().saturating_add(millis))
    }))
}

/// The key `key` of service user `service` of `tenant`, or 404 (also for a key of another
/// service user or tenant).
async fn existing_key(
    state: &AppState,
    tenant: &TenantName,
    service: &str,
    key: &str,
) -> Result<KeyId, ApiError> {
    let missing = || {
        not_found(
            "NoSuchApiKeyException",
            format!("service user `{service}` has no API key `{key}`"),
        )
    };
    let id = KeyId::new(key).map_err(|_| missing())?;
    match identity(state)?.api_key(tenant, &id).await? {
        Some(info) if info.service.as_str() == service => Ok(id),
        _ => Err(missing()),
    }
}

/// Creates an API key for a service user; the answer holds the secret, once.
#[utoipa::path(post, path = "/api/v1/service-users/{name}/keys", tag = "service-users",
    params(("name" = String, Path)), request_body = CreateKey,
    responses((status = 201, body = NewKeyView), (status = 400), (status = 403),
        (status = 404)))]
pub async fn create(
    State(state): State<AppState>,
    PathParams(service): PathParams<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<NewKeyView>), ApiError> {
    let body: CreateKey = optional_body(&body)?;
    let tenant = acting_tenant(&caller()?)?;
    let expires = expiry(body.expires_in_seconds)?;
    let service = super::service_users::existing(&state, &tenant, &service)
        .await?
        .name;
    let created = identity(&state)?
        .create_api_key(&tenant, &service, expires)
        .await?;
    Ok((StatusCode::CREATED, Json(NewKeyView::of(&created))))
}

/// Lists a service user's keys, without secrets.
#[utoipa::path(get, path = "/api/v1/service-users/{name}/keys", tag = "service-users",
    params(("name" = String, Path)),
    responses((status = 200, body = KeyList), (status = 403), (status = 404)))]
pub async fn list(
    State(state): State<AppState>,
    PathParams(service): PathParams<String>,
) -> Result<Json<KeyList>, ApiError> {
    let tenant = acting_tenant(&caller()?)?;
    let service = super::service_users::existing(&state, &tenant, &service)
        .await?
        .name;
    let keys = identity(&state)?.list_api_keys(&tenant, &service).await?;
    Ok(Json(KeyList {
        keys: keys.iter().map(KeyView::of).collect(),
    }))
}

/// Revokes a key now.
#[utoipa::path(delete, path = "/api/v1/service-users/{name}/keys/{key}", tag = "service-users",
    params(("name" = String, Path), ("key" = String, Path)),
    responses((status = 200, body = KeyView), (status = 403), (status = 404)))]
pub async fn revoke(
    State(state): State<AppState>,
    PathParams((service, key)): PathParams<(String, String)>,
) -> Result<Json<KeyView>, ApiError> {
    let tenant = acting_tenant(&caller()?)?;
    let id = existing_key(&state, &tenant, &service, &key).await?;
    let info = identity(&state)?.revoke_api_key(&tenant, &id).await?;
    Ok(Json(KeyView::of(&info)))
}

/// Replaces a key with a new one; the old one stops now or after the grace period.
#[utoipa::path(post, path = "/api/v1/service-users/{name}/keys/{key}/rotate",
    tag = "service-users", params(("name" = String, Path), ("key" = String, Path)),
    request_body = RotateKey,
    responses((status = 201, body = NewKeyView), (status = 400), (status = 403),
        (status = 404)))]
pub async fn rotate(
    State(state): State<AppState>,
    PathParams((service, key)): PathParams<(String, String)>,
    body: Bytes,
) -> Result<(StatusCode, Json<NewKeyView>), ApiError> {
    let body: RotateKey = optional_body(&body)?;
    let tenant = acting_tenant(&caller()?)?;
    let grace = seconds("grace-seconds", body.grace_seconds)?;
    let expires = expiry(body.expires_in_seconds)?;
    let id = existing_key(&state, &tenant, &service, &key).await?;
    // Two writes (the new key, then the old one's end): made to the end even if the caller
    // goes away between them.
    let identity = identity(&state)?.clone();
    let created =
        tokio::spawn(async move { identity.rotate_api_key(&tenant, &id, grace, expires).await })
            .await
            .map_err(|e| ApiError::internal(&e))??;
    Ok((StatusCode::CREATED, Json(NewKeyView::of(&created))))
}
