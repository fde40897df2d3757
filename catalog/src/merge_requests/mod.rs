//! Merge requests: a branch proposed for merging into another, checked on exactly the commit
//! the target would become.
//!
//! A catalog's protection names branches (`main`, `release/*`) that change only through
//! requests, each with the checks a request must pass: built-in rules over the merge's changes
//! (no dropped columns, no lost rows, forbidden kinds of change) and webhook checks, which ask
//! an endpoint. A run of the checks writes the merge commit without referencing it, judges
//! that commit, and is stored on the request with the two heads it was computed on; merging
//! moves the target to that very commit, and runs the checks again when either head moved.
//!
//! ```text
//! merge-requests/counter/<tenant>/<catalog>          the last number given
//! merge-requests/requests/<tenant>/<catalog>/<n>     a request (newest first by key)
//! ```

mod checks;
mod protection;
mod request;
mod run;

use std::sync::Arc;

pub use checks::{CheckResult, CheckSpec};
pub use protection::{BranchProtection, MAX_CHECKS, MAX_RULES, Protected, ProtectionRule};
pub use request::{
    CheckRun, CreateMergeRequestError, GetMergeRequestError, InvalidMergeRequest, MergeRequest,
    MergedBy, NewMergeRequest, RequestPage, RequestState, Verdict,
};
pub use run::{
    CheckInput, ExternalChecks, ExternalVerdict, MergeRequestError, NoExternalChecks,
    RunChecksError,
};

use crate::store::Store;

/// The merge requests of every tenant's catalogs.
#[derive(Clone)]
pub struct MergeRequests {
    store: Arc<dyn Store>,
}

impl std::fmt::Debug for MergeRequests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeRequests").finish_non_exhaustive()
    }
}

impl MergeRequests {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    fn records(&self) -> &dyn pangolin_records::RecordStore {
        self.store.as_ref()
    }
}
