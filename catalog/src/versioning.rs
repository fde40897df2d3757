//! Merges, cherry-picks and reverts: history moved between branches. Each lands on a branch
//! only by compare-and-swap from the head it was computed against, and not at all when
//! conflicts remain.

use std::collections::BTreeMap;

use pangolin_merge::{
    BranchTarget, CommitMeta as MergeMeta, LandError, Landed, MergeOptions, MergeOutcome,
    PickOptions, PickOutcome, cherry_pick_onto_branch, merge_into_branch, revert_on_branch,
};
use pangolin_refs::Reference;
use pangolin_store::{ObjectId, Timestamp};

use crate::address::RefSpec;
use crate::catalog::{Catalog, ResolveError};
use crate::merge_requests::Protected;

#[derive(Debug, thiserror::Error)]
pub enum MergeRefError {
    #[error("cannot change `{0}`: merges, cherry-picks and reverts land on a branch")]
    TargetNotBranch(RefSpec),
    #[error(transparent)]
    Protected(#[from] Protected),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Land(#[from] LandError),
}

/// Who asks for a history operation, and what it says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRequest {
    pub principal: String,
    /// The commit message; a default naming the operation when `None`.
    pub message: Option<String>,
    /// The head the caller saw: nothing lands if the branch moved since.
    pub expected_head: Option<ObjectId>,
}

impl HistoryRequest {
    fn meta(&self, default_message: String, operation: &str, source: String) -> MergeMeta {
        MergeMeta {
            author: self.principal.clone(),
            committer: self.principal.clone(),
            message: self.message.clone().unwrap_or(default_message),
            properties: BTreeMap::from([
                ("operation".to_owned(), operation.to_owned()),
                ("source".to_owned(), source),
            ]),
            time: Timestamp::now(),
        }
    }
}

impl Catalog {
    /// The branch a history operation lands on: never a protected one, which takes merges
    /// only through merge requests.
    async fn target_branch(&self, target: &RefSpec) -> Result<Reference, MergeRefError> {
        let branch = self
            .resolve(target)
            .await?
            .writable_branch
            .ok_or_else(|| MergeRefError::TargetNotBranch(target.clone()))?;
        self.check_unprotected(&branch)?;
        Ok(branch)
    }

    /// Merges what `source` names into branch `target`.
    #[tracing::instrument(level = "debug", skip(self, options, request), fields(catalog = %self.name()))]
    pub async fn merge(
        &self,
        source: &RefSpec,
        target: &RefSpec,
        options: &MergeOptions,
        request: &HistoryRequest,
    ) -> Result<Landed<MergeOutcome>, MergeRefError> {
        let source_commit = self.resolve(source).await?.commit;
        let branch = self.target_branch(target).await?;
        let meta = request.meta(
            format!("merge {source} into {target}"),
            "merge",
            source.to_string(),
        );
        Ok(merge_into_branch(
            self.odb(),
            self.store().as_ref(),
            BranchTarget {
                repo: self.odb().repo(),
                branch: &branch,
                expected_head: request.expected_head,
            },
            source_commit,
            options,
            &meta,
        )
        .await?)
    }

    /// Replays the changes of `picks` (oldest first) on branch `onto`.
    #[tracing::instrument(level = "debug", skip(self, options, request), fields(catalog = %self.name()))]
    pub async fn cherry_pick(
        &self,
        picks: &[RefSpec],
        onto: &RefSpec,
        options: &PickOptions,
        request: &HistoryRequest,
    ) -> Result<Landed<PickOutcome>, MergeRefError> {
        let mut commits = Vec::with_capacity(picks.len());
        for pick in picks {
            commits.push(self.resolve(pick).await?.commit);
        }
        let branch = self.target_branch(onto).await?;
        let names: Vec<String> = commits.iter().map(|c| c.short(12)).collect();
        let meta = request.meta(
            format!("cherry-pick {} onto {onto}", names.join(", ")),
            "cherry-pick",
            names.join(","),
        );
        Ok(cherry_pick_onto_branch(
            self.odb(),
            self.store().as_ref(),
            BranchTarget {
                repo: self.odb().repo(),
                branch: &branch,
                expected_head: request.expected_head,
            },
            &commits,
            options,
            &meta,
        )
        .await?)
    }

    /// Undoes the changes of `commit` with a new commit on branch `on`.
    #[tracing::instrument(level = "debug", skip(self, options, request), fields(catalog = %self.name()))]
    pub async fn revert(
        &self,
        commit: &RefSpec,
        on: &RefSpec,
        options: &PickOptions,
        request: &HistoryRequest,
    ) -> Result<Landed<PickOutcome>, MergeRefError> {
        let reverted = self.resolve(commit).await?.commit;
        let branch = self.target_branch(on).await?;
        let meta = request.meta(
            format!("revert {}", reverted.short(12)),
            "revert",
            reverted.to_hex(),
        );
        Ok(revert_on_branch(
            self.odb(),
            self.store().as_ref(),
            BranchTarget {
                repo: self.odb().repo(),
                branch: &branch,
                expected_head: request.expected_head,
            },
            reverted,
            options,
            &meta,
        )
        .await?)
    }
}
