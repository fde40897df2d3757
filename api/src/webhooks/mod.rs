//! Delivering webhooks: every server runs a [`Deliverer`] that looks for subscriptions and
//! delivers each one whose lease it takes, so with several replicas each subscription is
//! delivered by one of them at a time, and by another when that one goes away.
//!
//! Delivery is at least once and in cursor order per subscription: an event is sent until
//! the endpoint answers 2xx or the subscription's attempts run out (then it becomes a dead
//! letter), and only then does the subscription's cursor move past it. A server that stops
//! between sending and saving the cursor makes the next holder send that event again, with
//! the same `webhook-id` (the event's cursor), for receivers to drop repeats. Commits never
//! wait for any of this: events are read from the ref log after the fact.

mod check;
mod envelope;
mod send;
mod worker;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub use check::{CHECK_TYPE, WebhookChecks};
pub use envelope::{CONTENT_TYPE, TYPE_PREFIX, body};
pub use send::{Sent, ask, client, send};

use crate::state::AppState;

/// How deliveries are paced. The defaults suit production; tests shorten them.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// The longest one request to an endpoint may take.
    pub timeout: Duration,
    /// The wait before the second attempt at an event; doubled for each later one.
    pub retry_initial: Duration,
    /// The longest wait between two attempts.
    pub retry_max: Duration,
    /// How often an idle subscription looks for new events.
    pub poll: Duration,
    /// How often a server looks for subscriptions it could deliver.
    pub scan: Duration,
    /// How long a server holds a subscription without renewing; another server takes over
    /// a subscription that long after its holder went away.
    pub lease: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            retry_initial: Duration::from_secs(1),
            retry_max: Duration::from_secs(10 * 60),
            poll: Duration::from_millis(500),
            scan: Duration::from_secs(5),
            lease: Duration::from_secs(30),
        }
    }
}

impl WebhookSettings {
    /// The wait after failed attempt number `attempts` (from 1) at an event.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let factor = 2_u32.saturating_pow(attempts.saturating_sub(1));
        self.retry_initial
            .saturating_mul(factor)
            .min(self.retry_max)
    }
}

/// One server's deliverer of every tenant's webhooks.
#[derive(Debug, Clone)]
pub struct Deliverer {
    state: AppState,
    settings: Arc<WebhookSettings>,
    client: reqwest::Client,
    /// Names this server in the subscriptions' leases.
    holder: String,
}

impl Deliverer {
    pub fn new(state: AppState, settings: WebhookSettings) -> Self {
        Self {
            client: client(settings.timeout),
            state,
            settings: Arc::new(settings),
            holder: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// Looks for subscriptions every `scan` period, forever, and delivers on its own task
    /// each enabled one whose lease it gets.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut running: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
            let mut every = tokio::time::interval(self.settings.scan);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                running.retain(|_, task| !task.is_finished());
                if let Err(error) = self.start_new(&mut running).await {
                    tracing::warn!(%error, "listing webhook subscriptions failed");
                }
                metrics::gauge!("pangolin_webhooks_delivering").set(running.len() as f64);
            }
        })
    }

    async fn start_new(
        &self,
        running: &mut HashMap<String, tokio::task::JoinHandle<()>>,
    ) -> Result<(), pangolin_catalog::tenancy::RecordsError> {
        let webhooks = self.state.catalogs.tenancy().webhooks();
        let mut after = None;
        loop {
            let (page, next) = webhooks.list_all(after.as_ref(), 500).await?;
            for subscription in page {
                let subscription = subscription.value;
                let key = format!(
                    "{}/{}/{}",
                    subscription.tenant, subscription.catalog, subscription.id
                );
                if !subscription.enabled || running.contains_key(&key) {
                    continue;
                }
                let worker = worker::Worker::new(self, subscription);
                running.insert(key, tokio::spawn(worker.run()));
            }
            match next {
                Some(next) => after = Some(next),
                None => return Ok(()),
            }
        }
    }
}
