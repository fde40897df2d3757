//! The object database: absent is not an error, failures are, and reads are cached and checked.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use pangolin_backend_memory::MemoryBackend;
use pangolin_store::odb::ResolveError;
use pangolin_store::{
    BackendError, BackendErrorKind, HashPrefix, ObjectCache, ObjectId, ObjectKind, ObjectStore,
    Odb, RawObject, ReadError, RepoId, tree,
};

/// Wraps the memory backend: counts reads, can fail every call, can corrupt what it returns.
#[derive(Default)]
struct Instrumented {
    inner: MemoryBackend,
    reads: AtomicUsize,
    failing: AtomicBool,
    corrupting: AtomicBool,
}

impl Instrumented {
    fn check(&self, operation: &'static str) -> Result<(), BackendError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(BackendError::new(
                BackendErrorKind::Unavailable,
                operation,
                "disk on fire",
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl ObjectStore for Instrumented {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError> {
        self.check("objects.get")?;
        self.reads.fetch_add(1, Ordering::SeqCst);
        let found = self.inner.get(repo, id).await?;
        Ok(found.map(|mut raw| {
            if self.corrupting.load(Ordering::SeqCst) {
                let mut data = raw.data.to_vec();
                data[0] ^= 0xff;
                raw.data = data.into();
            }
            raw
        }))
    }

    async fn get_many(
        &self,
        repo: &RepoId,
        ids: &[ObjectId],
    ) -> Result<Vec<Option<RawObject>>, BackendError> {
        self.check("objects.get_many")?;
        self.inner.get_many(repo, ids).await
    }

    async fn put_many(&self, repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError> {
        self.check("objects.put_many")?;
        self.inner.put_many(repo, objects).await
    }

    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError> {
        self.check("objects.contains")?;
        self.inner.contains(repo, id).await
    }

    async fn find_by_prefix(
        &self,
        repo: &RepoId,
        prefix: &HashPrefix,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        self.check("objects.find_by_prefix")?;
        self.inner.find_by_prefix(repo, prefix, limit).await
    }
}

fn setup() -> (Arc<Instrumented>, Odb, Arc<ObjectCache>) {
    let backend = Arc::new(Instrumented::default());
    let cache = Arc::new(ObjectCache::new(1 << 20));
    let odb = Odb::new(RepoId::new("r").unwrap(), backend.clone(), cache.clone());
    (backend, odb, cache)
}

#[tokio::test]
async fn absent_objects_and_failures_are_told_apart() {
    let (backend, odb, _) = setup();
    let missing = ObjectId::from_bytes([7; 32]);
    assert!(odb.object(&missing).await.unwrap().is_none());
    assert!(matches!(
        odb.node(&missing).await,
        Err(ReadError::Missing {
            kind: ObjectKind::Tree,
            ..
        })
    ));
    backend.failing.store(true, Ordering::SeqCst);
    match odb.object(&missing).await {
        Err(ReadError::Backend(e)) => {
            assert_eq!(e.kind, BackendErrorKind::Unavailable);
            assert!(e.is_retryable());
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn reads_go_through_the_cache_once() {
    let (backend, _, cache) = setup();
    // A second handle with a fresh cache writes, so the first read really comes from the store.
    let writer = Odb::new(
        RepoId::new("r").unwrap(),
        backend.clone(),
        Arc::new(ObjectCache::new(1 << 20)),
    );
    let root = tree::empty(&writer).await.unwrap();
    let reader = Odb::new(RepoId::new("r").unwrap(), backend.clone(), cache.clone());
    for _ in 0..5 {
        reader.node(&root).await.unwrap();
    }
    assert_eq!(backend.reads.load(Ordering::SeqCst), 1);
    // Cached objects keep answering while the backend is down: they are immutable.
    backend.failing.store(true, Ordering::SeqCst);
    assert!(reader.node(&root).await.is_ok());
}

#[tokio::test]
async fn corrupted_objects_are_refused_not_returned() {
    let (backend, _, _) = setup();
    let writer = Odb::new(
        RepoId::new("r").unwrap(),
        backend.clone(),
        Arc::new(ObjectCache::new(1 << 20)),
    );
    let root = tree::empty(&writer).await.unwrap();
    backend.corrupting.store(true, Ordering::SeqCst);
    let reader = Odb::new(
        RepoId::new("r").unwrap(),
        backend.clone(),
        Arc::new(ObjectCache::new(1 << 20)),
    );
    let err = reader.node(&root).await.unwrap_err();
    assert!(matches!(err, ReadError::Corrupt(_)), "{err:?}");
}

#[tokio::test]
async fn a_commit_is_not_read_as_a_tree() {
    let (_, odb, _) = setup();
    let root = tree::empty(&odb).await.unwrap();
    let err = odb.commit(&root).await.unwrap_err();
    assert!(matches!(
        err,
        ReadError::WrongKind {
            expected: ObjectKind::Commit,
            actual: ObjectKind::Tree,
            ..
        }
    ));
}

#[tokio::test]
async fn hash_prefixes_resolve_to_one_object_or_explain_why_not() {
    let (_, odb, _) = setup();
    let root = tree::empty(&odb).await.unwrap();
    let prefix = HashPrefix::parse(&root.short(10)).unwrap();
    assert_eq!(odb.resolve_prefix(&prefix).await.unwrap(), root);
    let other = HashPrefix::parse(if root.to_hex().starts_with('0') {
        "11111111"
    } else {
        "00000000"
    })
    .unwrap();
    let err = odb.resolve_prefix(&other).await.unwrap_err();
    assert!(matches!(err, ResolveError::Prefix(_)));
    assert!(err.to_string().contains("no object"), "{err}");
}

#[tokio::test]
async fn staged_objects_are_readable_before_they_are_published() {
    use pangolin_store::Staging;

    let backend = Arc::new(MemoryBackend::new());
    let staging = Arc::new(Staging::new(backend.clone()));
    let repo = RepoId::new("r").unwrap();
    let staged_odb = Odb::new(
        repo.clone(),
        staging.clone(),
        Arc::new(ObjectCache::new(1 << 20)),
    );
    let root = tree::empty(&staged_odb).await.unwrap();
    assert!(staging.contains(&repo, &root).await.unwrap());
    assert!(
        !backend.contains(&repo, &root).await.unwrap(),
        "nothing reaches the backend before publishing"
    );
    let taken = staging.take();
    assert_eq!(taken.len(), 1);
    assert!(staging.is_empty());
    backend.put_many(&repo, &taken).await.unwrap();
    // Reads fall through to the backend once the stage is empty.
    assert!(staging.contains(&repo, &root).await.unwrap());
    assert_eq!(
        staging.get(&repo, &root).await.unwrap().map(|r| r.id),
        Some(root)
    );
}
