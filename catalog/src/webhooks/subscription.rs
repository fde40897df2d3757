//! Subscriptions: which events of a catalog go to which endpoint, signed with which secret.

use std::collections::BTreeSet;

use pangolin_records::{ExpectedVersion, RecordKey};
use pangolin_refs::RefName;
use pangolin_store::{ContentKey, Timestamp};
use serde::{Deserialize, Serialize};
use url::Url;

use super::delivery::{DeliveryState, state_key};
use super::signing::SigningSecret;
use super::{Webhooks, delivery};
use crate::events::{Cursor, EventKind, EventQuery};
use crate::tenancy::records::{self, CAS_ATTEMPTS, Page, PutError, RecordsError, Versioned};
use crate::tenancy::{Name, OpenError, SealError, Sealed, secret};

/// Attempts at one event when a subscription names none.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;
/// The most attempts at one event a subscription may ask for.
pub const MAX_ATTEMPTS: u32 = 30;
/// The most subscriptions one catalog may have.
pub const MAX_SUBSCRIPTIONS: usize = 100;
const MAX_URL_BYTES: usize = 2_048;
const MAX_DESCRIPTION_BYTES: usize = 1_024;

/// Which events a subscription receives: those the events feed would answer with the same
/// filters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Filter {
    /// Operation types (`create-table`); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<BTreeSet<String>>,
    /// Only events about keys at or under this one (its levels); no ref events then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Vec<String>>,
    /// Only events of this branch or tag.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// Why a subscription's settings are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidWebhook(pub String);

impl Filter {
    /// The feed query of this filter, after `after`.
    pub fn query(
        &self,
        after: Option<Cursor>,
        limit: usize,
        scan: usize,
    ) -> Result<EventQuery, InvalidWebhook> {
        let kinds = self
            .types
            .as_ref()
            .map(|types| {
                types
                    .iter()
                    .map(|t| {
                        EventKind::parse(t).ok_or_else(|| {
                            let known: Vec<_> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
                            InvalidWebhook(format!(
                                "unknown event type `{t}`; known types: {}",
                                known.join(", ")
                            ))
                        })
                    })
                    .collect::<Result<BTreeSet<_>, _>>()
            })
            .transpose()?;
        let prefix = self
            .prefix
            .as_ref()
            .map(|levels| {
                ContentKey::new(levels.iter().cloned())
                    .map_err(|e| InvalidWebhook(format!("invalid prefix: {e}")))
            })
            .transpose()?;
        let reference = self
            .reference
            .as_deref()
            .map(|r| RefName::new(r).map_err(|e| InvalidWebhook(format!("invalid ref: {e}"))))
            .transpose()?;
        Ok(EventQuery {
            after,
            limit,
            scan,
            kinds,
            prefix,
            reference,
        })
    }

    fn validate(&self) -> Result<(), InvalidWebhook> {
        if self.types.as_ref().is_some_and(BTreeSet::is_empty) {
            return Err(InvalidWebhook(
                "types is empty: leave it out to receive every type".to_owned(),
            ));
        }
        self.query(None, 1, 1).map(|_| ())
    }
}

/// A subscription as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Subscription {
    pub id: String,
    pub tenant: Name,
    pub catalog: Name,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub filter: Filter,
    /// A disabled subscription keeps its cursor and receives nothing until enabled again.
    pub enabled: bool,
    /// Attempts at one event before it becomes a dead letter.
    pub max_attempts: u32,
    /// The signing secret, sealed under the server key for this record only.
    secret: Sealed,
    pub created_by: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A new subscription.
#[derive(Debug)]
pub struct NewWebhook {
    pub url: String,
    pub description: Option<String>,
    pub filter: Filter,
    pub max_attempts: Option<u32>,
    /// The signing secret; a new random one when absent.
    pub secret: Option<SigningSecret>,
    /// Deliver the events after this cursor (the caller passes the feed's end for "from now").
    pub after: Option<Cursor>,
}

/// Changes to a subscription; what is absent stays.
#[derive(Debug, Default)]
pub struct WebhookPatch {
    pub url: Option<String>,
    pub description: Option<String>,
    pub filter: Option<Filter>,
    pub enabled: Option<bool>,
    pub max_attempts: Option<u32>,
    /// A new secret: deliveries from now on are signed with it.
    pub secret: Option<SigningSecret>,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateWebhookError {
    #[error(transparent)]
    Invalid(#[from] InvalidWebhook),
    #[error("catalog `{0}` already has {MAX_SUBSCRIPTIONS} webhooks, the most one may have")]
    TooMany(String),
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

#[derive(Debug, thiserror::Error)]
pub enum GetWebhookError {
    #[error("catalog `{catalog}` has no webhook `{id}`")]
    NotFound { catalog: String, id: String },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

#[derive(Debug, thiserror::Error)]
pub enum UpdateWebhookError {
    #[error("catalog `{catalog}` has no webhook `{id}`")]
    NotFound { catalog: String, id: String },
    #[error(transparent)]
    Invalid(#[from] InvalidWebhook),
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

#[derive(Debug, thiserror::Error)]
pub enum DeleteWebhookError {
    #[error("catalog `{catalog}` has no webhook `{id}`")]
    NotFound { catalog: String, id: String },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

impl From<GetWebhookError> for UpdateWebhookError {
    fn from(error: GetWebhookError) -> Self {
        match error {
            GetWebhookError::NotFound { catalog, id } => Self::NotFound { catalog, id },
            GetWebhookError::Records(e) => Self::Records(e),
        }
    }
}

impl From<GetWebhookError> for DeleteWebhookError {
    fn from(error: GetWebhookError) -> Self {
        match error {
            GetWebhookError::NotFound { catalog, id } => Self::NotFound { catalog, id },
            GetWebhookError::Records(e) => Self::Records(e),
        }
    }
}

fn record_key(path: String) -> RecordKey {
    RecordKey::new(path).expect("names and ids are short and have no control characters")
}

pub(super) fn subscriptions_of(tenant: &Name, catalog: &Name) -> String {
    format!("webhooks/subscriptions/{tenant}/{catalog}/")
}

pub(super) fn subscription_key(tenant: &Name, catalog: &Name, id: &str) -> RecordKey {
    record_key(format!("{}{id}", subscriptions_of(tenant, catalog)))
}

/// Every tenant's subscriptions.
const ALL: &str = "webhooks/subscriptions/";

/// An endpoint must be an absolute `http` or `https` URL with a host and no credentials (a
/// secret in a URL would show wherever the subscription is listed).
fn check_url(url: &str) -> Result<(), InvalidWebhook> {
    if url.len() > MAX_URL_BYTES {
        return Err(InvalidWebhook(format!(
            "url is {} bytes long; the limit is {MAX_URL_BYTES}",
            url.len()
        )));
    }
    let parsed = Url::parse(url).map_err(|e| InvalidWebhook(format!("invalid url: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(InvalidWebhook(format!(
            "url scheme `{}` is not supported: use http or https",
            parsed.scheme()
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(InvalidWebhook("url has no host".to_owned()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(InvalidWebhook(
            "url may not carry credentials; receivers verify the signature instead".to_owned(),
        ));
    }
    if parsed.fragment().is_some() {
        return Err(InvalidWebhook("url may not have a fragment".to_owned()));
    }
    Ok(())
}

fn check_max_attempts(attempts: u32) -> Result<(), InvalidWebhook> {
    if (1..=MAX_ATTEMPTS).contains(&attempts) {
        Ok(())
    } else {
        Err(InvalidWebhook(format!(
            "max-attempts must be 1 to {MAX_ATTEMPTS}; got {attempts}"
        )))
    }
}

fn check_description(description: &Option<String>) -> Result<(), InvalidWebhook> {
    match description {
        Some(d) if d.len() > MAX_DESCRIPTION_BYTES => Err(InvalidWebhook(format!(
            "description is {} bytes long; the limit is {MAX_DESCRIPTION_BYTES}",
            d.len()
        ))),
        _ => Ok(()),
    }
}

impl Webhooks {
    fn seal(&self, key: &RecordKey, secret: &SigningSecret) -> Result<Sealed, SealError> {
        secret::seal(&self.key, key.as_str().as_bytes(), secret.as_bytes())
    }

    /// The subscription's signing secret.
    pub fn secret(&self, subscription: &Subscription) -> Result<SigningSecret, OpenError> {
        let key = subscription_key(
            &subscription.tenant,
            &subscription.catalog,
            &subscription.id,
        );
        let bytes = secret::open(&self.key, key.as_str().as_bytes(), &subscription.secret)?;
        Ok(SigningSecret::from_bytes(&bytes))
    }

    /// Records a new subscription of `catalog`, delivering from `new.after` on. Returns it
    /// with its secret (the only time the secret is shown) and its delivery state.
    #[tracing::instrument(level = "debug", skip(self, new), fields(%tenant, %catalog))]
    pub async fn create(
        &self,
        tenant: &Name,
        catalog: &Name,
        new: NewWebhook,
        principal: &str,
        now: Timestamp,
    ) -> Result<(Versioned<Subscription>, SigningSecret), CreateWebhookError> {
        check_url(&new.url)?;
        check_description(&new.description)?;
        new.filter.validate()?;
        let max_attempts = new.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS);
        check_max_attempts(max_attempts)?;
        let existing = self
            .records()
            .list_records(
                &subscriptions_of(tenant, catalog),
                None,
                MAX_SUBSCRIPTIONS + 1,
            )
            .await
            .map_err(RecordsError::from)?;
        if existing.records.len() >= MAX_SUBSCRIPTIONS {
            return Err(CreateWebhookError::TooMany(catalog.to_string()));
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let key = subscription_key(tenant, catalog, &id);
        let secret = new.secret.unwrap_or_else(SigningSecret::generate);
        let subscription = Subscription {
            id: id.clone(),
            tenant: tenant.clone(),
            catalog: catalog.clone(),
            url: new.url,
            description: new.description,
            filter: new.filter,
            enabled: true,
            max_attempts,
            secret: self.seal(&key, &secret)?,
            created_by: principal.to_owned(),
            created_at: now,
            updated_at: now,
        };
        // The state first: a subscription is never without one.
        let state = DeliveryState {
            after: new.after.map(|c| c.to_string()),
            ..DeliveryState::default()
        };
        let state_key = state_key(tenant, catalog, &id);
        let state_version = put_new(self.records(), &state_key, &state).await?;
        let version = match put_new(self.records(), &key, &subscription).await {
            Ok(version) => version,
            Err(error) => {
                records::undo(self.records(), &state_key, state_version).await;
                return Err(error.into());
            }
        };
        Ok((
            Versioned {
                value: subscription,
                version,
            },
            secret,
        ))
    }

    pub async fn get(
        &self,
        tenant: &Name,
        catalog: &Name,
        id: &str,
    ) -> Result<Versioned<Subscription>, GetWebhookError> {
        let not_found = || GetWebhookError::NotFound {
            catalog: catalog.to_string(),
            id: id.chars().take(64).collect(),
        };
        if Name::new("webhook", id).is_err() {
            return Err(not_found());
        }
        records::get(self.records(), &subscription_key(tenant, catalog, id))
            .await?
            .ok_or_else(not_found)
    }

    /// A page of a catalog's subscriptions, by id.
    pub async fn list(
        &self,
        tenant: &Name,
        catalog: &Name,
        after: Option<&Name>,
        limit: usize,
    ) -> Result<Page<Versioned<Subscription>>, RecordsError> {
        records::list(
            self.records(),
            &subscriptions_of(tenant, catalog),
            after,
            limit,
        )
        .await
    }

    /// A page of every tenant's subscriptions, in key order after `after` (a subscription's
    /// key), for the servers that deliver them.
    pub async fn list_all(
        &self,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<(Vec<Versioned<Subscription>>, Option<RecordKey>), RecordsError> {
        let page = self
            .records()
            .list_records(ALL, after, limit.clamp(1, records::MAX_PAGE))
            .await?;
        let items = page
            .records
            .iter()
            .map(|record| {
                Ok(Versioned {
                    value: records::decode(&record.key, &record.value)?,
                    version: record.version,
                })
            })
            .collect::<Result<_, RecordsError>>()?;
        Ok((items, page.next_after))
    }

    /// Changes a subscription (compare-and-swap, retried while others change it).
    #[tracing::instrument(level = "debug", skip(self, patch), fields(%tenant, %catalog))]
    pub async fn update(
        &self,
        tenant: &Name,
        catalog: &Name,
        id: &str,
        patch: WebhookPatch,
        now: Timestamp,
    ) -> Result<Versioned<Subscription>, UpdateWebhookError> {
        if let Some(url) = &patch.url {
            check_url(url)?;
        }
        check_description(&patch.description)?;
        if let Some(filter) = &patch.filter {
            filter.validate()?;
        }
        if let Some(attempts) = patch.max_attempts {
            check_max_attempts(attempts)?;
        }
        let key = subscription_key(tenant, catalog, id);
        for _ in 0..CAS_ATTEMPTS {
            let current = self.get(tenant, catalog, id).await?;
            let mut next = current.value.clone();
            if let Some(url) = &patch.url {
                next.url.clone_from(url);
            }
            if let Some(description) = &patch.description {
                next.description = Some(description.clone()).filter(|d| !d.is_empty());
            }
            if let Some(filter) = &patch.filter {
                next.filter = filter.clone();
            }
            if let Some(enabled) = patch.enabled {
                next.enabled = enabled;
            }
            if let Some(attempts) = patch.max_attempts {
                next.max_attempts = attempts;
            }
            if let Some(secret) = &patch.secret {
                next.secret = self.seal(&key, secret)?;
            }
            next.updated_at = now;
            match records::put(
                self.records(),
                &key,
                ExpectedVersion::Is(current.version),
                &next,
            )
            .await
            {
                Ok(version) => {
                    return Ok(Versioned {
                        value: next,
                        version,
                    });
                }
                Err(PutError::Mismatch { .. }) => continue,
                Err(PutError::Records(e)) => return Err(e.into()),
            }
        }
        Err(RecordsError::Contended {
            key: key.to_string(),
        }
        .into())
    }

    /// Deletes a subscription, then its state, delivery log and dead letters. A server
    /// delivering it stops at its next step (it finds the subscription gone).
    #[tracing::instrument(level = "debug", skip(self), fields(%tenant, %catalog))]
    pub async fn delete(
        &self,
        tenant: &Name,
        catalog: &Name,
        id: &str,
    ) -> Result<(), DeleteWebhookError> {
        // Checked first so an unknown or malformed id is `NotFound`; a delete wins over an
        // update made meanwhile.
        self.get(tenant, catalog, id).await?;
        let key = subscription_key(tenant, catalog, id);
        if !records::delete_if_there(self.records(), &key).await? {
            return Err(DeleteWebhookError::NotFound {
                catalog: catalog.to_string(),
                id: id.to_owned(),
            });
        }
        delivery::forget(self.records(), tenant, catalog, id).await?;
        Ok(())
    }

    /// Deletes every subscription of a catalog with what belongs to them (the catalog is
    /// being deleted, so a later catalog of the same name starts without them).
    pub async fn delete_all(&self, tenant: &Name, catalog: &Name) -> Result<(), RecordsError> {
        loop {
            let page = self.list(tenant, catalog, None, records::MAX_PAGE).await?;
            if page.items.is_empty() {
                return Ok(());
            }
            for subscription in page.items {
                match self.delete(tenant, catalog, &subscription.value.id).await {
                    Ok(()) | Err(DeleteWebhookError::NotFound { .. }) => {}
                    Err(DeleteWebhookError::Records(e)) => return Err(e),
                }
            }
        }
    }
}

async fn put_new<T: Serialize>(
    records: &dyn pangolin_records::RecordStore,
    key: &RecordKey,
    value: &T,
) -> Result<u64, RecordsError> {
    records::put(records, key, ExpectedVersion::Absent, value)
        .await
        .map_err(|e| match e {
            // Ids are random: a taken one is a store that lies, not a race to report.
            PutError::Mismatch { .. } => RecordsError::Contended {
                key: key.to_string(),
            },
            PutError::Records(e) => e,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_absolute_http_without_credentials() {
        assert!(check_url("https://hooks.example.com/pangolin?team=data").is_ok());
        assert!(check_url("http://127.0.0.1:8080/").is_ok());
        for (url, says) in [
            ("ftp://example.com/", "scheme `ftp`"),
            ("/relative", "invalid url"),
            ("https://user:pw@example.com/", "credentials"),
            ("https://example.com/#frag", "fragment"),
        ] {
            let error = check_url(url).unwrap_err().0;
            assert!(error.contains(says), "{url}: {error}");
        }
        assert!(check_url(&format!("https://e.com/{}", "a".repeat(3000))).is_err());
    }

    #[test]
    fn filters_are_checked_as_the_feed_checks_them() {
        let mut filter = Filter::default();
        assert!(filter.validate().is_ok());
        filter.types = Some(BTreeSet::from(["update-table".to_owned()]));
        assert!(filter.validate().is_ok());
        filter.types = Some(BTreeSet::from(["table-updated".to_owned()]));
        assert!(
            filter
                .validate()
                .unwrap_err()
                .0
                .contains("unknown event type")
        );
        filter.types = Some(BTreeSet::new());
        assert!(filter.validate().is_err());
        let bad_ref = Filter {
            reference: Some("a..b".to_owned()),
            ..Filter::default()
        };
        assert!(bad_ref.validate().unwrap_err().0.contains("invalid ref"));
        let bad_prefix = Filter {
            prefix: Some(vec![String::new()]),
            ..Filter::default()
        };
        assert!(
            bad_prefix
                .validate()
                .unwrap_err()
                .0
                .contains("invalid prefix")
        );
        assert!(check_max_attempts(0).is_err());
        assert!(check_max_attempts(MAX_ATTEMPTS + 1).is_err());
    }
}
