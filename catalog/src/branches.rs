//! Branches and tags of a catalog: list (with divergence from the default branch), create,
//! move, delete.

use std::collections::HashSet;

use pangolin_refs::{
    Expected, RefKind, RefName, RefQuery, RefUpdate, Reference, Target, TransactError, Transaction,
};
use pangolin_store::history::is_ancestor;
use pangolin_store::{BackendError, ObjectId, ReadError, Timestamp};

use crate::address::RefSpec;
use crate::catalog::{Catalog, DEFAULT_BRANCH, ResolveError};
use crate::merge_requests::Protected;

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
pub enum ListRefsError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Read(#[from] ReadError),
}

#[derive(Debug, thiserror::Error)]
pub enum UpdateRefError {
    #[error("{0} does not exist")]
    Missing(Reference),
    #[error("{0} is a tag: tags do not move; delete it and create it again")]
    TagImmutable(Reference),
    #[error("the default branch `{0}` cannot be deleted")]
    DefaultBranch(RefName),
    #[error(transparent)]
    Protected(#[from] Protected),
    #[error("{reference} is at {actual}, not at the expected {expected}")]
    Stale {
        reference: Reference,
        expected: ObjectId,
        actual: String,
    },
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("updating the ref: {0}")]
    Transact(TransactError),
}

/// A branch or tag with where it points and, for branches, how far it is from the default
/// branch along first parents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefInfo {
    pub reference: Reference,
    pub head: ObjectId,
    /// Commits on this branch that the default branch does not have.
    pub ahead: Option<u64>,
    /// Commits on the default branch that this branch does not have.
    pub behind: Option<u64>,
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

    /// Branches and tags (only `kind` when given) whose names start with `prefix`, after
    /// `after`, at most `limit`; and the ref to continue after when more follow.
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn list_refs(
        &self,
        kind: Option<RefKind>,
        prefix: &str,
        after: Option<Reference>,
        limit: usize,
    ) -> Result<(Vec<RefInfo>, Option<Reference>), ListRefsError> {
        let query = RefQuery {
            kind,
            prefix: prefix.to_owned(),
            after,
            limit,
        };
        let page = self.store().list_refs(self.odb().repo(), &query).await?;
        let main = self
            .store()
            .get_ref(self.odb().repo(), &self.default_branch())
            .await?;
        let mut out = Vec::with_capacity(page.refs.len());
        for (reference, head) in page.refs {
            let (ahead, behind) = match (reference.kind, main) {
                (RefKind::Branch, Some(main)) => {
                    let (ahead, behind) = self.divergence(head, main).await?;
                    (Some(ahead), Some(behind))
                }
                _ => (None, None),
            };
            out.push(RefInfo {
                reference,
                head,
                ahead,
                behind,
            });
        }
        Ok((out, page.next_after))
    }

    /// Commits reachable from `a` but not from `b`, and the reverse (as `git rev-list --count
    /// b..a` and `a..b`).
    async fn divergence(&self, a: ObjectId, b: ObjectId) -> Result<(u64, u64), ReadError> {
        if a == b {
            return Ok((0, 0));
        }
        Ok((
            self.count_only_in(a, b).await?,
            self.count_only_in(b, a).await?,
        ))
    }

    /// Commits reachable from `tip` that are not ancestors of `other`. The walk stops at each
    /// shared commit, so it costs the commits counted, each with an O(log n) ancestry check.
    async fn count_only_in(&self, tip: ObjectId, other: ObjectId) -> Result<u64, ReadError> {
        let odb = self.odb();
        let mut seen = HashSet::from([tip]);
        let mut pending = vec![tip];
        let mut count = 0;
        while let Some(id) = pending.pop() {
            if is_ancestor(odb, id, other).await? {
                continue;
            }
            count += 1;
            for parent in &odb.commit(&id).await?.parents {
                if seen.insert(*parent) {
                    pending.push(*parent);
                }
            }
        }
        Ok(count)
    }

    /// Moves branch `name` to the commit `to` names, if it is still at `expected`.
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn assign_branch(
        &self,
        name: &RefName,
        to: &RefSpec,
        expected: ObjectId,
        principal: &str,
    ) -> Result<(Reference, ObjectId), UpdateRefError> {
        let reference = self.existing_ref(name).await?;
        if reference.kind == RefKind::Tag {
            return Err(UpdateRefError::TagImmutable(reference));
        }
        self.check_unprotected(&reference)?;
        let target = self.resolve(to).await?.commit;
        self.transact_one(
            &reference,
            expected,
            Target::Set(target),
            principal,
            format!("move {reference} to {to}"),
        )
        .await?;
        Ok((reference, target))
    }

    /// Deletes branch or tag `name`, if it is still at `expected` (any head when `None`).
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn delete_ref(
        &self,
        name: &RefName,
        expected: Option<ObjectId>,
        principal: &str,
    ) -> Result<Reference, UpdateRefError> {
        if name.as_str() == DEFAULT_BRANCH {
            return Err(UpdateRefError::DefaultBranch(name.clone()));
        }
        let reference = self.existing_ref(name).await?;
        self.check_unprotected(&reference)?;
        let expected = match expected {
            Some(hash) => hash,
            None => self
                .store()
                .get_ref(self.odb().repo(), &reference)
                .await?
                .ok_or_else(|| UpdateRefError::Missing(reference.clone()))?,
        };
        self.transact_one(
            &reference,
            expected,
            Target::Delete,
            principal,
            format!("delete {reference}"),
        )
        .await?;
        Ok(reference)
    }

    /// The branch named `name`, else the tag.
    async fn existing_ref(&self, name: &RefName) -> Result<Reference, UpdateRefError> {
        for kind in [RefKind::Branch, RefKind::Tag] {
            let reference = Reference {
                kind,
                name: name.clone(),
            };
            if self
                .store()
                .get_ref(self.odb().repo(), &reference)
                .await?
                .is_some()
            {
                return Ok(reference);
            }
        }
        Err(UpdateRefError::Missing(Reference::branch(name.clone())))
    }

    pub(crate) async fn transact_one(
        &self,
        reference: &Reference,
        expected: ObjectId,
        target: Target,
        principal: &str,
        message: String,
    ) -> Result<(), UpdateRefError> {
        let tx = Transaction {
            updates: vec![RefUpdate {
                reference: reference.clone(),
                expected: Expected::Equals(expected),
                target,
            }],
            principal: principal.to_owned(),
            message,
            time: Timestamp::now(),
        };
        match self.store().transact(self.odb().repo(), tx).await {
            Ok(_) => Ok(()),
            Err(TransactError::OutOfDate { actual, .. }) => Err(UpdateRefError::Stale {
                reference: reference.clone(),
                expected,
                actual: actual.map_or_else(|| "nothing".to_owned(), |a| a.to_hex()),
            }),
            Err(TransactError::Backend(e)) => Err(e.into()),
            Err(other) => Err(UpdateRefError::Transact(other)),
        }
    }
}
