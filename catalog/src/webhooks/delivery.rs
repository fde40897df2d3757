//! What delivering a subscription leaves behind: its state (cursor, counters, the retry it
//! waits for), the log of its attempts and its dead letters.

use pangolin_records::{ExpectedVersion, RecordKey, RecordStore};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use super::Webhooks;
use super::subscription::Subscription;
use crate::events::Cursor;
use crate::tenancy::Name;
use crate::tenancy::records::{self, PutError, RecordsError, Versioned};

/// Attempts kept in a subscription's log; older ones are deleted as new ones are written.
pub const KEEP_ATTEMPTS: u64 = 1_000;

/// Where a subscription's delivery is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DeliveryState {
    /// Every event up to this cursor was delivered or given up on; `None` before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    pub delivered: u64,
    pub dead_letters: u64,
    /// Attempts made so far, which number the log.
    pub attempts: u64,
    /// The event being retried, when the last attempt at it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_delivered_at: Option<Timestamp>,
}

/// A failed event waiting for its next attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Retry {
    /// The event's cursor.
    pub event: String,
    /// Attempts made at it.
    pub attempts: u32,
    pub next_at: Timestamp,
    pub last_error: String,
}

/// What came of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptOutcome {
    Delivered,
    /// Failed; it will be tried again.
    Retrying,
    /// Failed for the last time; the event is a dead letter.
    DeadLettered,
}

/// One attempt at delivering one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Attempt {
    /// Its number in the subscription's log, from 1.
    pub number: u64,
    /// The event's cursor (also the delivery's `webhook-id`).
    pub event: String,
    pub event_type: String,
    /// Which attempt at this event, from 1.
    pub attempt: u32,
    pub at: Timestamp,
    pub duration_ms: u64,
    /// The endpoint's status, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed: the status, a timeout, no connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub outcome: AttemptOutcome,
}

/// An event given up on, with the exact body that was sent, so it can be inspected and sent
/// again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DeadLetter {
    pub event: String,
    pub event_type: String,
    pub attempts: u32,
    pub last_error: String,
    pub at: Timestamp,
    pub body: String,
}

/// Saving a subscription's state failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Someone else changed it (another server took the subscription over, or it was
    /// deleted): this server stops delivering it.
    #[error("the delivery state of webhook `{0}` changed under this server")]
    Lost(String),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

fn record_key(path: String) -> RecordKey {
    RecordKey::new(path).expect("names and ids are short and have no control characters")
}

fn base(kind: &str, tenant: &Name, catalog: &Name, id: &str) -> String {
    format!("webhooks/{kind}/{tenant}/{catalog}/{id}")
}

/// The name of the lease a server delivers a subscription under.
pub fn lease_name(subscription: &Subscription) -> String {
    lease_of(
        &subscription.tenant,
        &subscription.catalog,
        &subscription.id,
    )
}

fn lease_of(tenant: &Name, catalog: &Name, id: &str) -> String {
    format!("webhook/{tenant}/{catalog}/{id}")
}

pub(super) fn state_key(tenant: &Name, catalog: &Name, id: &str) -> RecordKey {
    record_key(base("state", tenant, catalog, id))
}

fn attempts_of(s: &Subscription) -> String {
    format!("{}/", base("attempts", &s.tenant, &s.catalog, &s.id))
}

/// Numbered downwards, so that listing in key order gives the newest first.
fn attempt_key(s: &Subscription, number: u64) -> RecordKey {
    record_key(format!("{}{:020}", attempts_of(s), u64::MAX - number))
}

fn dead_of(s: &Subscription) -> String {
    format!("{}/", base("dead", &s.tenant, &s.catalog, &s.id))
}

/// Padded so key order is cursor order.
fn dead_key(s: &Subscription, event: &Cursor) -> RecordKey {
    let index = event.index().map_or(u64::from(u32::MAX), u64::from);
    record_key(format!("{}{:020}.{index:010}", dead_of(s), event.sequence))
}

impl Webhooks {
    /// A subscription's delivery state.
    pub async fn state(
        &self,
        subscription: &Subscription,
    ) -> Result<Versioned<DeliveryState>, RecordsError> {
        let key = state_key(
            &subscription.tenant,
            &subscription.catalog,
            &subscription.id,
        );
        Ok(records::get(self.records(), &key)
            .await?
            .unwrap_or(Versioned {
                value: DeliveryState::default(),
                version: 0,
            }))
    }

    /// Saves a subscription's state if it is still at `version`; returns the new version.
    pub async fn save_state(
        &self,
        subscription: &Subscription,
        version: u64,
        state: &DeliveryState,
    ) -> Result<u64, StateError> {
        let key = state_key(
            &subscription.tenant,
            &subscription.catalog,
            &subscription.id,
        );
        let expected = if version == 0 {
            ExpectedVersion::Absent
        } else {
            ExpectedVersion::Is(version)
        };
        match records::put(self.records(), &key, expected, state).await {
            Ok(version) => Ok(version),
            Err(PutError::Mismatch { .. }) => Err(StateError::Lost(subscription.id.clone())),
            Err(PutError::Records(e)) => Err(e.into()),
        }
    }

    /// Adds an attempt to the subscription's log and drops the one that falls out of it.
    pub async fn log_attempt(
        &self,
        subscription: &Subscription,
        attempt: &Attempt,
    ) -> Result<(), RecordsError> {
        let key = attempt_key(subscription, attempt.number);
        match records::put(self.records(), &key, ExpectedVersion::Absent, attempt).await {
            // Written before by a server that then lost the state's swap: keep the first.
            Ok(_) | Err(PutError::Mismatch { .. }) => {}
            Err(PutError::Records(e)) => return Err(e),
        }
        if let Some(old) = attempt.number.checked_sub(KEEP_ATTEMPTS) {
            records::delete_if_there(self.records(), &attempt_key(subscription, old)).await?;
        }
        Ok(())
    }

    /// The subscription's attempts, newest first, before attempt `before` when given.
    pub async fn attempts(
        &self,
        subscription: &Subscription,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<Attempt>, bool), RecordsError> {
        let after = before.map(|n| attempt_key(subscription, n));
        self.list_under(&attempts_of(subscription), after.as_ref(), limit)
            .await
    }

    /// Records a dead letter.
    pub async fn add_dead_letter(
        &self,
        subscription: &Subscription,
        event: &Cursor,
        letter: &DeadLetter,
    ) -> Result<(), RecordsError> {
        let key = dead_key(subscription, event);
        match records::put(self.records(), &key, ExpectedVersion::Absent, letter).await {
            Ok(_) | Err(PutError::Mismatch { .. }) => Ok(()),
            Err(PutError::Records(e)) => Err(e),
        }
    }

    /// The subscription's dead letters, oldest first, after the event `after`.
    pub async fn dead_letters(
        &self,
        subscription: &Subscription,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<(Vec<DeadLetter>, bool), RecordsError> {
        let after = after.map(|c| dead_key(subscription, c));
        self.list_under(&dead_of(subscription), after.as_ref(), limit)
            .await
    }

    /// One dead letter.
    pub async fn dead_letter(
        &self,
        subscription: &Subscription,
        event: &Cursor,
    ) -> Result<Option<Versioned<DeadLetter>>, RecordsError> {
        records::get(self.records(), &dead_key(subscription, event)).await
    }

    /// Removes a dead letter (handled by hand, or sent again); false when it was not there.
    pub async fn remove_dead_letter(
        &self,
        subscription: &Subscription,
        event: &Cursor,
    ) -> Result<bool, RecordsError> {
        records::delete_if_there(self.records(), &dead_key(subscription, event)).await
    }

    async fn list_under<T: serde::de::DeserializeOwned>(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<(Vec<T>, bool), RecordsError> {
        let page = self
            .records()
            .list_records(prefix, after, limit.clamp(1, records::MAX_PAGE))
            .await?;
        let items = page
            .records
            .iter()
            .map(|r| records::decode(&r.key, &r.value))
            .collect::<Result<_, _>>()?;
        Ok((items, page.next_after.is_some()))
    }
}

/// Deletes a record at whatever version it is; false when it was not there.
/// Deletes what a subscription's delivery left: state, log, dead letters.
pub(super) async fn forget(
    records: &dyn RecordStore,
    tenant: &Name,
    catalog: &Name,
    id: &str,
) -> Result<(), RecordsError> {
    records::delete_if_there(records, &state_key(tenant, catalog, id)).await?;
    if let Ok(lease) = pangolin_records::Lease::record_key(&lease_of(tenant, catalog, id)) {
        records::delete_if_there(records, &lease).await?;
    }
    for kind in ["attempts", "dead"] {
        let prefix = format!("{}/", base(kind, tenant, catalog, id));
        loop {
            let page = records
                .list_records(&prefix, None, records::MAX_PAGE)
                .await?;
            if page.records.is_empty() {
                break;
            }
            for record in page.records {
                records::delete_if_there(records, &record.key).await?;
            }
        }
    }
    Ok(())
}
