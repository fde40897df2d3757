//! Branches, tags and merges of a catalog.

use pangolin_merge::{
    BranchTarget, CommitMeta as MergeMeta, LandError, Landed, MergeOptions, MergeOutcome,
    merge_into_branch,
};
use pangolin_refs::{
    Expected, RefKind, RefName, RefUpdate, Reference, Target, TransactError, Transaction,
};
use pangolin_store::{BackendError, ObjectId, Timestamp};

use crate::address::RefSpec;
use crate::catalog::{Catalog, ResolveError};

#[derive(Debug, thiserror::Error)]
pub enum CreateRefError {
    #[error("{0} already exists")]
    Exists(Reference),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("creating the ref: {0}")]
    Transact(TransactError),
}

#[derive(Debug, thiserror::Error)]
pub enum MergeRefError {
    #[error("cannot merge into `{0}`: merges land on a branch")]
    TargetNotBranch(RefSpec),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Land(#[from] LandError),
}

impl Catalog {
    /// Creates branch or tag `name` at the commit `from` names.
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn create_ref(
        &self,
        kind: RefKind,
        name: RefName,
        from: &RefSpec,
        principal: &str,
    ) -> Result<(Reference, ObjectId), CreateRefError> {
        let commit = self.resolve(from).await?.commit;
        let reference = Reference { kind, name };
        // A branch and a tag of the same name would make `name` ambiguous in addresses.
        let other = Reference {
            kind: match kind {
                RefKind::Branch => RefKind::Tag,
                RefKind::Tag => RefKind::Branch,
            },
            name: reference.name.clone(),
        };
        if self
            .store()
            .get_ref(self.odb().repo(), &other)
            .await?
            .is_some()
        {
            return Err(CreateRefError::Exists(other));
        }
        let tx = Transaction {
            updates: vec![RefUpdate {
                reference: reference.clone(),
                expected: Expected::Absent,
                target: Target::Set(commit),
            }],
            principal: principal.to_owned(),
            message: format!("create {reference} from {from}"),
            time: Timestamp::now(),
        };
        match self.store().transact(self.odb().repo(), tx).await {
            Ok(_) => Ok((reference, commit)),
            Err(TransactError::OutOfDate { .. }) => Err(CreateRefError::Exists(reference)),
            Err(TransactError::Backend(e)) => Err(e.into()),
            Err(other) => Err(CreateRefError::Transact(other)),
        }
    }

    /// Merges what `source` names into branch `target`.
    #[tracing::instrument(level = "debug", skip(self, options), fields(catalog = %self.name()))]
    pub async fn merge(
        &self,
        source: &RefSpec,
        target: &RefSpec,
        expected_head: Option<ObjectId>,
        options: &MergeOptions,
        principal: &str,
        message: Option<String>,
    ) -> Result<Landed<MergeOutcome>, MergeRefError> {
        let source_commit = self.resolve(source).await?.commit;
        let branch = self
            .resolve(target)
            .await?
            .writable_branch
            .ok_or_else(|| MergeRefError::TargetNotBranch(target.clone()))?;
        let meta = MergeMeta {
            author: principal.to_owned(),
            committer: principal.to_owned(),
            message: message.unwrap_or_else(|| format!("merge {source} into {target}")),
            properties: [
                ("operation".to_owned(), "merge".to_owned()),
                ("source".to_owned(), source.to_string()),
            ]
            .into(),
            time: Timestamp::now(),
        };
        let landed = merge_into_branch(
            self.odb(),
            self.store().as_ref(),
            BranchTarget {
                repo: self.odb().repo(),
                branch: &branch,
                expected_head,
            },
            source_commit,
            options,
            &meta,
        )
        .await?;
        Ok(landed)
    }
}
