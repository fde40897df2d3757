//! Deleting the store objects of a catalog that nothing retained reaches: commits and tree
//! nodes left by deleted branches, by refs reset past them, and by writes that never landed.
//!
//! Kept: everything reachable (whole ancestry, every tree) from the head of every branch and
//! tag, of every remote's tracking refs and of every transfer arriving, from every commit their ref logs record within the ref's retention window, and from
//! every other commit made within the catalog's window (a bare hash can still read it). So
//! `log`, merge bases and every read the retention policy allows keep working, and a catalog
//! without a policy keeps every commit: only objects no commit names can go. Windows are
//! widened by [`SLACK_MS`], so a read or a branch creation that passed its retention check
//! moments before the collection began cannot lose its commit.
//!
//! Writers keep running. Deletes go in batches, each done by the backend only if no ref of
//! the catalog moved since the number the walk started from ([`Prune`]); when one did, history
//! is walked again from the refs as they are now and the rest of the batch list is filtered
//! again. Objects stored after the listing are never candidates.
//!
//! [`Prune`]: pangolin_refs::Prune

use std::collections::HashSet;
use std::sync::Arc;

use pangolin_store::{BackendError, ObjectId, ObjectKind, Timestamp};

use crate::catalog::Catalog;
use crate::orphans::{Forgotten, Marks, Phase, SweepProgress};
use crate::reach::{self, Reach, ReachError};

/// How much longer than their windows history is kept.
pub const SLACK_MS: i64 = 3600 * 1000;

/// Objects deleted in one backend call.
const DELETE_BATCH: usize = 1000;

/// Times history may be walked again because writers moved refs during the deletes.
const MAX_REWALKS: usize = 50;

/// What a collection is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectRequest {
    /// Count what would go; delete nothing.
    pub dry_run: bool,
    /// How much longer than their windows commits are kept: [`SLACK_MS`] unless a test
    /// wants otherwise.
    pub slack_ms: i64,
}

impl CollectRequest {
    pub fn new(dry_run: bool) -> Self {
        Self {
            dry_run,
            slack_ms: SLACK_MS,
        }
    }
}

/// What a collection found, and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectReport {
    /// When it began.
    pub started_ms: i64,
    /// Unreachable commits older than this (minus the slack) could go; `None` without a
    /// retention policy: every commit is kept.
    pub history_cutoff_ms: Option<i64>,
    /// Objects the catalog stored when they were listed.
    pub objects: usize,
    /// Of those, reached from refs, retained ref-log entries and retained commits.
    pub reachable: usize,
    /// Commits no ref reaches, kept because they are inside the catalog's window.
    pub retained_commits: usize,
    pub unreachable: usize,
    pub unreachable_commits: usize,
    /// Objects deleted: `unreachable`, or 0 in a dry run.
    pub deleted: usize,
    /// Times history was walked again because writers moved refs meanwhile.
    pub rewalks: usize,
    /// Objects retained history names that an earlier collection removed (its window was
    /// shorter then).
    pub missing: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    History(#[from] ReachError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Folders(#[from] crate::orphans::MarkError),
    #[error(transparent)]
    Forgotten(#[from] crate::orphans::ForgottenError),
    #[error(transparent)]
    Records(#[from] crate::tenancy::records::RecordsError),
    #[error(
        "refs moved during each of {0} attempts to delete; {1} objects were deleted, the rest \
         are kept: run it again when fewer writers are busy"
    )]
    Busy(usize, usize),
}

impl Catalog {
    /// Finds, and unless `dry_run` deletes, the objects of the catalog that nothing retained
    /// reaches (see the module documentation), counting what it does in `progress`.
    #[tracing::instrument(level = "info", skip_all, fields(tenant = %self.tenant(), catalog = %self.name(), dry_run = request.dry_run))]
    pub async fn collect_objects(
        &self,
        request: CollectRequest,
        progress: Arc<SweepProgress>,
    ) -> Result<CollectReport, CollectError> {
        let CollectRequest { dry_run, slack_ms } = request;
        let store = self.store().as_ref();
        let repo = self.odb().repo();
        let now = Timestamp::now();
        let mut report = CollectReport {
            started_ms: now.as_millis(),
            history_cutoff_ms: self
                .retention()
                .map(|policy| policy.catalog_cutoff(now).as_millis()),
            ..CollectReport::default()
        };
        progress.enter(Phase::Marking);
        // Read before the walk: a move after it makes every delete re-check.
        let mut moves = store.ref_moves(repo).await?;
        let mut reach = Reach::default();
        self.reach_retained(&mut reach, now, slack_ms, &progress)
            .await?;

        progress.enter(Phase::Listing);
        let listed = reach::stored_objects(store, repo, None, |n| {
            progress.add(&progress.objects_listed, n);
        })
        .await?;
        report.objects = listed.len();
        self.reach_transfers(&mut reach, &progress).await?;
        let mut unreachable = Vec::new();
        let mut commits = Vec::new();
        for (id, kind) in listed.into_iter().filter(|(id, _)| !reach.contains(id)) {
            unreachable.push(id);
            if kind == ObjectKind::Commit {
                commits.push(id);
            }
        }

        // Commits no ref reaches but a bare hash may still read.
        let keep_after = report
            .history_cutoff_ms
            .map(|cutoff| cutoff.saturating_sub(slack_ms));
        for (id, commit) in reach::read_commits(store, repo, &commits).await? {
            if keep_after.is_none_or(|after| commit.time.as_millis() >= after) {
                report.retained_commits += 1;
                reach.push(id);
            }
        }
        // Those not kept stay unreachable unless a kept one reaches them.
        let unreachable_commits: HashSet<ObjectId> = commits.into_iter().collect();
        walk(self, &mut reach, &progress).await?;
        report.missing = reach.missing();
        unreachable.retain(|id| !reach.contains(id));
        report.reachable = report.objects - unreachable.len();
        report.unreachable = unreachable.len();
        progress.set(&progress.unreachable, unreachable.len());
        let commits_among = |ids: &[ObjectId]| {
            ids.iter()
                .filter(|id| unreachable_commits.contains(id))
                .count()
        };
        report.unreachable_commits = commits_among(&unreachable);
        tracing::info!(
            objects = report.objects,
            unreachable = report.unreachable,
            commits = report.unreachable_commits,
            "marked"
        );
        if dry_run {
            progress.enter(Phase::Done);
            return Ok(report);
        }

        if report.unreachable_commits > 0 {
            self.record_stale_folders(&progress).await?;
        }
        progress.enter(Phase::Deleting);
        let mut done = 0;
        while done < unreachable.len() {
            let batch = &unreachable[done..(done + DELETE_BATCH).min(unreachable.len())];
            if store.delete_objects(repo, moves, batch).await? {
                self.cache().forget(repo, batch);
                done += batch.len();
                report.deleted += batch.len();
                progress.add(&progress.deleted, batch.len());
                continue;
            }
            // A ref moved: what it points at now, or its log records, may reach candidates.
            report.rewalks += 1;
            if report.rewalks > MAX_REWALKS {
                return Err(CollectError::Busy(MAX_REWALKS, report.deleted));
            }
            progress.enter(Phase::Remarking);
            moves = store.ref_moves(repo).await?;
            self.reach_retained(&mut reach, now, slack_ms, &progress)
                .await?;
            self.reach_transfers(&mut reach, &progress).await?;
            let rest: Vec<ObjectId> = unreachable
                .split_off(done)
                .into_iter()
                .filter(|id| !reach.contains(id))
                .collect();
            unreachable.extend(rest);
            progress.enter(Phase::Deleting);
        }
        // Walks during the deletes may have reached some after all.
        report.unreachable = unreachable.len();
        report.unreachable_commits = commits_among(&unreachable);
        report.missing = reach.missing();
        progress.enter(Phase::Done);
        tracing::info!(
            deleted = report.deleted,
            rewalks = report.rewalks,
            "collected"
        );
        Ok(report)
    }

    /// Records the folders of the tables and views that commits past every window name, so
    /// that sweeps still find them once those commits are gone (see
    /// [`forgotten`](crate::orphans::forgotten)).
    async fn record_stale_folders(&self, progress: &SweepProgress) -> Result<(), CollectError> {
        let Some(warehouse) = self.warehouse_ref() else {
            return Ok(());
        };
        let folders = Marks::stale_folders(self, warehouse.io.as_ref(), progress).await?;
        tracing::info!(
            folders = folders.len(),
            "recording folders of stale commits"
        );
        Forgotten::new(self.store().as_ref(), self.tenant(), self.name())?
            .add(folders)
            .await?;
        Ok(())
    }

    /// Walks, beyond what `reach` already holds, everything reachable from the heads of the
    /// catalog's refs and from the commits their logs record within their windows.
    async fn reach_retained(
        &self,
        reach: &mut Reach,
        now: Timestamp,
        slack_ms: i64,
        progress: &SweepProgress,
    ) -> Result<(), CollectError> {
        let store = self.store().as_ref();
        let repo = self.odb().repo();
        let refs = reach::all_refs(store, repo).await?;
        // Heads must be whole: a missing object there is damage, and nothing is deleted.
        reach.set_lenient(false);
        for (_, head) in &refs {
            reach.push(*head);
        }
        walk(self, reach, progress).await?;
        // Logged commits past an earlier, shorter window may be gone already.
        reach.set_lenient(true);
        for (reference, _) in refs {
            let cutoff = self.retention().map(|policy| {
                policy
                    .cutoff(&reference, now)
                    .as_millis()
                    .saturating_sub(slack_ms)
            });
            for (logged, time) in reach::logged_heads(store, repo, &reference).await? {
                if cutoff.is_none_or(|cutoff| time.as_millis() >= cutoff) {
                    reach.push(logged);
                }
            }
        }
        walk(self, reach, progress).await
    }
}

impl Catalog {
    /// Walks, beyond what `reach` holds, what remotes' tracking refs and transfers in
    /// progress reach. Read after the listing: a transfer whose objects were listed placed
    /// its hold before storing them, and records its refs before releasing it (or moves refs,
    /// which the deletes notice), so reading the holds first and then the tracking refs
    /// misses none.
    async fn reach_transfers(
        &self,
        reach: &mut Reach,
        progress: &SweepProgress,
    ) -> Result<(), CollectError> {
        // A transfer's objects arrive as they come: what is stored so far is walked.
        reach.set_lenient(true);
        for head in crate::remotes::kept_heads(self).await? {
            reach.push(head);
        }
        walk(self, reach, progress).await
    }
}

async fn walk(
    catalog: &Catalog,
    reach: &mut Reach,
    progress: &SweepProgress,
) -> Result<(), CollectError> {
    let store = catalog.store().as_ref();
    let repo = catalog.odb().repo();
    loop {
        let batch = reach.next(store, repo).await?;
        if batch.is_empty() {
            return Ok(());
        }
        progress.add(&progress.objects_read, batch.len());
    }
}
