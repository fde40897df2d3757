//! Background work done once across every server sharing a database.
//!
//! Each server ticks on its own schedule; at each tick it asks for the job's lease (a record,
//! see [`Lease`]) for one period, and only the server that gets it does the work that round.
//! So with several replicas on one PostgreSQL a sweep runs once per period, not once per
//! replica, and when the server that ran it goes away another takes over at its next tick.
//!
//! The one job today expires idempotency keys (kept [`crate::idempotency::LIFETIME`]).

use std::sync::Arc;
use std::time::Duration;

use pangolin_records::{Lease, RecordStore};
use pangolin_store::{BackendError, Timestamp};

/// How often each server asks for a job's lease, unless configured.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(5 * 60);

/// The job that deletes expired idempotency keys.
pub const EXPIRE_IDEMPOTENCY_KEYS: &str = "expire-idempotency-keys";

/// What one tick of a job did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// This server held the lease and did the work; how many items it removed.
    Ran(u64),
    /// Another server holds the lease this period.
    Skipped,
}

/// One server's runner of the shared jobs.
#[derive(Clone)]
pub struct Jobs {
    records: Arc<dyn RecordStore>,
    /// The expiry job's lease, asked for under a name unique to this process.
    expiry: Lease,
    period: Duration,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("expiry", &self.expiry)
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

impl Jobs {
    pub fn new(records: Arc<dyn RecordStore>, period: Duration) -> Self {
        let holder = uuid::Uuid::new_v4().to_string();
        Self {
            records,
            expiry: Lease::new(EXPIRE_IDEMPOTENCY_KEYS, holder)
                .expect("a short constant name is a valid record key"),
            period,
        }
    }

    /// One tick of the idempotency-key expiry at `now`.
    pub async fn expire_idempotency_keys(&self, now: Timestamp) -> Result<Round, BackendError> {
        if !self
            .expiry
            .try_take(self.records.as_ref(), now, self.period)
            .await?
        {
            return Ok(Round::Skipped);
        }
        let deleted = crate::idempotency::expire(self.records.as_ref(), now).await?;
        Ok(Round::Ran(deleted))
    }

    /// Ticks every period, forever, on the current runtime; each round is logged and counted.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(self.period);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let round = self.expire_idempotency_keys(Timestamp::now()).await;
                record(EXPIRE_IDEMPOTENCY_KEYS, &round);
            }
        })
    }
}

fn record(job: &'static str, round: &Result<Round, BackendError>) {
    let outcome = match round {
        Ok(Round::Ran(removed)) => {
            tracing::info!(job, removed, "background job ran");
            metrics::counter!("pangolin_job_removed_total", "job" => job).increment(*removed);
            "ran"
        }
        Ok(Round::Skipped) => "skipped",
        Err(error) => {
            tracing::warn!(job, %error, "background job failed");
            "failed"
        }
    };
    metrics::counter!("pangolin_job_rounds_total", "job" => job, "outcome" => outcome).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pangolin_backend_memory::MemoryBackend;

    #[tokio::test]
    async fn of_several_servers_one_runs_each_period() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryBackend::new());
        let period = Duration::from_secs(60);
        let servers: Vec<Jobs> = (0..3).map(|_| Jobs::new(store.clone(), period)).collect();
        let start = Timestamp::from_millis(10_000_000);
        let mut ran = Vec::new();
        for round in 0..4 {
            let now = Timestamp::from_millis(start.as_millis() + round * 60_001);
            let mut runners = 0;
            for server in &servers {
                if let Round::Ran(_) = server.expire_idempotency_keys(now).await.unwrap() {
                    runners += 1;
                }
            }
            ran.push(runners);
        }
        assert_eq!(ran, [1, 1, 1, 1], "exactly one server per period");
    }
}
