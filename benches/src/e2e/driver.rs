//! The load generator: a fixed number of tasks (one per connection of one shared HTTP client),
//! each running operations back to back for the warmup and then the measured duration, every
//! operation's latency recorded.

use std::future::Future;
use std::time::{Duration, Instant};

use super::stats::{Basis, Figures, Tally};

/// What one successful operation ran into on its way.
#[derive(Debug, Default, Clone, Copy)]
pub struct Op {
    /// `409` answers (the operation reloaded and retried).
    pub conflicts: u64,
    /// Requests sent again.
    pub retries: u64,
}

/// One connection's worth of a workload.
pub trait Worker: Send + 'static {
    /// Untimed work before each operation; only workloads measured on one connection use it
    /// (their throughput is then over the time spent in operations, see [`Basis::Busy`]).
    fn prepare(&mut self) -> impl Future<Output = anyhow::Result<()>> + Send {
        std::future::ready(Ok(()))
    }

    /// One timed operation.
    fn op(&mut self) -> impl Future<Output = anyhow::Result<Op>> + Send;
}

/// How long to load before measuring, and how long to measure.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub warmup: Duration,
    pub duration: Duration,
}

/// A task that fails this many operations in a row stops (the server is gone or the workload
/// is broken); what it measured so far is kept, with the errors.
const GIVE_UP_AFTER: u64 = 20;

/// Runs every worker on a task of its own and returns the figures and the workers (whose state
/// a workload may check afterwards). Each task runs at least one measured operation.
pub async fn drive<W: Worker>(
    workers: Vec<W>,
    timing: Timing,
    basis: Basis,
) -> anyhow::Result<(Figures, Vec<W>)> {
    let connections = workers.len();
    let start = Instant::now();
    let measure_from = start + timing.warmup;
    let end = measure_from + timing.duration;
    let mut tasks = tokio::task::JoinSet::new();
    for (index, mut worker) in workers.into_iter().enumerate() {
        tasks.spawn(async move {
            let mut tally = Tally::default();
            let mut in_a_row = 0;
            loop {
                let now = Instant::now();
                let measured = tally.latencies.len() as u64 + tally.errors;
                if now >= end && measured > 0 {
                    break;
                }
                let result = match worker.prepare().await {
                    Ok(()) => {
                        let began = Instant::now();
                        let result = worker.op().await;
                        let latency = began.elapsed();
                        if began < measure_from {
                            continue; // warmup
                        }
                        result.map(|op| (op, latency))
                    }
                    Err(e) if Instant::now() < measure_from => Err(e.context("preparing (warmup)")),
                    Err(e) => Err(e.context("preparing")),
                };
                match result {
                    Ok((op, latency)) => {
                        tally.latencies.push(latency);
                        tally.conflicts += op.conflicts;
                        tally.retries += op.retries;
                        in_a_row = 0;
                    }
                    Err(e) => {
                        tally.errors += 1;
                        in_a_row += 1;
                        if tally.first_error.is_none() {
                            tally.first_error = Some(format!("{e:#}"));
                        }
                        if in_a_row >= GIVE_UP_AFTER {
                            break;
                        }
                    }
                }
            }
            (index, worker, tally, Instant::now())
        });
    }
    let mut total = Tally::default();
    let mut finished = measure_from;
    let mut workers = Vec::with_capacity(connections);
    while let Some(joined) = tasks.join_next().await {
        let (index, worker, tally, done) = joined?;
        total.absorb(tally);
        finished = finished.max(done);
        workers.push((index, worker));
    }
    workers.sort_by_key(|(index, _)| *index);
    let wall = finished.saturating_duration_since(measure_from);
    Ok((
        total.figures(wall, connections, basis),
        workers.into_iter().map(|(_, w)| w).collect(),
    ))
}
