//! What the catalog reports to the `metrics` facade (a no-op until the server installs a
//! recorder): commits, their latency and lost races, and group commit's publishes.

use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_histogram, histogram};

pub const COMMITS: &str = "pangolin_commits_total";
pub const COMMIT_SECONDS: &str = "pangolin_commit_duration_seconds";
pub const COMMIT_RETRIES: &str = "pangolin_commit_retries_total";
pub const PUBLISHES: &str = "pangolin_publishes_total";
pub const PUBLISH_SECONDS: &str = "pangolin_publish_duration_seconds";
pub const PUBLISH_BATCH: &str = "pangolin_publish_batch_commits";
/// Audit events written, by `written`: `with-commit` (by the publish of the commit they
/// record) or `alone` (requests that landed no commit; counted by the server).
pub const AUDIT_EVENTS: &str = "pangolin_audit_events_total";

/// Describes the catalog's metrics to the installed recorder.
pub fn describe() {
    describe_counter!(
        COMMITS,
        "Catalog commits by outcome: landed, empty (nothing to change), rejected (a failed \
         precondition), contention, missing-branch, failed"
    );
    describe_histogram!(
        COMMIT_SECONDS,
        Unit::Seconds,
        "Time from the start of a commit to its landing, replans included"
    );
    describe_counter!(
        COMMIT_RETRIES,
        "Plans made again because another writer moved the branch first"
    );
    describe_counter!(
        PUBLISHES,
        "Group-commit publishes (one durable write and one compare-and-swap each) by outcome: \
         landed, retry, missing-branch, failed"
    );
    describe_histogram!(
        PUBLISH_SECONDS,
        Unit::Seconds,
        "Time of one publish: objects and the branch move in one durable write"
    );
    describe_histogram!(PUBLISH_BATCH, "Commits carried by one publish");
    describe_counter!(
        AUDIT_EVENTS,
        "Audit events written: with-commit (in the publish of the commit they record) or alone"
    );
}

/// A commit that ended with `outcome` after `attempts` plans.
pub(crate) fn commit_ended(outcome: &'static str, attempts: u32, elapsed: Duration) {
    counter!(COMMITS, "outcome" => outcome).increment(1);
    if attempts > 1 {
        counter!(COMMIT_RETRIES).increment(u64::from(attempts - 1));
    }
    if outcome == "landed" {
        histogram!(COMMIT_SECONDS).record(elapsed.as_secs_f64());
    }
}

/// A publish of `commits` commits carrying `audited` audit events that ended with `outcome`.
pub(crate) fn published(outcome: &'static str, commits: usize, audited: usize, elapsed: Duration) {
    counter!(PUBLISHES, "outcome" => outcome).increment(1);
    if outcome == "landed" && audited > 0 {
        counter!(AUDIT_EVENTS, "written" => "with-commit").increment(audited as u64);
    }
    histogram!(PUBLISH_SECONDS).record(elapsed.as_secs_f64());
    histogram!(PUBLISH_BATCH).record(commits as f64);
}
