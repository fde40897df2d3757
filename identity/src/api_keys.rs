//! API keys of service users: created (the plaintext shown once), listed without secrets,
//! revoked, rotated with an optional grace period, and verified with one bcrypt check (or a
//! recent cached one).

use std::time::Duration;

use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use crate::Identity;
use crate::api_key::{ApiKey, KeyId};
use crate::clock::{millis, plus};
use crate::docs::{Change, StoreError};
use crate::key_cache::{CachedKey, digest};
use crate::layout;
use crate::names::{PrincipalName, TenantName};
use crate::password::{HashError, PasswordHash};
use crate::principal::{Principal, PrincipalId};
use crate::random::RandomError;
use crate::service_users::service_id;

/// How often creation draws a new key id when the drawn one is taken.
const ID_ATTEMPTS: usize = 4;
/// Page size when walking a service user's keys.
const KEY_PAGE: usize = 100;

/// An API key's stored document.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct KeyDoc {
    pub(crate) tenant: TenantName,
    pub(crate) service: PrincipalName,
    pub(crate) secret_hash: PasswordHash,
    pub(crate) created: Timestamp,
    pub(crate) expires: Option<Timestamp>,
    /// Refused from this time on (in the future during a rotation's grace period).
    pub(crate) revoked_at: Option<Timestamp>,
    pub(crate) last_used: Option<Timestamp>,
}

/// An API key as listed: everything but the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyInfo {
    /// The key id (the OAuth2 `client_id`).
    pub id: KeyId,
    /// The owner's tenant.
    pub tenant: TenantName,
    /// The owning service user.
    pub service: PrincipalName,
    /// When the key was created.
    pub created: Timestamp,
    /// When the key expires, if ever.
    pub expires: Option<Timestamp>,
    /// When the key is (or was) revoked.
    pub revoked_at: Option<Timestamp>,
    /// When the key was last used, to within the configured interval.
    pub last_used: Option<Timestamp>,
}

impl ApiKeyInfo {
    fn from_doc(id: KeyId, doc: &KeyDoc) -> Self {
        Self {
            id,
            tenant: doc.tenant.clone(),
            service: doc.service.clone(),
            created: doc.created,
            expires: doc.expires,
            revoked_at: doc.revoked_at,
            last_used: doc.last_used,
        }
    }
}

/// A new key: the plaintext, returned only here, and its listing.
#[derive(Debug, Clone)]
pub struct CreatedApiKey {
    /// The whole key; hand it to the owner once. Its `Debug` hides the secret.
    pub key: ApiKey,
    /// What listings will show of it.
    pub info: ApiKeyInfo,
}

/// Creating or rotating a key failed.
#[derive(Debug, thiserror::Error)]
pub enum CreateApiKeyError {
    /// The service user does not exist.
    #[error("{0} does not exist")]
    ServiceUserNotFound(PrincipalId),
    /// The key to rotate does not exist in this tenant.
    #[error("API key {0} does not exist")]
    KeyNotFound(KeyId),
    /// No random bytes for the key.
    #[error(transparent)]
    Random(#[from] RandomError),
    /// Every drawn key id was taken (practically impossible with 64 random bits).
    #[error("could not draw an unused key id")]
    IdsExhausted,
    /// bcrypt failed.
    #[error(transparent)]
    Hash(#[from] HashError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Revoking a key failed.
#[derive(Debug, thiserror::Error)]
pub enum RevokeApiKeyError {
    /// No key of that id in this tenant.
    #[error("API key {0} does not exist")]
    NotFound(KeyId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A key was refused.
#[derive(Debug, thiserror::Error)]
pub enum ApiKeyAuthError {
    /// Unknown key id or wrong secret (one answer for both).
    #[error("invalid credentials")]
    InvalidCredentials,
    /// The key expired (only said to a caller who knows the secret).
    #[error("API key {0} has expired")]
    Expired(KeyId),
    /// The key was revoked (only said to a caller who knows the secret).
    #[error("API key {0} has been revoked")]
    Revoked(KeyId),
    /// The owning service user is disabled or deleted.
    #[error("the service user of API key {0} is disabled or deleted")]
    Disabled(KeyId),
    /// bcrypt failed.
    #[error(transparent)]
    Hash(#[from] HashError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether a key is usable at `now` by its expiry and revocation.
pub(crate) fn key_status(
    id: &KeyId,
    expires: Option<Timestamp>,
    revoked_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<(), ApiKeyAuthError> {
    if revoked_at.is_some_and(|at| at <= now) {
        return Err(ApiKeyAuthError::Revoked(id.clone()));
    }
    if expires.is_some_and(|at| at <= now) {
        return Err(ApiKeyAuthError::Expired(id.clone()));
    }
    Ok(())
}

impl Identity {
    /// Creates a key for service user `service` of `tenant`, optionally expiring at `expires`.
    pub async fn create_api_key(
        &self,
        tenant: &TenantName,
        service: &PrincipalName,
        expires: Option<Timestamp>,
    ) -> Result<CreatedApiKey, CreateApiKeyError> {
        if self.service_doc(tenant, service).await?.is_none() {
            return Err(CreateApiKeyError::ServiceUserNotFound(service_id(
                tenant, service,
            )));
        }
        for _ in 0..ID_ATTEMPTS {
            let key = ApiKey::generate()?;
            let doc = KeyDoc {
                tenant: tenant.clone(),
                service: service.clone(),
                secret_hash: self.inner.hasher.hash(key.secret()).await?,
                created: self.now(),
                expires,
                revoked_at: None,
                last_used: None,
            };
            if !self
                .docs()
                .create(&layout::api_key(key.id())?, &doc)
                .await?
            {
                continue;
            }
            // The index entry that lists the key under its owner. Should this write fail,
            // the key still works and can be revoked by id; it only does not show in listings.
            let marker = layout::service_key(tenant, service, key.id())?;
            self.docs().create(&marker, &serde_json::json!({})).await?;
            let info = ApiKeyInfo::from_doc(key.id().clone(), &doc);
            return Ok(CreatedApiKey { key, info });
        }
        Err(CreateApiKeyError::IdsExhausted)
    }

    /// The key's listing, if it exists in `tenant`.
    pub async fn api_key(
        &self,
        tenant: &TenantName,
        id: &KeyId,
    ) -> Result<Option<ApiKeyInfo>, StoreError> {
        let doc = self.docs().get::<KeyDoc>(&layout::api_key(id)?).await?;
        Ok(doc
            .filter(|d| &d.value.tenant == tenant)
            .map(|d| ApiKeyInfo::from_doc(id.clone(), &d.value)))
    }

    /// The keys of a service user, by key id, without secrets.
    pub async fn list_api_keys(
        &self,
        tenant: &TenantName,
        service: &PrincipalName,
    ) -> Result<Vec<ApiKeyInfo>, StoreError> {
        let mut keys = Vec::new();
        for id in self.key_ids_of(tenant, service).await? {
            if let Some(info) = self.api_key(tenant, &id).await? {
                keys.push(info);
            }
        }
        Ok(keys)
    }

    async fn key_ids_of(
        &self,
        tenant: &TenantName,
        service: &PrincipalName,
    ) -> Result<Vec<KeyId>, StoreError> {
        let prefix = layout::service_keys(tenant, service);
        let mut ids = Vec::new();
        let mut after = None;
        loop {
            let (page, next) = self
                .docs()
                .list::<serde_json::Value>(&prefix, after.as_ref(), KEY_PAGE)
                .await?;
            for (key, _) in page {
                let id = key.as_str().strip_prefix(&prefix).unwrap_or_default();
                ids.push(KeyId::new(id).map_err(|e| StoreError::Corrupt {
                    key: key.to_string(),
                    source: serde::de::Error::custom(e),
                })?);
            }
            match next {
                Some(next) => after = Some(next),
                None => return Ok(ids),
            }
        }
    }

    /// Deletes every key of a service user (with the user itself).
    pub(crate) async fn delete_keys_of(
        &self,
        tenant: &TenantName,
        service: &PrincipalName,
    ) -> Result<(), StoreError> {
        for id in self.key_ids_of(tenant, service).await? {
            self.docs().delete(&layout::api_key(&id)?).await?;
            self.docs()
                .delete(&layout::service_key(tenant, service, &id)?)
                .await?;
            self.inner.cache.forget(&id);
        }
        self.inner.cache.forget_owner(tenant, service);
        Ok(())
    }

    /// Revokes the key now. This process refuses it at once; other servers within the API key
    /// cache lifetime.
    pub async fn revoke_api_key(
        &self,
        tenant: &TenantName,
        id: &KeyId,
    ) -> Result<ApiKeyInfo, RevokeApiKeyError> {
        self.revoke_key_at(tenant, id, self.now()).await
    }

    async fn revoke_key_at(
        &self,
        tenant: &TenantName,
        id: &KeyId,
        at: Timestamp,
    ) -> Result<ApiKeyInfo, RevokeApiKeyError> {
        let updated = self
            .docs()
            .update(&layout::api_key(id)?, |mut doc: KeyDoc| {
                if &doc.tenant != tenant {
                    return Change::Fail(());
                }
                if doc.revoked_at.is_some_and(|earlier| earlier <= at) {
                    return Change::Keep(doc);
                }
                doc.revoked_at = Some(at);
                Change::Write(doc)
            })
            .await?;
        self.inner.cache.forget(id);
        match updated {
            Some(Ok(doc)) => Ok(ApiKeyInfo::from_doc(id.clone(), &doc)),
            _ => Err(RevokeApiKeyError::NotFound(id.clone())),
        }
    }

    /// Replaces a key with a new one for the same service user, expiring at `expires`. The old
    /// key is revoked now, or after `grace` so its clients can switch over.
    pub async fn rotate_api_key(
        &self,
        tenant: &TenantName,
        id: &KeyId,
        grace: Option<Duration>,
        expires: Option<Timestamp>,
    ) -> Result<CreatedApiKey, CreateApiKeyError> {
        let old = self
            .api_key(tenant, id)
            .await?
            .ok_or_else(|| CreateApiKeyError::KeyNotFound(id.clone()))?;
        let created = self.create_api_key(tenant, &old.service, expires).await?;
        let at = plus(self.now(), grace.unwrap_or_default());
        self.revoke_key_at(tenant, id, at)
            .await
            .map_err(|e| match e {
                RevokeApiKeyError::NotFound(id) => CreateApiKeyError::KeyNotFound(id),
                RevokeApiKeyError::Store(e) => CreateApiKeyError::Store(e),
            })?;
        Ok(created)
    }

    /// The service principal a key belongs to, if the key is valid now.
    pub async fn authenticate_api_key(&self, key: &ApiKey) -> Result<Principal, ApiKeyAuthError> {
        let now = self.now();
        let id = key.id();
        if let Some(mut hit) = self.inner.cache.lookup(id, key.secret(), now) {
            // The secret verified recently; what the record says may have changed since
            // (another server revoked the key or disabled its owner): read it again, without
            // bcrypt, once it is older than the record TTL.
            if plus(hit.read_at, self.inner.config.api_key_record_ttl) <= now {
                let Some(doc) = self.docs().get::<KeyDoc>(&layout::api_key(id)?).await? else {
                    self.inner.cache.forget(id);
                    return Err(ApiKeyAuthError::InvalidCredentials);
                };
                let doc = doc.value;
                let owner = self.service_doc(&doc.tenant, &doc.service).await?;
                if owner.is_none_or(|o| o.disabled) {
                    self.inner.cache.forget(id);
                    return Err(ApiKeyAuthError::Disabled(id.clone()));
                }
                self.inner
                    .cache
                    .refresh(id, doc.expires, doc.revoked_at, now);
                (hit.expires, hit.revoked_at) = (doc.expires, doc.revoked_at);
            }
            key_status(id, hit.expires, hit.revoked_at, now)?;
            self.touch(id, hit.last_used, now).await?;
            return Ok(service_principal(&hit.tenant, &hit.service, id));
        }
        let Some(doc) = self.docs().get::<KeyDoc>(&layout::api_key(id)?).await? else {
            self.burn_verification(key.secret()).await?;
            return Err(ApiKeyAuthError::InvalidCredentials);
        };
        let doc = doc.value;
        if !self
            .inner
            .hasher
            .verify(key.secret(), &doc.secret_hash)
            .await?
        {
            return Err(ApiKeyAuthError::InvalidCredentials);
        }
        key_status(id, doc.expires, doc.revoked_at, now)?;
        let owner = self.service_doc(&doc.tenant, &doc.service).await?;
        if owner.is_none_or(|o| o.disabled) {
            return Err(ApiKeyAuthError::Disabled(id.clone()));
        }
        let entry = CachedKey {
            digest: digest(key.secret()),
            checked_at: now,
            read_at: now,
            tenant: doc.tenant.clone(),
            service: doc.service.clone(),
            expires: doc.expires,
            revoked_at: doc.revoked_at,
            last_used: doc.last_used,
        };
        self.inner.cache.insert(id.clone(), entry, now);
        self.touch(id, doc.last_used, now).await?;
        Ok(service_principal(&doc.tenant, &doc.service, id))
    }

    /// OAuth2 client credentials: `client_id` is the key id, `client_secret` the secret.
    pub async fn authenticate_client(
        &self,
        client_id: &str,
        client_secret: &str,
    ) -> Result<Principal, ApiKeyAuthError> {
        let key = ApiKey::from_parts(client_id, client_secret)
            .map_err(|_| ApiKeyAuthError::InvalidCredentials)?;
        self.authenticate_api_key(&key).await
    }

    /// Records a use of the key, unless one was recorded less than the configured interval
    /// ago: a busy key costs one write a minute, not one per request.
    async fn touch(
        &self,
        id: &KeyId,
        last_used: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let interval = millis(self.inner.config.last_used_interval);
        let stale = |at: Option<Timestamp>| {
            at.is_none_or(|at| now.as_millis().saturating_sub(at.as_millis()) >= interval)
        };
        if !stale(last_used) {
            return Ok(());
        }
        let updated = self
            .docs()
            .update(&layout::api_key(id)?, |mut doc: KeyDoc| {
                if !stale(doc.last_used) {
                    return Change::<_, ()>::Keep(doc);
                }
                doc.last_used = Some(now);
                Change::Write(doc)
            })
            .await?;
        if let Some(Ok(doc)) = updated
            && let Some(at) = doc.last_used
        {
            self.inner.cache.note_used(id, at);
        }
        Ok(())
    }
}

fn service_principal(tenant: &TenantName, service: &PrincipalName, id: &KeyId) -> Principal {
    Principal {
        id: service_id(tenant, service),
        is_admin: false,
        key_id: Some(id.clone()),
    }
}
