//! Refs and ref logs: one mutex-guarded state per repository.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use pangolin_refs::{
    LogQuery, RefLogEntry, RefPage, RefQuery, RefStore, Reference, RepoLogQuery, TransactError,
    Transaction,
};
use pangolin_store::{BackendError, ObjectId, RepoId, Timestamp};
use parking_lot::Mutex;

use crate::MemoryBackend;

/// The refs of one repository and their log.
#[derive(Debug, Default)]
pub struct RepoRefs {
    pub(crate) heads: BTreeMap<Reference, ObjectId>,
    /// Per ref, its entries in sequence order.
    pub(crate) log: BTreeMap<Reference, Vec<RefLogEntry>>,
    pub(crate) next_sequence: u64,
}

impl MemoryBackend {
    pub(crate) fn repo_refs(&self, repo: &RepoId) -> Arc<Mutex<RepoRefs>> {
        if let Some(refs) = self.refs.read().get(repo) {
            return refs.clone();
        }
        self.refs.write().entry(repo.clone()).or_default().clone()
    }

    fn existing_repo_refs(&self, repo: &RepoId) -> Option<Arc<Mutex<RepoRefs>>> {
        self.refs.read().get(repo).cloned()
    }
}

#[async_trait]
impl RefStore for MemoryBackend {
    async fn get_ref(
        &self,
        repo: &RepoId,
        reference: &Reference,
    ) -> Result<Option<ObjectId>, BackendError> {
        Ok(self
            .existing_repo_refs(repo)
            .and_then(|r| r.lock().heads.get(reference).copied()))
    }

    async fn list_refs(&self, repo: &RepoId, query: &RefQuery) -> Result<RefPage, BackendError> {
        let Some(refs) = self.existing_repo_refs(repo) else {
            return Ok(RefPage {
                refs: Vec::new(),
                next_after: None,
            });
        };
        let refs = refs.lock();
        let mut matching = refs
            .heads
            .iter()
            .filter(|(r, _)| query.after.as_ref().is_none_or(|after| *r > after))
            .filter(|(r, _)| query.kind.is_none_or(|k| r.kind == k))
            .filter(|(r, _)| r.name.as_str().starts_with(&query.prefix))
            .map(|(r, id)| (r.clone(), *id));
        let page: Vec<_> = matching.by_ref().take(query.limit).collect();
        let next_after = match matching.next() {
            Some(_) => page.last().map(|(r, _)| r.clone()),
            None => None,
        };
        Ok(RefPage {
            refs: page,
            next_after,
        })
    }

    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        tx.validate()?;
        let refs = self.repo_refs(repo);
        let mut refs = refs.lock();
        refs.apply(tx)
    }

    async fn ref_log(
        &self,
        repo: &RepoId,
        reference: &Reference,
        query: LogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        let Some(refs) = self.existing_repo_refs(repo) else {
            return Ok(Vec::new());
        };
        let refs = refs.lock();
        let Some(entries) = refs.log.get(reference) else {
            return Ok(Vec::new());
        };
        Ok(entries
            .iter()
            .rev()
            .filter(|e| query.before.is_none_or(|before| e.sequence < before))
            .take(query.limit)
            .cloned()
            .collect())
    }

    async fn repository_log(
        &self,
        repo: &RepoId,
        query: RepoLogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        let Some(refs) = self.existing_repo_refs(repo) else {
            return Ok(Vec::new());
        };
        let refs = refs.lock();
        // A store for tests: every ref's log is scanned rather than indexed by sequence.
        let mut entries: Vec<RefLogEntry> = refs
            .log
            .values()
            .flatten()
            .filter(|e| query.after.is_none_or(|after| e.sequence > after))
            .cloned()
            .collect();
        entries.sort_unstable_by_key(|e| e.sequence);
        entries.truncate(query.limit);
        Ok(entries)
    }

    async fn ref_log_at(
        &self,
        repo: &RepoId,
        reference: &Reference,
        time: Timestamp,
    ) -> Result<Option<RefLogEntry>, BackendError> {
        let Some(refs) = self.existing_repo_refs(repo) else {
            return Ok(None);
        };
        let refs = refs.lock();
        let Some(entries) = refs.log.get(reference) else {
            return Ok(None);
        };
        // Times never decrease along one ref's log, so this is a binary search.
        let after = entries.partition_point(|e| e.time <= time);
        Ok(after.checked_sub(1).map(|i| entries[i].clone()))
    }
}

impl RepoRefs {
    /// Applies a validated transaction if every expectation holds.
    pub(crate) fn apply(&mut self, tx: Transaction) -> Result<Vec<RefLogEntry>, TransactError> {
        let refs = self;
        for update in &tx.updates {
            Transaction::check(update, refs.heads.get(&update.reference).copied())?;
        }
        let mut written = Vec::with_capacity(tx.updates.len());
        for update in tx.updates {
            let old = refs.heads.get(&update.reference).copied();
            let new = update.target.new_value();
            match new {
                Some(id) => refs.heads.insert(update.reference.clone(), id),
                None => refs.heads.remove(&update.reference),
            };
            let previous_time = refs
                .log
                .get(&update.reference)
                .and_then(|entries| entries.last())
                .map_or(tx.time, |e| e.time);
            let entry = RefLogEntry {
                sequence: refs.next_sequence,
                reference: update.reference.clone(),
                old,
                new,
                principal: tx.principal.clone(),
                message: tx.message.clone(),
                time: tx.time.max(previous_time),
            };
            refs.next_sequence += 1;
            refs.log
                .entry(update.reference)
                .or_default()
                .push(entry.clone());
            written.push(entry);
        }
        Ok(written)
    }
}
