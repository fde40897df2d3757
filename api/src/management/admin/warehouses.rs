//! The warehouses of the caller's tenant: where its catalogs keep their files, with
//! credentials that are sealed at rest and shown only as the names of the fields that are set.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::rfc3339;
use pangolin_catalog::tenancy::{
    Credentials, CredentialsView, StorageConfig, Versioned, WarehouseRecord, WarehouseSpec,
    WarehouseUpdate,
};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use super::{PageParams, caller, next_token};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::state::AppState;

/// `POST /api/v1/warehouses`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWarehouse {
    pub name: String,
    /// `{"type": "local", "root": "/data"}`, `{"type": "s3", "bucket": "b", "prefix",
    /// "region", "endpoint", "path-style", "hand-out-credentials", "sts": {"role-arn",
    /// "external-id", "endpoint", "region", "lifetime-seconds"}, "remote-signing"}`,
    /// `{"type": "azure", "account", "container", "prefix", "endpoint", "sas":
    /// {"lifetime-seconds"}}` or `{"type": "gcs", "bucket", "prefix", "endpoint",
    /// "downscope": {"token-exchange"}}` (see docs/storage.md).
    #[schema(value_type = Object)]
    pub storage: StorageConfig,
    /// `{"type": "s3", "access-key-id", "secret-access-key", "session-token"}`,
    /// `{"type": "azure", "account-key"}` or `{"type": "gcs", "service-account-key"}` (the
    /// JSON key file's text).
    #[schema(value_type = Option<Object>)]
    pub credentials: Option<Credentials>,
}

/// `PUT /api/v1/warehouses/{warehouse}`: the storage is replaced; credentials are kept when
/// absent, removed when `null`, replaced when given.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceWarehouse {
    #[schema(value_type = Object)]
    pub storage: StorageConfig,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Object>)]
    pub credentials: Option<Option<Credentials>>,
    /// The version read; the change is refused with 409 when the warehouse changed since.
    /// Without it, the change applies to whatever is stored.
    pub version: Option<u64>,
}

/// Tells a field that is `null` (`Some(None)`) from one that is absent (`None`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A warehouse as shown: never a credential value.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct WarehouseView {
    pub name: String,
    #[schema(value_type = Object)]
    pub storage: StorageConfig,
    /// The kind of credentials and which of their fields are set.
    #[schema(value_type = Option<Object>)]
    pub credentials: Option<CredentialsView>,
    pub created_at: String,
    pub updated_at: String,
    /// Send it back with a change to make sure nobody changed the warehouse meanwhile.
    pub version: u64,
}

impl WarehouseView {
    fn of(stored: &Versioned<WarehouseRecord>) -> Self {
        let view = stored.value.view();
        Self {
            name: view.name.to_string(),
            storage: view.storage,
            credentials: view.credentials,
            created_at: rfc3339(view.created_at),
            updated_at: rfc3339(view.updated_at),
            version: stored.version,
        }
    }
}

/// A page of warehouses.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct WarehouseList {
    pub warehouses: Vec<WarehouseView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// Creates a warehouse in the caller's tenant.
#[utoipa::path(post, path = "/api/v1/warehouses", tag = "warehouses",
    request_body = CreateWarehouse,
    responses((status = 201, body = WarehouseView), (status = 400), (status = 403),
        (status = 409)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateWarehouse>,
) -> Result<(StatusCode, Json<WarehouseView>), ApiError> {
    let tenant = caller()?.tenant;
    let spec = WarehouseSpec {
        storage: body.storage,
        credentials: body.credentials,
    };
    let created = state
        .catalogs
        .tenancy()
        .create_warehouse(&tenant, &body.name, spec)
        .await?;
    state.catalogs.forget_tenant(&tenant);
    Ok((StatusCode::CREATED, Json(WarehouseView::of(&created))))
}

/// Lists the caller's tenant's warehouses by name.
#[utoipa::path(get, path = "/api/v1/warehouses", tag = "warehouses", params(PageParams),
    responses((status = 200, body = WarehouseList), (status = 403)))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<WarehouseList>, ApiError> {
    let tenant = caller()?.tenant;
    let (after, limit) = params.resolve()?;
    let page = state
        .catalogs
        .tenancy()
        .list_warehouses(&tenant, after.as_deref(), limit)
        .await?;
    Ok(Json(WarehouseList {
        warehouses: page.items.iter().map(WarehouseView::of).collect(),
        next_page_token: next_token(page.next_after),
    }))
}

/// One warehouse of the caller's tenant.
#[utoipa::path(get, path = "/api/v1/warehouses/{warehouse}", tag = "warehouses",
    params(("warehouse" = String, Path)),
    responses((status = 200, body = WarehouseView), (status = 403), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<Json<WarehouseView>, ApiError> {
    let tenant = caller()?.tenant;
    let stored = state.catalogs.tenancy().warehouse(&tenant, &name).await?;
    Ok(Json(WarehouseView::of(&stored)))
}

/// Replaces a warehouse's storage and (when given) credentials.
#[utoipa::path(put, path = "/api/v1/warehouses/{warehouse}", tag = "warehouses",
    params(("warehouse" = String, Path)), request_body = ReplaceWarehouse,
    responses((status = 200, body = WarehouseView), (status = 400), (status = 403),
        (status = 404), (status = 409)))]
pub async fn replace(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
    JsonBody(body): JsonBody<ReplaceWarehouse>,
) -> Result<Json<WarehouseView>, ApiError> {
    let tenant = caller()?.tenant;
    let tenancy = state.catalogs.tenancy();
    let expected = match body.version {
        Some(version) => version,
        None => tenancy.warehouse(&tenant, &name).await?.version,
    };
    let update = WarehouseUpdate {
        storage: Some(body.storage),
        credentials: body.credentials,
    };
    let updated = tenancy
        .update_warehouse(&tenant, &name, expected, update)
        .await?;
    state.catalogs.forget_tenant(&tenant);
    Ok(Json(WarehouseView::of(&updated)))
}

/// Deletes a warehouse no catalog is bound to.
#[utoipa::path(delete, path = "/api/v1/warehouses/{warehouse}", tag = "warehouses",
    params(("warehouse" = String, Path)),
    responses((status = 204), (status = 403), (status = 404), (status = 409)))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    let tenant = caller()?.tenant;
    state
        .catalogs
        .tenancy()
        .delete_warehouse(&tenant, &name)
        .await?;
    state.catalogs.forget_tenant(&tenant);
    Ok(StatusCode::NO_CONTENT)
}
