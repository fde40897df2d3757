//! How far a sweep or an object collection has got, readable while it runs (by a job's
//! record, say).

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// The steps of a sweep, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Starting,
    /// Walking history and reading metadata, manifest lists and manifests.
    Marking,
    /// Listing the tables' folders.
    Listing,
    /// Walking what history gained since the mark began.
    Remarking,
    Deleting,
    Done,
}

impl Phase {
    const ALL: [Self; 6] = [
        Self::Starting,
        Self::Marking,
        Self::Listing,
        Self::Remarking,
        Self::Deleting,
        Self::Done,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Marking => "marking",
            Self::Listing => "listing",
            Self::Remarking => "re-marking",
            Self::Deleting => "deleting",
            Self::Done => "done",
        }
    }
}

/// Counters a sweep (or an object collection) advances as it goes; shared, so another task
/// can read them meanwhile.
#[derive(Debug, Default)]
pub struct SweepProgress {
    phase: AtomicU8,
    pub objects_read: AtomicU64,
    pub metadata_files_read: AtomicU64,
    pub manifests_read: AtomicU64,
    pub referenced: AtomicU64,
    pub files_listed: AtomicU64,
    pub orphans: AtomicU64,
    pub deleted: AtomicU64,
    /// Store objects listed and found unreachable (object collections only).
    pub objects_listed: AtomicU64,
    pub unreachable: AtomicU64,
}

impl SweepProgress {
    pub fn phase(&self) -> Phase {
        Phase::ALL[usize::from(self.phase.load(Ordering::Relaxed)).min(Phase::ALL.len() - 1)]
    }

    pub fn enter(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    pub(crate) fn add(&self, counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn set(&self, counter: &AtomicU64, n: usize) {
        counter.store(n as u64, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
