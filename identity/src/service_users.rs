//! Service users: a tenant's programs, which sign in with API keys.

use pangolin_records::RecordKey;
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use crate::Identity;
use crate::docs::{Change, StoreError};
use crate::layout;
use crate::names::{PrincipalName, Scope, TenantName};
use crate::principal::{PrincipalId, PrincipalKind};

/// A service user's stored document.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct ServiceDoc {
    pub(crate) disabled: bool,
    pub(crate) created: Timestamp,
    /// Tokens issued before this are refused, so a service user deleted and created again
    /// does not inherit the old one's tokens.
    pub(crate) tokens_valid_after: Timestamp,
}

/// A service user as shown to callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceUser {
    /// The tenant it belongs to.
    pub tenant: TenantName,
    /// Its name, unique in the tenant.
    pub name: PrincipalName,
    /// A disabled service user's keys and tokens are refused.
    pub disabled: bool,
    /// When it was created.
    pub created: Timestamp,
}

impl ServiceUser {
    fn from_doc(tenant: TenantName, name: PrincipalName, doc: &ServiceDoc) -> Self {
        Self {
            tenant,
            name,
            disabled: doc.disabled,
            created: doc.created,
        }
    }
}

/// One page of service users in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceUserPage {
    /// The service users on this page.
    pub service_users: Vec<ServiceUser>,
    /// Set when more follow: list again with `after` set to it.
    pub next_after: Option<PrincipalName>,
}

pub(crate) fn service_id(tenant: &TenantName, name: &PrincipalName) -> PrincipalId {
    PrincipalId {
        kind: PrincipalKind::Service,
        scope: Scope::Tenant(tenant.clone()),
        name: name.clone(),
    }
}

/// Creating a service user failed.
#[derive(Debug, thiserror::Error)]
pub enum CreateServiceUserError {
    /// The tenant already has a service user of that name.
    #[error("{0} already exists")]
    AlreadyExists(PrincipalId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Changing a service user (disable, enable, delete) failed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateServiceUserError {
    /// No such service user.
    #[error("{0} does not exist")]
    NotFound(PrincipalId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Identity {
    /// Creates service user `name` in `tenant`.
    pub async fn create_service_user(
        &self,
        tenant: &TenantName,
        name: &PrincipalName,
    ) -> Result<ServiceUser, CreateServiceUserError> {
        let now = self.now();
        let doc = ServiceDoc {
            disabled: false,
            created: now,
            tokens_valid_after: now,
        };
        if !self
            .docs()
            .create(&layout::service(tenant, name)?, &doc)
            .await?
        {
            return Err(CreateServiceUserError::AlreadyExists(service_id(
                tenant, name,
            )));
        }
        Ok(ServiceUser::from_doc(tenant.clone(), name.clone(), &doc))
    }

    /// The service user, or `None`.
    pub async fn service_user(
        &self,
        tenant: &TenantName,
        name: &PrincipalName,
    ) -> Result<Option<ServiceUser>, StoreError> {
        let doc = self.service_doc(tenant, name).await?;
        Ok(doc.map(|doc| ServiceUser::from_doc(tenant.clone(), name.clone(), &doc)))
    }

    pub(crate) async fn service_doc(
        &self,
        tenant: &TenantName,
        name: &PrincipalName,
    ) -> Result<Option<ServiceDoc>, StoreError> {
        let doc = self.docs().get(&layout::service(tenant, name)?).await?;
        Ok(doc.map(|d| d.value))
    }

    /// Up to `limit` service users of `tenant` in name order, after `after`.
    pub async fn list_service_users(
        &self,
        tenant: &TenantName,
        after: Option<&PrincipalName>,
        limit: usize,
    ) -> Result<ServiceUserPage, StoreError> {
        let after = after.map(|a| layout::service(tenant, a)).transpose()?;
        let prefix = layout::services(tenant);
        let (docs, next) = self
            .docs()
            .list::<ServiceDoc>(&prefix, after.as_ref(), limit)
            .await?;
        let mut service_users = Vec::with_capacity(docs.len());
        for (key, doc) in &docs {
            let name = name_under(&prefix, key)?;
            service_users.push(ServiceUser::from_doc(tenant.clone(), name, &doc.value));
        }
        let next_after = next.as_ref().map(|k| name_under(&prefix, k)).transpose()?;
        Ok(ServiceUserPage {
            service_users,
            next_after,
        })
    }

    /// Deletes the service user and all its API keys.
    pub async fn delete_service_user(
        &self,
        tenant: &TenantName,
        name: &PrincipalName,
    ) -> Result<(), UpdateServiceUserError> {
        // The service user goes first: with it gone, its keys and tokens are refused even if
        // deleting a key below fails.
        if !self.docs().delete(&layout::service(tenant, name)?).await? {
            return Err(UpdateServiceUserError::NotFound(service_id(tenant, name)));
        }
        self.delete_keys_of(tenant, name).await?;
        Ok(())
    }

    /// Disables (`true`) or enables (`false`) the service user. In this process its cached
    /// key verifications are dropped at once; other servers refuse its keys within the cache
    /// lifetime (tokens everywhere at once).
    pub async fn set_service_user_disabled(
        &self,
        tenant: &TenantName,
        name: &PrincipalName,
        disabled: bool,
    ) -> Result<ServiceUser, UpdateServiceUserError> {
        let updated = self
            .docs()
            .update(&layout::service(tenant, name)?, |mut doc: ServiceDoc| {
                doc.disabled = disabled;
                Change::<_, ()>::Write(doc)
            })
            .await?;
        self.inner.cache.forget_owner(tenant, name);
        match updated {
            Some(Ok(doc)) => Ok(ServiceUser::from_doc(tenant.clone(), name.clone(), &doc)),
            _ => Err(UpdateServiceUserError::NotFound(service_id(tenant, name))),
        }
    }
}

/// The name a key under `prefix` ends with.
pub(crate) fn name_under(prefix: &str, key: &RecordKey) -> Result<PrincipalName, StoreError> {
    let name = key.as_str().strip_prefix(prefix).unwrap_or_default();
    PrincipalName::new(name).map_err(|e| StoreError::Corrupt {
        key: key.to_string(),
        source: serde::de::Error::custom(e),
    })
}
