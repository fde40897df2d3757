//! Figures of one measurement from its per-request latencies.

use std::time::Duration;

use serde::Serialize;

/// How throughput was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// Operations over the wall-clock time of the measurement.
    Wall,
    /// Operations over the time spent in them: for workloads whose operations need untimed
    /// preparation (a merge needs a branch with changes), measured on one connection.
    Busy,
}

/// Counts, throughput and latency percentiles of one measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Operations that succeeded (their latencies are the percentiles).
    pub ops: u64,
    /// Operations that failed (an unexpected answer or a transport error).
    pub errors: u64,
    /// `409` answers to commits, each followed by a reload and a retry.
    pub conflicts: u64,
    /// Requests sent again (after a `409` or a retryable `503`).
    pub retries: u64,
    /// Length of the measurement, seconds.
    pub seconds: f64,
    /// Successful operations per second.
    pub throughput: f64,
    pub basis: Basis,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
    /// The first error seen, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// Nearest-rank percentile of sorted latencies.
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What the generator's tasks gathered, summed.
#[derive(Debug, Default)]
pub struct Tally {
    pub latencies: Vec<Duration>,
    pub errors: u64,
    pub conflicts: u64,
    pub retries: u64,
    pub first_error: Option<String>,
}

impl Tally {
    pub fn absorb(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.conflicts += other.conflicts;
        self.retries += other.retries;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    /// `wall` is the measurement's length; `connections` the concurrent tasks.
    pub fn figures(mut self, wall: Duration, connections: usize, basis: Basis) -> Figures {
        self.latencies.sort_unstable();
        let ops = self.latencies.len() as u64;
        let busy: Duration = self.latencies.iter().sum();
        let seconds = match basis {
            Basis::Wall => wall.as_secs_f64(),
            Basis::Busy => busy.as_secs_f64() / connections.max(1) as f64,
        };
        Figures {
            ops,
            errors: self.errors,
            conflicts: self.conflicts,
            retries: self.retries,
            seconds,
            throughput: if seconds > 0.0 {
                ops as f64 / seconds
            } else {
                0.0
            },
            basis,
            p50_ms: ms(percentile(&self.latencies, 0.50)),
            p99_ms: ms(percentile(&self.latencies, 0.99)),
            mean_ms: if ops == 0 { 0.0 } else { ms(busy) / ops as f64 },
            max_ms: ms(self.latencies.last().copied().unwrap_or_default()),
            first_error: self.first_error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let sorted: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&sorted, 0.50), Duration::from_millis(50));
        assert_eq!(percentile(&sorted, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&sorted[..1], 0.99), Duration::from_millis(1));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn busy_throughput_counts_only_time_in_operations() {
        let tally = Tally {
            latencies: vec![Duration::from_millis(10); 10],
            ..Tally::default()
        };
        let f = tally.figures(Duration::from_secs(5), 1, Basis::Busy);
        assert_eq!(f.ops, 10);
        assert!((f.throughput - 100.0).abs() < 1e-6, "{}", f.throughput);
        assert!((f.mean_ms - 10.0).abs() < 1e-6);
    }
}
