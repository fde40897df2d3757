//! Fixtures for merge tests: a repository on the memory backend with helpers to commit.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use pangolin_backend_memory::MemoryBackend;
use pangolin_merge::CommitMeta;
use pangolin_refs::{Expected, RefName, RefStore, RefUpdate, Reference, Target, Transaction};
use pangolin_store::history;
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{
    CommitDraft, Content, ContentId, ContentKey, Entry, ObjectCache, ObjectId, Odb, RepoId,
    Timestamp,
};
use uuid::Uuid;

pub fn key(path: &str) -> ContentKey {
    ContentKey::new(path.split('.')).unwrap()
}

/// A table with identity `id` in version `version`.
pub fn table(id: u128, version: u64) -> Entry {
    Entry {
        content_id: ContentId::from_uuid(Uuid::from_u128(id)),
        content: Content::IcebergTable {
            metadata_location: format!("s3://w/t{id}/metadata/{version:05}.metadata.json"),
            snapshot_id: Some(version as i64),
            schema_id: 0,
            spec_id: 0,
            sort_order_id: 0,
        },
    }
}

pub fn namespace(id: u128) -> Entry {
    Entry {
        content_id: ContentId::from_uuid(Uuid::from_u128(id)),
        content: Content::Namespace {
            properties: BTreeMap::new(),
        },
    }
}

pub fn branch(name: &str) -> Reference {
    Reference::branch(RefName::new(name).unwrap())
}

pub struct Repo {
    pub odb: Odb,
    pub refs: Arc<MemoryBackend>,
    pub repo: RepoId,
    clock: AtomicI64,
}

impl Repo {
    /// A repository whose `main` holds one root commit with `entries`.
    pub async fn new(entries: &[(ContentKey, Entry)]) -> Self {
        let backend = Arc::new(MemoryBackend::new());
        let repo = RepoId::new("merge-tests").unwrap();
        let odb = Odb::new(
            repo.clone(),
            backend.clone(),
            Arc::new(ObjectCache::new(64 << 20)),
        );
        let this = Self {
            odb,
            refs: backend,
            repo,
            clock: AtomicI64::new(1_000),
        };
        let sorted: BTreeMap<ContentKey, Entry> = entries.iter().cloned().collect();
        let tree = tree::build(&this.odb, sorted).await.unwrap();
        let draft = this.draft(vec![], tree, "root");
        let (root, _) = history::create(&this.odb, draft, this.tick())
            .await
            .unwrap();
        this.set(&branch("main"), root).await;
        this
    }

    pub fn tick(&self) -> Timestamp {
        Timestamp::from_millis(self.clock.fetch_add(10, Ordering::SeqCst))
    }

    pub fn meta(&self, message: &str) -> CommitMeta {
        CommitMeta {
            author: "ana".into(),
            committer: "pangolin".into(),
            message: message.into(),
            properties: BTreeMap::new(),
            time: self.tick(),
        }
    }

    fn draft(&self, parents: Vec<ObjectId>, tree: ObjectId, message: &str) -> CommitDraft {
        CommitDraft {
            parents,
            tree,
            author: "ana".into(),
            committer: "pangolin".into(),
            message: message.into(),
            properties: BTreeMap::new(),
        }
    }

    pub async fn head(&self, name: &str) -> ObjectId {
        self.refs
            .get_ref(&self.repo, &branch(name))
            .await
            .unwrap()
            .unwrap()
    }

    pub async fn set(&self, reference: &Reference, id: ObjectId) {
        let tx = Transaction {
            updates: vec![RefUpdate {
                reference: reference.clone(),
                expected: Expected::Any,
                target: Target::Set(id),
            }],
            principal: "test".into(),
            message: "set".into(),
            time: self.tick(),
        };
        self.refs.transact(&self.repo, tx).await.unwrap();
    }

    /// Creates `name` at the head of `from`.
    pub async fn branch_from(&self, name: &str, from: &str) {
        let head = self.head(from).await;
        self.set(&branch(name), head).await;
    }

    /// Commits `edits` on branch `name` and returns the new head.
    pub async fn commit(&self, name: &str, edits: &[(&str, Option<Entry>)]) -> ObjectId {
        let head = self.head(name).await;
        let tree = self.odb.commit(&head).await.unwrap().tree;
        let edits = edits.iter().map(|(k, e)| (key(k), e.clone())).collect();
        let tree = tree::edit(&self.odb, &tree, edits).await.unwrap().root;
        let draft = self.draft(vec![head], tree, "change");
        let (id, _) = history::create(&self.odb, draft, self.tick())
            .await
            .unwrap();
        self.set(&branch(name), id).await;
        id
    }

    /// A commit with explicit parents (for building unusual histories).
    pub async fn commit_with_parents(
        &self,
        parents: Vec<ObjectId>,
        edits: &[(&str, Option<Entry>)],
    ) -> ObjectId {
        let tree = self.odb.commit(&parents[0]).await.unwrap().tree;
        let edits = edits.iter().map(|(k, e)| (key(k), e.clone())).collect();
        let tree = tree::edit(&self.odb, &tree, edits).await.unwrap().root;
        history::create(&self.odb, self.draft(parents, tree, "change"), self.tick())
            .await
            .unwrap()
            .0
    }

    /// Every entry of the tree at commit `id`.
    pub async fn contents(&self, id: ObjectId) -> BTreeMap<ContentKey, Entry> {
        let tree = self.odb.commit(&id).await.unwrap().tree;
        tree::list(&self.odb, &tree, &KeyRange::all(), usize::MAX)
            .await
            .unwrap()
            .entries
            .into_iter()
            .collect()
    }

    pub async fn get(&self, id: ObjectId, path: &str) -> Option<Entry> {
        self.contents(id).await.get(&key(path)).cloned()
    }
}
