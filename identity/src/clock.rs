//! Where the library reads the time, so tests and simulations can move it by hand instead of
//! sleeping.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use pangolin_store::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The time now.
    fn now(&self) -> Timestamp;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told to: for tests and simulations.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: Timestamp) -> Self {
        Self(AtomicI64::new(start.as_millis()))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(millis(by), Ordering::SeqCst);
    }

    /// Sets the clock to `to`, forward or back.
    pub fn set(&self, to: Timestamp) {
        self.0.store(to.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// A duration in whole milliseconds, saturating at `i64::MAX`.
pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// `at` moved forward by `by`, saturating.
pub(crate) fn plus(at: Timestamp, by: Duration) -> Timestamp {
    Timestamp::from_millis(at.as_millis().saturating_add(millis(by)))
}
