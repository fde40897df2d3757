//! Cached ref heads over a store only this process writes: every change is visible to the next
//! read, and racing readers never keep a head older than the last change.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::{Catalog, CommitError, CommitMeta, SoleWriterRefCache, Store};
use pangolin_store::history::is_ancestor;
use pangolin_store::{ContentKey, ObjectCache};

fn meta() -> CommitMeta {
    CommitMeta {
        principal: "ana".into(),
        message: "ns".into(),
        properties: BTreeMap::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_landed_change_is_seen_by_the_next_read_even_with_racing_readers() {
    let inner: Arc<dyn Store> = Arc::new(MemoryBackend::new());
    let cached: Arc<dyn Store> = Arc::new(SoleWriterRefCache::new(inner.clone()));
    let cache = Arc::new(ObjectCache::new(16 << 20));
    let catalog = Catalog::create(cached.clone(), cache, "acme", "lake", "ana")
        .await
        .unwrap();
    let main = catalog.default_branch();
    let repo = catalog.odb().repo().clone();

    // Readers hammer the cached head while writers commit.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (cached, repo, main, stop) = (cached.clone(), repo.clone(), main.clone(), stop.clone());
        readers.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                cached.get_ref(&repo, &main).await.unwrap();
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut writers = Vec::new();
    for w in 0..4 {
        let (catalog, cached, repo, main) =
            (catalog.clone(), cached.clone(), repo.clone(), main.clone());
        writers.push(tokio::spawn(async move {
            for i in 0..25 {
                let key = ContentKey::new([format!("w{w}_{i}")]).unwrap();
                // Four writers on one branch of an in-memory store can lose 16 races in a row;
                // that answer means "retry", as a client would.
                let committed = loop {
                    match catalog
                        .create_namespace(&main, &key, BTreeMap::new(), &meta())
                        .await
                    {
                        Err(CommitError::Contention(_)) => continue,
                        other => break other.unwrap(),
                    }
                };
                // Read your writes: the head is this commit or one built on it.
                let head = cached.get_ref(&repo, &main).await.unwrap().unwrap();
                assert!(
                    is_ancestor(catalog.odb(), committed.commit, head)
                        .await
                        .unwrap(),
                    "the cached head {head} does not contain the commit just made"
                );
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for reader in readers {
        reader.await.unwrap();
    }
    assert_eq!(
        cached.get_ref(&repo, &main).await.unwrap(),
        inner.get_ref(&repo, &main).await.unwrap(),
        "the cache ends at the database's head"
    );
}

#[tokio::test]
async fn a_refused_change_leaves_the_cache_at_the_database_head() {
    let inner: Arc<dyn Store> = Arc::new(MemoryBackend::new());
    let cached: Arc<dyn Store> = Arc::new(SoleWriterRefCache::new(inner.clone()));
    let catalog = Catalog::create(
        cached.clone(),
        Arc::new(ObjectCache::new(1 << 20)),
        "acme",
        "lake",
        "ana",
    )
    .await
    .unwrap();
    let main = catalog.default_branch();
    let repo = catalog.odb().repo().clone();
    let before = cached.get_ref(&repo, &main).await.unwrap();
    // Creating the catalog again is refused (main exists): nothing moves.
    assert!(
        Catalog::create(
            cached.clone(),
            Arc::new(ObjectCache::new(1 << 20)),
            "acme",
            "lake",
            "ana"
        )
        .await
        .is_err()
    );
    assert_eq!(cached.get_ref(&repo, &main).await.unwrap(), before);
    assert_eq!(inner.get_ref(&repo, &main).await.unwrap(), before);
}
