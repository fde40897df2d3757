//! Webhooks: a catalog's events delivered to HTTP endpoints.
//!
//! A subscription names an endpoint, a filter (the events feed's: types, key prefix, ref)
//! and a signing secret, sealed under the server key like warehouse credentials. Delivery
//! reads the events feed after the subscription's own cursor, so commits never wait for an
//! endpoint and nothing committed is skipped; the cursor moves past an event only once it
//! was delivered (a 2xx answer) or given up on (a dead letter after the last attempt). This
//! crate keeps the records; the server does the HTTP.
//!
//! ```text
//! webhooks/subscriptions/<tenant>/<catalog>/<id>   the subscription
//! webhooks/state/<tenant>/<catalog>/<id>           its cursor, counters, the pending retry
//! webhooks/attempts/<tenant>/<catalog>/<id>/<n>    its delivery log, newest first
//! webhooks/dead/<tenant>/<catalog>/<id>/<cursor>   its dead letters, oldest first
//! ```

mod delivery;
mod signing;
mod subscription;

use std::sync::Arc;

pub use delivery::{
    Attempt, AttemptOutcome, DeadLetter, DeliveryState, KEEP_ATTEMPTS, Retry, StateError,
    lease_name,
};
pub use signing::{SecretError, SigningSecret};
pub use subscription::{
    CreateWebhookError, DEFAULT_MAX_ATTEMPTS, DeleteWebhookError, Filter, GetWebhookError,
    InvalidWebhook, MAX_ATTEMPTS, MAX_SUBSCRIPTIONS, NewWebhook, Subscription, UpdateWebhookError,
    WebhookPatch,
};

use crate::store::Store;
use crate::tenancy::SecretKey;

/// The webhook records of every tenant, and the key their secrets are sealed with.
#[derive(Clone)]
pub struct Webhooks {
    store: Arc<dyn Store>,
    key: Arc<SecretKey>,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks").finish_non_exhaustive()
    }
}

impl Webhooks {
    pub fn new(store: Arc<dyn Store>, key: Arc<SecretKey>) -> Self {
        Self { store, key }
    }

    fn records(&self) -> &dyn pangolin_records::RecordStore {
        self.store.as_ref()
    }
}
