//! How every identity, tenancy and authorization error of the admin routes becomes an HTTP
//! answer: bad input 400, missing in the caller's tenant 404, duplicates and lost version
//! races 409, refusals 403, the rest 5xx with the details only in the log.

use axum::http::StatusCode;
use pangolin_catalog::authz::{
    AuthzStoreError, BindError, CreateRoleError, DeleteRoleError, GrantRefusal, UnbindError,
    UpdateRoleError,
};
use pangolin_catalog::tenancy::{
    CreateCatalogError, CreateTenantError, CreateWarehouseError, DeleteCatalogError,
    DeleteTenantError, DeleteWarehouseError, GetCatalogError, GetTenantError, GetWarehouseError,
    ListError, RecordsError, UpdateTenantError, UpdateWarehouseError, VerifyError,
};
use pangolin_delegation::gcs::TokenError;
use pangolin_delegation::s3::VendError;
use pangolin_identity::{
    ChangePasswordError, CreateApiKeyError, CreateServiceUserError, CreateUserError,
    RevokeApiKeyError, RevokeTokenError, StoreError, UpdateExternalError, UpdateServiceUserError,
    UpdateUserError,
};

use crate::error::ApiError;
use crate::security::forbidden;

fn exists(message: String) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "AlreadyExistsException", message)
}

fn conflict(message: String) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "ConflictException", message)
}

fn missing(kind: &'static str, message: String) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, kind, message)
}

fn contended(message: String) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailableException",
        message,
    )
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Backend(e) => e.into(),
            StoreError::Contended { .. } => contended(error.to_string()),
            StoreError::Corrupt { .. } | StoreError::Encode { .. } | StoreError::Key(_) => {
                Self::internal(&error)
            }
        }
    }
}

impl From<RecordsError> for ApiError {
    fn from(error: RecordsError) -> Self {
        match error {
            RecordsError::Backend(e) => e.into(),
            RecordsError::Contended { .. } => contended(error.to_string()),
            RecordsError::Corrupt { .. } | RecordsError::Encode { .. } => Self::internal(&error),
        }
    }
}

impl From<AuthzStoreError> for ApiError {
    fn from(error: AuthzStoreError) -> Self {
        match error {
            AuthzStoreError::Backend(e) => e.into(),
            AuthzStoreError::Key(_)
            | AuthzStoreError::Corrupt { .. }
            | AuthzStoreError::Encode { .. } => Self::internal(&error),
        }
    }
}

impl From<GrantRefusal> for ApiError {
    fn from(refusal: GrantRefusal) -> Self {
        match refusal {
            GrantRefusal::BadPrincipal(e) => Self::bad_request(e.to_string()),
            GrantRefusal::RootScopeNotAdmin { .. }
            | GrantRefusal::OtherTenant { .. }
            | GrantRefusal::NoManageGrants { .. }
            | GrantRefusal::NotHeld { .. }
            | GrantRefusal::PrincipalOutsideTenant { .. } => forbidden(refusal.to_string()),
        }
    }
}

// Users, service users, keys and tokens.

impl From<CreateUserError> for ApiError {
    fn from(error: CreateUserError) -> Self {
        match error {
            CreateUserError::Policy(e) => Self::bad_request(e.to_string()),
            CreateUserError::AlreadyExists(_) => exists(error.to_string()),
            CreateUserError::Hash(e) => Self::internal(&e),
            CreateUserError::Store(e) => e.into(),
        }
    }
}

impl From<UpdateExternalError> for ApiError {
    fn from(error: UpdateExternalError) -> Self {
        match error {
            UpdateExternalError::BadId(_) => Self::bad_request(error.to_string()),
            UpdateExternalError::NotFound(_) => {
                missing("NoSuchPrincipalException", error.to_string())
            }
            UpdateExternalError::Store(e) => e.into(),
        }
    }
}

impl From<UpdateUserError> for ApiError {
    fn from(error: UpdateUserError) -> Self {
        match error {
            UpdateUserError::NotFound(_) => missing("NoSuchUserException", error.to_string()),
            UpdateUserError::Store(e) => e.into(),
        }
    }
}

impl From<ChangePasswordError> for ApiError {
    fn from(error: ChangePasswordError) -> Self {
        match error {
            // Only a caller changing its own password meets this: it is signed in, so the
            // answer is a refusal, not a request to sign in again.
            ChangePasswordError::InvalidCredentials => {
                forbidden("the current password is wrong".to_owned())
            }
            ChangePasswordError::NotFound(_) => missing("NoSuchUserException", error.to_string()),
            ChangePasswordError::Policy(e) => Self::bad_request(e.to_string()),
            ChangePasswordError::Hash(e) => Self::internal(&e),
            ChangePasswordError::Store(e) => e.into(),
        }
    }
}

impl From<CreateServiceUserError> for ApiError {
    fn from(error: CreateServiceUserError) -> Self {
        match error {
            CreateServiceUserError::AlreadyExists(_) => exists(error.to_string()),
            CreateServiceUserError::Store(e) => e.into(),
        }
    }
}

impl From<UpdateServiceUserError> for ApiError {
    fn from(error: UpdateServiceUserError) -> Self {
        match error {
            UpdateServiceUserError::NotFound(_) => {
                missing("NoSuchServiceUserException", error.to_string())
            }
            UpdateServiceUserError::Store(e) => e.into(),
        }
    }
}

impl From<CreateApiKeyError> for ApiError {
    fn from(error: CreateApiKeyError) -> Self {
        match error {
            CreateApiKeyError::ServiceUserNotFound(_) => {
                missing("NoSuchServiceUserException", error.to_string())
            }
            CreateApiKeyError::KeyNotFound(_) => {
                missing("NoSuchApiKeyException", error.to_string())
            }
            CreateApiKeyError::IdsExhausted => contended(error.to_string()),
            CreateApiKeyError::Random(e) => Self::internal(&e),
            CreateApiKeyError::Hash(e) => Self::internal(&e),
            CreateApiKeyError::Store(e) => e.into(),
        }
    }
}

impl From<RevokeApiKeyError> for ApiError {
    fn from(error: RevokeApiKeyError) -> Self {
        match error {
            RevokeApiKeyError::NotFound(_) => missing("NoSuchApiKeyException", error.to_string()),
            RevokeApiKeyError::Store(e) => e.into(),
        }
    }
}

impl From<RevokeTokenError> for ApiError {
    fn from(error: RevokeTokenError) -> Self {
        match error {
            RevokeTokenError::InvalidId(_) => Self::bad_request(error.to_string()),
            RevokeTokenError::Store(e) => e.into(),
        }
    }
}

// Tenants, warehouses and catalogs.

impl From<CreateTenantError> for ApiError {
    fn from(error: CreateTenantError) -> Self {
        match error {
            CreateTenantError::InvalidName(e) => Self::bad_request(e.to_string()),
            CreateTenantError::Exists(_) => exists(error.to_string()),
            CreateTenantError::Records(e) => e.into(),
        }
    }
}

impl From<GetTenantError> for ApiError {
    fn from(error: GetTenantError) -> Self {
        match error {
            GetTenantError::InvalidName(e) => Self::bad_request(e.to_string()),
            GetTenantError::NotFound(_) => missing("NoSuchTenantException", error.to_string()),
            GetTenantError::Records(e) => e.into(),
        }
    }
}

impl From<ListError> for ApiError {
    fn from(error: ListError) -> Self {
        match error {
            ListError::InvalidName(e) => Self::bad_request(format!("invalid page token: {e}")),
            ListError::Records(e) => e.into(),
        }
    }
}

impl From<UpdateTenantError> for ApiError {
    fn from(error: UpdateTenantError) -> Self {
        match error {
            UpdateTenantError::InvalidName(e) => Self::bad_request(e.to_string()),
            UpdateTenantError::NotFound(_) => missing("NoSuchTenantException", error.to_string()),
            UpdateTenantError::Conflict { .. } => conflict(error.to_string()),
            UpdateTenantError::Records(e) => e.into(),
        }
    }
}

impl From<DeleteTenantError> for ApiError {
    fn from(error: DeleteTenantError) -> Self {
        match error {
            DeleteTenantError::InvalidName(e) => Self::bad_request(e.to_string()),
            DeleteTenantError::NotFound(_) => missing("NoSuchTenantException", error.to_string()),
            DeleteTenantError::HasCatalogs(_)
            | DeleteTenantError::HasWarehouses(_)
            | DeleteTenantError::Conflict(_) => conflict(error.to_string()),
            DeleteTenantError::Records(e) => e.into(),
        }
    }
}

/// Settings that were tried and failed: 400 when the token service refused them (the
/// settings are wrong), 503 when it could not be reached or answered nonsense.
fn unverified(source: &VerifyError, message: String) -> ApiError {
    match source {
        VerifyError::Sts(VendError::Unreachable { .. } | VendError::Malformed { .. })
        | VerifyError::Downscope(TokenError::Unreachable { .. } | TokenError::Malformed { .. }) => {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailableException",
                message,
            )
        }
        VerifyError::Invalid(_)
        | VerifyError::Sts(VendError::Refused { .. })
        | VerifyError::Downscope(TokenError::Refused { .. }) => ApiError::bad_request(message),
    }
}

impl From<CreateWarehouseError> for ApiError {
    fn from(error: CreateWarehouseError) -> Self {
        match error {
            CreateWarehouseError::InvalidName(e) => Self::bad_request(e.to_string()),
            CreateWarehouseError::Invalid { .. } => Self::bad_request(error.to_string()),
            // The caller acts in a tenant that was deleted under it.
            CreateWarehouseError::TenantNotFound(_) => {
                missing("NoSuchTenantException", error.to_string())
            }
            CreateWarehouseError::Exists { .. } => exists(error.to_string()),
            CreateWarehouseError::Unverified { ref source, .. } => {
                unverified(source, error.to_string())
            }
            CreateWarehouseError::Seal(e) => Self::internal(&e),
            CreateWarehouseError::Records(e) => e.into(),
        }
    }
}

impl From<GetWarehouseError> for ApiError {
    fn from(error: GetWarehouseError) -> Self {
        match error {
            GetWarehouseError::InvalidName(e) => Self::bad_request(e.to_string()),
            GetWarehouseError::NotFound { .. } => {
                missing("NoSuchWarehouseException", error.to_string())
            }
            GetWarehouseError::Records(e) => e.into(),
        }
    }
}

impl From<UpdateWarehouseError> for ApiError {
    fn from(error: UpdateWarehouseError) -> Self {
        match error {
            UpdateWarehouseError::InvalidName(e) => Self::bad_request(e.to_string()),
            UpdateWarehouseError::Invalid { .. } => Self::bad_request(error.to_string()),
            UpdateWarehouseError::NotFound { .. } => {
                missing("NoSuchWarehouseException", error.to_string())
            }
            UpdateWarehouseError::Conflict { .. } => conflict(error.to_string()),
            UpdateWarehouseError::Unverified { ref source, .. } => {
                unverified(source, error.to_string())
            }
            UpdateWarehouseError::Seal(e) => Self::internal(&e),
            UpdateWarehouseError::Records(e) => e.into(),
        }
    }
}

impl From<DeleteWarehouseError> for ApiError {
    fn from(error: DeleteWarehouseError) -> Self {
        match error {
            DeleteWarehouseError::InvalidName(e) => Self::bad_request(e.to_string()),
            DeleteWarehouseError::NotFound { .. } => {
                missing("NoSuchWarehouseException", error.to_string())
            }
            DeleteWarehouseError::Bound { .. } | DeleteWarehouseError::Conflict(_) => {
                conflict(error.to_string())
            }
            DeleteWarehouseError::Records(e) => e.into(),
        }
    }
}

impl From<CreateCatalogError> for ApiError {
    fn from(error: CreateCatalogError) -> Self {
        match error {
            CreateCatalogError::InvalidName(e) => Self::bad_request(e.to_string()),
            CreateCatalogError::Unsupported(_) | CreateCatalogError::Warehouse { .. } => {
                Self::bad_request(error.to_string())
            }
            CreateCatalogError::TenantNotFound(_) => {
                missing("NoSuchTenantException", error.to_string())
            }
            CreateCatalogError::WarehouseNotFound { .. } => {
                missing("NoSuchWarehouseException", error.to_string())
            }
            CreateCatalogError::Exists { .. } | CreateCatalogError::RepositoryExists { .. } => {
                exists(error.to_string())
            }
            CreateCatalogError::Repository { .. } => Self::internal(&error),
            CreateCatalogError::Records(e) => e.into(),
        }
    }
}

impl From<GetCatalogError> for ApiError {
    fn from(error: GetCatalogError) -> Self {
        match error {
            GetCatalogError::InvalidName(e) => Self::bad_request(e.to_string()),
            GetCatalogError::NotFound { .. } => {
                missing("NoSuchCatalogException", error.to_string())
            }
            GetCatalogError::Records(e) => e.into(),
        }
    }
}

impl From<DeleteCatalogError> for ApiError {
    fn from(error: DeleteCatalogError) -> Self {
        match error {
            DeleteCatalogError::InvalidName(e) => Self::bad_request(e.to_string()),
            DeleteCatalogError::NotFound { .. } => {
                missing("NoSuchCatalogException", error.to_string())
            }
            DeleteCatalogError::NotEmpty(_)
            | DeleteCatalogError::HasOtherRefs { .. }
            | DeleteCatalogError::Conflict(_) => conflict(error.to_string()),
            DeleteCatalogError::Read(e) => e.into(),
            DeleteCatalogError::Backend(e) => e.into(),
            DeleteCatalogError::Refs { .. } => Self::internal(&error),
            DeleteCatalogError::Records(e) => e.into(),
        }
    }
}

// Roles and bindings.

fn no_role(message: String) -> ApiError {
    missing("NoSuchRoleException", message)
}

impl From<CreateRoleError> for ApiError {
    fn from(error: CreateRoleError) -> Self {
        match error {
            CreateRoleError::Invalid(e) => Self::bad_request(e.to_string()),
            CreateRoleError::Refused(refusal) => refusal.into(),
            CreateRoleError::AlreadyExists { .. } => exists(error.to_string()),
            CreateRoleError::Store(e) => e.into(),
        }
    }
}

impl From<UpdateRoleError> for ApiError {
    fn from(error: UpdateRoleError) -> Self {
        match error {
            UpdateRoleError::Invalid(e) => Self::bad_request(e.to_string()),
            UpdateRoleError::Refused(refusal) => refusal.into(),
            UpdateRoleError::NotFound { .. } => no_role(error.to_string()),
            UpdateRoleError::Conflict { .. } => conflict(error.to_string()),
            UpdateRoleError::Store(e) => e.into(),
        }
    }
}

impl From<DeleteRoleError> for ApiError {
    fn from(error: DeleteRoleError) -> Self {
        match error {
            DeleteRoleError::Refused(refusal) => refusal.into(),
            DeleteRoleError::NotFound { .. } => no_role(error.to_string()),
            DeleteRoleError::Conflict { .. } => conflict(error.to_string()),
            DeleteRoleError::Store(e) => e.into(),
        }
    }
}

impl From<BindError> for ApiError {
    fn from(error: BindError) -> Self {
        match error {
            BindError::RoleNotFound { .. } => no_role(error.to_string()),
            BindError::Refused(refusal) => refusal.into(),
            BindError::Store(e) => e.into(),
        }
    }
}

impl From<UnbindError> for ApiError {
    fn from(error: UnbindError) -> Self {
        match error {
            UnbindError::NotBound { .. } => missing("NoSuchBindingException", error.to_string()),
            UnbindError::Refused(refusal) => refusal.into(),
            UnbindError::Store(e) => e.into(),
        }
    }
}
