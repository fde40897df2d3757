//! Group commit: writers of one branch chain their commits behind one that is being published
//! and land together; a publish that loses its race drops the whole chain and its writers plan
//! again; a writer that goes away cannot strand the others.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

mod common;

use common::gated::Gated;
use pangolin_backend_memory::MemoryBackend;
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_catalog::{Catalog, CommitMeta, CommitQueues, RefSpec, Store};
use pangolin_refs::LogQuery;
use pangolin_store::{ContentKey, ObjectCache};

fn meta(message: &str) -> CommitMeta {
    CommitMeta {
        principal: "ana".into(),
        message: message.into(),
        properties: BTreeMap::new(),
    }
}

fn main_spec() -> RefSpec {
    RefSpec::parse("main").unwrap()
}

fn key(name: &str) -> ContentKey {
    ContentKey::new([name]).unwrap()
}

struct Setup {
    inner: Arc<MemoryBackend>,
    gated: Arc<Gated>,
    catalog: Catalog,
    cache: Arc<ObjectCache>,
}

/// A catalog over a gated store (created with the gate open), with its own commit queues.
async fn setup() -> Setup {
    let inner = Arc::new(MemoryBackend::new());
    let cache = Arc::new(ObjectCache::new(16 << 20));
    Catalog::create(inner.clone(), cache.clone(), "acme", "lake", "ana")
        .await
        .unwrap();
    let gated = Arc::new(Gated::new(inner.clone()));
    let catalog = Catalog::open(gated.clone(), cache.clone(), "acme", "lake")
        .unwrap()
        .with_commit_queues(Arc::new(CommitQueues::new()));
    Setup {
        inner,
        gated,
        catalog,
        cache,
    }
}

/// Lets every runnable task of this (single-threaded) runtime run until it waits.
async fn settle() {
    for _ in 0..1_000 {
        tokio::task::yield_now().await;
    }
}

async fn ref_log_messages(store: &dyn Store, catalog: &Catalog) -> Vec<String> {
    let mut entries = store
        .ref_log(
            catalog.odb().repo(),
            &catalog.default_branch(),
            LogQuery {
                before: None,
                limit: 10_000,
            },
        )
        .await
        .unwrap();
    entries.sort_by_key(|e| e.sequence);
    entries.into_iter().map(|e| e.message).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn commits_arriving_during_a_publish_land_together_in_the_next_one() {
    let Setup {
        inner,
        gated,
        catalog,
        ..
    } = setup().await;
    let main = catalog.default_branch();
    let mut writers = Vec::new();
    for name in ["first", "a", "b", "c", "d"] {
        let (catalog, main) = (catalog.clone(), main.clone());
        writers.push(tokio::spawn(async move {
            catalog
                .create_namespace(&main, &key(name), BTreeMap::new(), &meta(name))
                .await
        }));
        // The first publish is held at the gate; the others chain behind it.
        settle().await;
    }
    assert_eq!(gated.publishes.load(Ordering::SeqCst), 1);
    gated.gate.add_permits(10);
    for writer in writers {
        let committed = writer.await.unwrap().unwrap();
        assert_eq!(
            committed.attempts, 1,
            "no writer of this server lost a race"
        );
    }
    assert_eq!(gated.publishes.load(Ordering::SeqCst), 2);
    assert_eq!(
        ref_log_messages(inner.as_ref(), &catalog).await,
        ["create catalog", "first", "4 commits"]
    );
    // Every commit is in the history, one after another.
    let head = catalog.resolve(&main_spec()).await.unwrap().commit;
    let mut messages = Vec::new();
    let mut at = Some(head);
    while let Some(id) = at {
        let commit = catalog.odb().commit(&id).await.unwrap();
        messages.push(commit.message.clone());
        at = commit.parents.first().copied();
    }
    assert_eq!(
        messages,
        ["d", "c", "b", "a", "first", "create catalog lake"]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_lost_publish_drops_its_chain_and_every_writer_lands_on_the_new_head() {
    let Setup {
        inner,
        gated,
        catalog,
        cache,
    } = setup().await;
    let main = catalog.default_branch();
    let mut writers = Vec::new();
    for name in ["first", "a", "b"] {
        let (catalog, main) = (catalog.clone(), main.clone());
        writers.push(tokio::spawn(async move {
            catalog
                .create_namespace(&main, &key(name), BTreeMap::new(), &meta(name))
                .await
        }));
        settle().await;
    }
    // Another server moves the branch while the first publish waits.
    let outsider = Catalog::open(inner.clone(), cache, "acme", "lake").unwrap();
    outsider
        .create_namespace(&main, &key("other"), BTreeMap::new(), &meta("other"))
        .await
        .unwrap();
    gated.gate.add_permits(100);
    for writer in writers {
        let committed = writer.await.unwrap().unwrap();
        assert_eq!(committed.attempts, 2, "each writer planned once more");
    }
    for name in ["first", "a", "b", "other"] {
        assert!(
            catalog
                .load_namespace(&main_spec(), &key(name))
                .await
                .is_ok(),
            "namespace {name} is missing"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_writer_that_goes_away_does_not_strand_its_batch() {
    let Setup { gated, catalog, .. } = setup().await;
    let main = catalog.default_branch();
    let first = {
        let (catalog, main) = (catalog.clone(), main.clone());
        tokio::spawn(async move {
            catalog
                .create_namespace(&main, &key("first"), BTreeMap::new(), &meta("first"))
                .await
        })
    };
    settle().await;
    let gone = {
        let (catalog, main) = (catalog.clone(), main.clone());
        tokio::spawn(async move {
            catalog
                .create_namespace(&main, &key("gone"), BTreeMap::new(), &meta("gone"))
                .await
        })
    };
    settle().await;
    // Its client disconnected after the commit joined the batch.
    gone.abort();
    assert!(gone.await.unwrap_err().is_cancelled());
    gated.gate.add_permits(10);
    first.await.unwrap().unwrap();
    // The batch holding the abandoned commit is still published, and a later writer builds
    // on it rather than waiting for it forever.
    let later = catalog
        .create_namespace(&main, &key("later"), BTreeMap::new(), &meta("later"))
        .await
        .unwrap();
    assert_eq!(later.attempts, 1);
    for name in ["first", "gone", "later"] {
        assert!(
            catalog
                .load_namespace(&main_spec(), &key(name))
                .await
                .is_ok(),
            "namespace {name} is missing"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_conflict_with_a_commit_still_in_the_queue_is_decided_once_it_lands() {
    let Setup { gated, catalog, .. } = setup().await;
    let main = catalog.default_branch();
    let mut writers = Vec::new();
    for _ in 0..2 {
        let (catalog, main) = (catalog.clone(), main.clone());
        writers.push(tokio::spawn(async move {
            catalog
                .create_namespace(&main, &key("same"), BTreeMap::new(), &meta("same"))
                .await
        }));
        settle().await;
    }
    // The second writer saw the first's namespace but must not answer before it is on disk.
    assert!(!writers[1].is_finished());
    gated.gate.add_permits(10);
    let results: Vec<_> = futures::future::join_all(writers).await;
    assert!(results[0].as_ref().unwrap().is_ok());
    assert!(results[1].as_ref().unwrap().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_writers_of_one_server_on_sqlite_never_retry() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        SqliteBackend::open(dir.path().join("db.sqlite"))
            .await
            .unwrap(),
    );
    let cache = Arc::new(ObjectCache::new(16 << 20));
    let catalog = Catalog::create(store.clone(), cache, "acme", "lake", "ana")
        .await
        .unwrap()
        .with_commit_queues(Arc::new(CommitQueues::new()));
    let main = catalog.default_branch();
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..8 {
        let (catalog, main) = (catalog.clone(), main.clone());
        tasks.spawn(async move {
            for i in 0..20 {
                let name = format!("w{w}_{i}");
                let committed = catalog
                    .create_namespace(&main, &key(&name), BTreeMap::new(), &meta(&name))
                    .await
                    .unwrap();
                assert_eq!(committed.attempts, 1);
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let head = catalog.resolve(&main_spec()).await.unwrap();
    let mut count = 0;
    let mut at = Some(head.commit);
    while let Some(id) = at {
        count += 1;
        at = catalog
            .odb()
            .commit(&id)
            .await
            .unwrap()
            .parents
            .first()
            .copied();
    }
    assert_eq!(count, 8 * 20 + 1);
    let publishes = ref_log_messages(store.as_ref(), &catalog).await.len();
    assert!(
        publishes <= count,
        "{publishes} publishes for {count} commits"
    );
}
