//! The objects reachable from a set of commits, and the refs and ref logs that name them.
//!
//! Exports and the mark phase of the file sweep both walk a catalog's whole history. Objects
//! are immutable and shared by every commit that did not change them, so a walk that reads each
//! id once costs the number of distinct objects, not commits times catalog size.

use std::collections::HashSet;
use std::sync::Arc;

use pangolin_refs::{LogQuery, ObjectQuery, RefQuery, Reference};
use pangolin_store::{
    BackendError, Commit, Object, ObjectId, ObjectKind, ObjectStore, RawObject, RepoId, Timestamp,
};

use crate::store::Store;

/// Objects read from the store at once.
const BATCH: usize = 256;

/// Refs and ref-log entries read at once.
const PAGE: usize = 1000;

/// Object ids listed at once.
const LIST_PAGE: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    #[error("object {0} is reachable from a ref but not stored: the catalog is damaged")]
    Missing(ObjectId),
    #[error("object {id} is damaged: {reason}")]
    Corrupt { id: ObjectId, reason: String },
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Every branch and tag with its head, in ref order.
pub async fn all_refs(
    store: &dyn Store,
    repo: &RepoId,
) -> Result<Vec<(Reference, ObjectId)>, BackendError> {
    let mut refs = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_refs(
                repo,
                &RefQuery {
                    kind: None,
                    prefix: String::new(),
                    after,
                    limit: PAGE,
                },
            )
            .await?;
        refs.extend(page.refs);
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(refs),
        }
    }
}

/// Every commit the log of `reference` says it pointed at, with when it started to, newest
/// first: what `ref#<time>` can resolve to.
pub async fn logged_heads(
    store: &dyn Store,
    repo: &RepoId,
    reference: &Reference,
) -> Result<Vec<(ObjectId, Timestamp)>, BackendError> {
    let mut heads = Vec::new();
    let mut before = None;
    loop {
        let entries = store
            .ref_log(
                repo,
                reference,
                LogQuery {
                    before,
                    limit: PAGE,
                },
            )
            .await?;
        heads.extend(
            entries
                .iter()
                .filter_map(|e| e.new.map(|new| (new, e.time))),
        );
        match entries.last() {
            Some(last) if entries.len() == PAGE => before = Some(last.sequence),
            _ => return Ok(heads),
        }
    }
}

/// Every object `repo` stores, or every one of `kind`, with its kind, in id order.
pub async fn stored_objects(
    store: &dyn Store,
    repo: &RepoId,
    kind: Option<ObjectKind>,
    mut listed: impl FnMut(usize),
) -> Result<Vec<(ObjectId, ObjectKind)>, BackendError> {
    let mut objects = Vec::new();
    let mut query = ObjectQuery {
        kind,
        after: None,
        limit: LIST_PAGE,
    };
    loop {
        let page = store.list_objects(repo, query).await?;
        let Some((last, _)) = page.last().copied() else {
            return Ok(objects);
        };
        listed(page.len());
        objects.extend(page);
        query.after = Some(last);
    }
}

/// The commits among `ids`, read in batches. Ids no longer stored (a concurrent collection
/// took them) are skipped.
pub async fn read_commits(
    store: &dyn ObjectStore,
    repo: &RepoId,
    ids: &[ObjectId],
) -> Result<Vec<(ObjectId, Arc<Commit>)>, ReachError> {
    let mut commits = Vec::with_capacity(ids.len());
    for batch in ids.chunks(BATCH) {
        for (id, raw) in batch.iter().zip(store.get_many(repo, batch).await?) {
            let Some(raw) = raw else { continue };
            let corrupt = |reason: String| ReachError::Corrupt { id: *id, reason };
            let Object::Commit(commit) =
                Object::decode(&raw).map_err(|e| corrupt(e.to_string()))?
            else {
                return Err(corrupt(
                    "listed as a commit, stored as a tree node".to_owned(),
                ));
            };
            commits.push((*id, commit));
        }
    }
    Ok(commits)
}

/// The objects an object points to: a commit's parents, tree and skip pointers; an inner
/// node's children.
pub fn references(object: &Object) -> Vec<ObjectId> {
    match object {
        Object::Commit(commit) => commit
            .parents
            .iter()
            .chain(std::iter::once(&commit.tree))
            .chain(&commit.skips)
            .copied()
            .collect(),
        Object::Tree(node) => match node.view() {
            pangolin_store::tree::NodeView::Leaf { .. } => Vec::new(),
            pangolin_store::tree::NodeView::Inner { children, .. } => {
                children.iter().map(|c| c.id).collect()
            }
        },
    }
}

/// A walk over the objects reachable from the ids pushed, each read once. Ids pushed after
/// the walk ran are walked too, skipping everything already read.
#[derive(Debug, Default)]
pub struct Reach {
    seen: HashSet<ObjectId>,
    frontier: Vec<ObjectId>,
    /// Whether a missing object is counted instead of failing the walk.
    lenient: bool,
    missing: usize,
}

impl Reach {
    pub fn push(&mut self, id: ObjectId) {
        if self.seen.insert(id) {
            self.frontier.push(id);
        }
    }

    /// From now on, count objects that are not stored (see [`missing`](Self::missing))
    /// instead of failing: for history an earlier collection may have removed.
    pub fn set_lenient(&mut self, lenient: bool) {
        self.lenient = lenient;
    }

    /// Objects met while lenient that are not stored.
    pub fn missing(&self) -> usize {
        self.missing
    }

    /// Whether `id` was pushed or reached.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.seen.contains(id)
    }

    /// How many distinct objects were pushed or reached so far.
    pub fn seen(&self) -> usize {
        self.seen.len()
    }

    /// The next objects of the walk (none once it is over), their references pushed.
    pub async fn next(
        &mut self,
        store: &dyn ObjectStore,
        repo: &RepoId,
    ) -> Result<Vec<(RawObject, Object)>, ReachError> {
        self.next_beyond(store, repo, None).await
    }

    /// As [`next`](Self::next), never reading what `known` holds (another walk's objects).
    pub async fn next_beyond(
        &mut self,
        store: &dyn ObjectStore,
        repo: &RepoId,
        known: Option<&Reach>,
    ) -> Result<Vec<(RawObject, Object)>, ReachError> {
        let at = self.frontier.len().saturating_sub(BATCH);
        let ids = self.frontier.split_off(at);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let found = store.get_many(repo, &ids).await?;
        let mut batch = Vec::with_capacity(ids.len());
        for (id, raw) in ids.into_iter().zip(found) {
            let raw = match raw {
                Some(raw) => raw,
                None if self.lenient => {
                    self.missing += 1;
                    continue;
                }
                None => return Err(ReachError::Missing(id)),
            };
            let object = Object::decode(&raw).map_err(|e| ReachError::Corrupt {
                id,
                reason: e.to_string(),
            })?;
            for next in references(&object) {
                if known.is_none_or(|known| !known.contains(&next)) {
                    self.push(next);
                }
            }
            batch.push((raw, object));
        }
        Ok(batch)
    }
}
