//! Delivering one subscription, while this server holds its lease.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pangolin_catalog::events::{Cursor, CursorError, EventsError};
use pangolin_catalog::tenancy::{Name, OpenError, RecordsError, Versioned};
use pangolin_catalog::webhooks::{
    Attempt, AttemptOutcome, DeadLetter, DeliveryState, GetWebhookError, InvalidWebhook, Retry,
    StateError, Subscription, Webhooks, lease_name,
};
use pangolin_records::Lease;
use pangolin_store::{BackendError, Timestamp};
use tracing::Instrument;

use super::{Deliverer, WebhookSettings, envelope, send};
use crate::error::ApiError;
use crate::management::events::render;
use crate::state::AppState;

/// Events read per round.
const BATCH: usize = 20;
/// Ref-log entries a round reads at most, so a filter that matches little still moves on.
const SCAN: usize = 1_000;

/// What to do after a round.
enum Next {
    /// Go on at once.
    Continue,
    Wait(Duration),
    /// The subscription is gone, disabled, or another server holds it.
    Stop,
}

/// Why a round failed; the worker waits and tries again.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Records(#[from] RecordsError),
    #[error("opening the catalog: {}", .0.message)]
    Catalog(ApiError),
    #[error(transparent)]
    Events(#[from] EventsError),
    #[error("the stored cursor is invalid: {0}")]
    Cursor(#[from] CursorError),
    #[error("the stored filter is invalid: {0}")]
    Filter(#[from] InvalidWebhook),
    #[error("the signing secret: {0}")]
    Secret(#[from] OpenError),
    #[error("encoding an event: {0}")]
    Encode(#[from] serde_json::Error),
}

pub(super) struct Worker {
    state: AppState,
    settings: Arc<WebhookSettings>,
    client: reqwest::Client,
    webhooks: Webhooks,
    lease: Option<Lease>,
    tenant: Name,
    catalog: Name,
    id: String,
    /// When this worker last took or renewed the lease.
    renewed: Option<Instant>,
}

impl Worker {
    pub(super) fn new(deliverer: &Deliverer, subscription: Subscription) -> Self {
        let lease = Lease::new(&lease_name(&subscription), deliverer.holder.clone()).ok();
        Self {
            webhooks: deliverer.state.catalogs.tenancy().webhooks(),
            state: deliverer.state.clone(),
            settings: deliverer.settings.clone(),
            client: deliverer.client.clone(),
            lease,
            tenant: subscription.tenant,
            catalog: subscription.catalog,
            id: subscription.id,
            renewed: None,
        }
    }

    /// Delivers until the subscription is gone, disabled or held by another server.
    pub(super) async fn run(mut self) {
        let span = tracing::info_span!(
            "webhook",
            tenant = %self.tenant,
            catalog = %self.catalog,
            webhook = %self.id
        );
        async move {
            loop {
                match self.round().await {
                    Ok(Next::Continue) => {}
                    Ok(Next::Wait(wait)) => tokio::time::sleep(wait).await,
                    Ok(Next::Stop) => return,
                    Err(error) => {
                        tracing::warn!(%error, "delivering webhook failed; trying again");
                        tokio::time::sleep(self.settings.poll.max(Duration::from_secs(1))).await;
                    }
                }
            }
        }
        .instrument(span)
        .await;
    }

    /// Takes or renews the lease when a third of it has passed; false when another server
    /// holds it.
    async fn hold(&mut self) -> Result<bool, BackendError> {
        let Some(lease) = &self.lease else {
            return Ok(false);
        };
        if self
            .renewed
            .is_some_and(|at| at.elapsed() < self.settings.lease / 3)
        {
            return Ok(true);
        }
        let started = Instant::now();
        let held = lease
            .try_take(
                self.state.store.as_ref(),
                Timestamp::now(),
                self.settings.lease,
            )
            .await?;
        self.renewed = held.then_some(started);
        Ok(held)
    }

    async fn save(
        &self,
        subscription: &Subscription,
        version: &mut u64,
        delivery: &DeliveryState,
    ) -> Result<bool, RoundError> {
        match self
            .webhooks
            .save_state(subscription, *version, delivery)
            .await
        {
            Ok(next) => {
                *version = next;
                Ok(true)
            }
            Err(StateError::Lost(_)) => Ok(false),
            Err(StateError::Records(e)) => Err(e.into()),
        }
    }

    /// Saves the state, then goes on delivering, or stops when another server took over.
    async fn save_and_go_on(
        &self,
        subscription: &Subscription,
        version: &mut u64,
        delivery: &DeliveryState,
    ) -> Result<Next, RoundError> {
        Ok(if self.save(subscription, version, delivery).await? {
            Next::Continue
        } else {
            Next::Stop
        })
    }

    async fn round(&mut self) -> Result<Next, RoundError> {
        if !self.hold().await? {
            return Ok(Next::Stop);
        }
        let subscription = match self
            .webhooks
            .get(&self.tenant, &self.catalog, &self.id)
            .await
        {
            Ok(found) => found.value,
            Err(GetWebhookError::NotFound { .. }) => return Ok(Next::Stop),
            Err(GetWebhookError::Records(e)) => return Err(e.into()),
        };
        if !subscription.enabled {
            return Ok(Next::Stop);
        }
        let Versioned {
            value: mut delivery,
            mut version,
        } = self.webhooks.state(&subscription).await?;
        let now = Timestamp::now();
        if let Some(retry) = &delivery.retry
            && retry.next_at > now
        {
            let wait = u64::try_from(retry.next_at.as_millis() - now.as_millis()).unwrap_or(0);
            return Ok(Next::Wait(
                Duration::from_millis(wait).min(self.settings.lease / 3),
            ));
        }
        let catalog = self
            .state
            .catalog_in(self.tenant.as_str(), self.catalog.as_str())
            .await
            .map_err(RoundError::Catalog)?;
        let after = delivery
            .after
            .as_deref()
            .map(str::parse::<Cursor>)
            .transpose()?;
        let query = subscription.filter.query(after, BATCH, SCAN)?;
        let page = match catalog.events(&query, &|_| true).await {
            Ok(page) => page,
            Err(EventsError::Gone { sequence }) => {
                // Its commits were collected: nothing can be derived to send.
                tracing::warn!(sequence, "skipping the events of a collected ref-log entry");
                metrics::counter!("pangolin_webhook_events_skipped_total").increment(1);
                delivery.after = Some(Cursor::end_of(sequence).to_string());
                delivery.retry = None;
                return self
                    .save_and_go_on(&subscription, &mut version, &delivery)
                    .await;
            }
            Err(e) => return Err(e.into()),
        };
        if page.events.is_empty() {
            if page.cursor.is_some() && page.cursor != after {
                delivery.after = page.cursor.map(|c| c.to_string());
                return self
                    .save_and_go_on(&subscription, &mut version, &delivery)
                    .await;
            }
            return Ok(Next::Wait(self.settings.poll));
        }
        let secret = self.webhooks.secret(&subscription)?;
        let cursors: Vec<Cursor> = page.events.iter().map(|e| e.cursor).collect();
        let last = cursors.last().copied();
        let views = render(&catalog, page.events).await;
        for (cursor, view) in cursors.into_iter().zip(views) {
            if !self.hold().await? {
                return Ok(Next::Stop);
            }
            let attempt = match &delivery.retry {
                Some(retry) if retry.event == view.cursor => retry.attempts + 1,
                _ => 1,
            };
            let body = envelope::body(&subscription, &view)?;
            let at = Timestamp::now();
            let sent = send::send(
                &self.client,
                &subscription.url,
                &secret,
                &view.cursor,
                at.as_millis().div_euclid(1000),
                body.clone(),
            )
            .await;
            let outcome = if sent.delivered() {
                AttemptOutcome::Delivered
            } else if attempt >= subscription.max_attempts {
                AttemptOutcome::DeadLettered
            } else {
                AttemptOutcome::Retrying
            };
            record(outcome, sent.took);
            delivery.attempts += 1;
            self.webhooks
                .log_attempt(
                    &subscription,
                    &Attempt {
                        number: delivery.attempts,
                        event: view.cursor.clone(),
                        event_type: view.operation_type.clone(),
                        attempt,
                        at,
                        duration_ms: u64::try_from(sent.took.as_millis()).unwrap_or(u64::MAX),
                        status: sent.status,
                        error: sent.error.clone(),
                        outcome,
                    },
                )
                .await?;
            let error = sent.error.unwrap_or_default();
            match outcome {
                AttemptOutcome::Delivered => {
                    delivery.delivered += 1;
                    delivery.last_delivered_at = Some(at);
                }
                AttemptOutcome::DeadLettered => {
                    tracing::warn!(event = %view.cursor, attempts = attempt, %error,
                        "webhook event dead-lettered");
                    self.webhooks
                        .add_dead_letter(
                            &subscription,
                            &cursor,
                            &DeadLetter {
                                event: view.cursor.clone(),
                                event_type: view.operation_type.clone(),
                                attempts: attempt,
                                last_error: error,
                                at,
                                body: String::from_utf8_lossy(&body).into_owned(),
                            },
                        )
                        .await?;
                    delivery.dead_letters += 1;
                }
                AttemptOutcome::Retrying => {
                    let wait = self.settings.backoff(attempt);
                    let wait = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
                    delivery.retry = Some(Retry {
                        event: view.cursor.clone(),
                        attempts: attempt,
                        next_at: Timestamp::from_millis(at.as_millis().saturating_add(wait)),
                        last_error: error,
                    });
                    return self
                        .save_and_go_on(&subscription, &mut version, &delivery)
                        .await;
                }
            }
            delivery.after = Some(view.cursor);
            delivery.retry = None;
            if !self.save(&subscription, &mut version, &delivery).await? {
                return Ok(Next::Stop);
            }
        }
        // The read went on past its last event (events the filter left out).
        if page.cursor.is_some() && page.cursor > last {
            delivery.after = page.cursor.map(|c| c.to_string());
            if !self.save(&subscription, &mut version, &delivery).await? {
                return Ok(Next::Stop);
            }
        }
        Ok(Next::Continue)
    }
}

fn record(outcome: AttemptOutcome, took: Duration) {
    let outcome = match outcome {
        AttemptOutcome::Delivered => "delivered",
        AttemptOutcome::Retrying => "retrying",
        AttemptOutcome::DeadLettered => "dead-lettered",
    };
    metrics::counter!("pangolin_webhook_attempts_total", "outcome" => outcome).increment(1);
    metrics::histogram!("pangolin_webhook_attempt_seconds").record(took.as_secs_f64());
}
