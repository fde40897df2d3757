//! Collecting a catalog's unreachable store objects: what a branch, tag, retained ref-log
//! entry or retained commit reaches stays, whole; the rest goes only once it is past the
//! retention window (never without a policy, except objects no commit names); writers that
//! store an object the collection found unreachable keep it.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::files::window;
use common::lake::*;
use pangolin_catalog::collect::{CollectReport, CollectRequest};
use pangolin_catalog::orphans::SweepProgress;
use pangolin_catalog::reach::Reach;
use pangolin_store::{ObjectKind, RawObject};

async fn collect(catalog: &Catalog, dry_run: bool) -> CollectReport {
    let request = CollectRequest {
        dry_run,
        slack_ms: 0,
    };
    catalog
        .collect_objects(request, Arc::new(SweepProgress::default()))
        .await
        .unwrap()
}

/// Fails unless every object reachable from `head` is stored.
async fn assert_whole(catalog: &Catalog, head: ObjectId) {
    let mut reach = Reach::default();
    reach.push(head);
    while !reach
        .next(catalog.store().as_ref(), catalog.odb().repo())
        .await
        .unwrap()
        .is_empty()
    {}
}

async fn stored(catalog: &Catalog, id: ObjectId) -> bool {
    catalog
        .store()
        .contains(catalog.odb().repo(), &id)
        .await
        .unwrap()
}

async fn delete_branch(catalog: &Catalog, name: &str) {
    let at = head(catalog, name).await;
    move_ref(catalog, branch(name), Expected::Equals(at), Target::Delete).await;
}

async fn deleted_branch_then_collected(lake: Lake) {
    create(&lake.catalog, &main(), "db.t").await;
    new_branch(&lake.catalog, "dev", "main").await;
    create(&lake.catalog, &branch("dev"), "db.u").await;
    append(&lake.catalog, &branch("dev"), "db.u", 1, None, 1)
        .await
        .unwrap();
    let dev = head(&lake.catalog, "dev").await;
    delete_branch(&lake.catalog, "dev").await;

    // Without a policy every commit is kept: dev's head still reads by its hash.
    let kept = collect(&lake.catalog, false).await;
    assert_eq!(kept.unreachable, 0, "{kept:?}");
    assert_eq!(kept.deleted, 0);
    assert_eq!(kept.retained_commits, 2, "dev's two commits: {kept:?}");
    assert!(kept.history_cutoff_ms.is_none());
    lake.catalog.resolve(&spec(&dev.to_hex())).await.unwrap();

    // Past a window, dev's two commits and the trees only they had go.
    let catalog = lake.catalog.with_retention(window(10));
    tokio::time::sleep(Duration::from_millis(30)).await;
    let dry = collect(&catalog, true).await;
    assert_eq!(dry.unreachable_commits, 2, "{dry:?}");
    assert!(dry.unreachable > 2, "and their tree nodes: {dry:?}");
    assert_eq!(dry.deleted, 0);
    assert!(stored(&catalog, dev).await, "a dry run deletes nothing");
    let done = collect(&catalog, false).await;
    assert_eq!(done.deleted, dry.unreachable, "{done:?}");
    assert_eq!(done.objects, dry.objects);
    assert!(!stored(&catalog, dev).await);
    // Everything main reaches is whole, and reads work as before.
    assert_whole(&catalog, head(&catalog, "main").await).await;
    catalog
        .load_table(&spec("main"), &key("db.t"))
        .await
        .unwrap();
    let again = collect(&catalog, false).await;
    assert_eq!((again.unreachable, again.deleted), (0, 0), "{again:?}");
    assert_eq!(again.objects, done.objects - done.deleted);
}

#[tokio::test]
async fn a_deleted_branch_stays_without_a_policy_and_goes_past_its_window() {
    deleted_branch_then_collected(lake().await).await;
}

#[tokio::test]
async fn a_deleted_branch_stays_without_a_policy_and_goes_past_its_window_on_sqlite() {
    deleted_branch_then_collected(sqlite_lake().await).await;
}

#[tokio::test]
async fn commits_a_ref_log_records_stay_inside_the_window() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.t").await;
    let before = head(&lake.catalog, "main").await;
    append(&lake.catalog, &main(), "db.t", 1, None, 1)
        .await
        .unwrap();
    let appended = head(&lake.catalog, "main").await;
    move_ref(
        &lake.catalog,
        main(),
        Expected::Equals(appended),
        Target::Set(before),
    )
    .await;
    // A day's window: main's log still records the append, so `main#<time>` reads it.
    let day = lake
        .catalog
        .clone()
        .with_retention(window(24 * 3600 * 1000));
    let kept = collect(&day, false).await;
    assert_eq!(kept.unreachable, 0, "{kept:?}");
    assert!(stored(&day, appended).await);
    // Past a short one the append goes; main's head and history stay whole.
    let short = lake.catalog.with_retention(window(10));
    tokio::time::sleep(Duration::from_millis(30)).await;
    let done = collect(&short, false).await;
    assert_eq!(done.unreachable_commits, 1, "{done:?}");
    assert!(!stored(&short, appended).await);
    assert_whole(&short, head(&short, "main").await).await;
    // A longer window again: the log names a commit that is gone, counted and not fatal.
    let again = collect(&day, false).await;
    assert_eq!(again.missing, 1, "{again:?}");
    assert_eq!(again.deleted, 0);
}

#[tokio::test]
async fn objects_no_commit_names_go_even_without_a_policy() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.t").await;
    let data = b"a node no commit names".to_vec();
    let stray = RawObject {
        id: ObjectId::compute(ObjectKind::Tree, &data),
        kind: ObjectKind::Tree,
        data: data.into(),
    };
    let repo = lake.catalog.odb().repo().clone();
    lake.catalog
        .store()
        .put_many(&repo, std::slice::from_ref(&stray))
        .await
        .unwrap();
    let done = collect(&lake.catalog, false).await;
    assert_eq!((done.unreachable, done.deleted), (1, 1), "{done:?}");
    assert!(!stored(&lake.catalog, stray.id).await);
    assert_whole(&lake.catalog, head(&lake.catalog, "main").await).await;
}

/// Rounds of a branch made, written and deleted, then collected while a writer commits on
/// main: the branch's objects go, and main stays whole with every namespace it was given.
async fn writers_racing_collections_lose_nothing(lake: Lake) {
    let catalog = lake.catalog.with_retention(window(10));
    for round in 0..12 {
        new_branch(&catalog, "tmp", "main").await;
        catalog
            .create_namespace(&branch("tmp"), &key("doomed"), BTreeMap::new(), &meta("ns"))
            .await
            .unwrap();
        let doomed = head(&catalog, "tmp").await;
        delete_branch(&catalog, "tmp").await;
        tokio::time::sleep(Duration::from_millis(30)).await;

        let writer = {
            let catalog = catalog.clone();
            tokio::spawn(async move {
                catalog
                    .create_namespace(
                        &main(),
                        &key(&format!("ns{round}")),
                        BTreeMap::new(),
                        &meta("ns"),
                    )
                    .await
                    .unwrap();
            })
        };
        let collector = {
            let catalog = catalog.clone();
            tokio::spawn(async move { collect(&catalog, false).await })
        };
        writer.await.unwrap();
        let report = collector.await.unwrap();
        assert!(!stored(&catalog, doomed).await, "round {round}: {report:?}");
        let main_head = head(&catalog, "main").await;
        assert_whole(&catalog, main_head).await;
        for earlier in 0..=round {
            catalog
                .load_namespace(&spec("main"), &key(&format!("ns{earlier}")))
                .await
                .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_racing_collections_lose_nothing_in_memory() {
    writers_racing_collections_lose_nothing(lake().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_racing_collections_lose_nothing_on_sqlite() {
    writers_racing_collections_lose_nothing(sqlite_lake().await).await;
}

/// A lake on PostgreSQL, where publishes and deletes meet through an advisory lock; `None`
/// when no server is configured.
async fn postgres_lake() -> Option<Lake> {
    let fixture = common::tenancy::postgres().await?;
    Some(lake_over(fixture.store.clone(), tempfile::tempdir().unwrap()).await)
}

#[tokio::test]
async fn a_deleted_branch_stays_without_a_policy_and_goes_past_its_window_on_postgres() {
    if let Some(lake) = postgres_lake().await {
        deleted_branch_then_collected(lake).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_racing_collections_lose_nothing_on_postgres() {
    if let Some(lake) = postgres_lake().await {
        writers_racing_collections_lose_nothing(lake).await;
    }
}

/// A commit reset away and past the window leaves a tree that a cherry-pick of that commit
/// builds again, byte for byte, in the one order that would lose it without the store's check:
/// the collection has listed and walked, the cherry-pick lands (finding the tree stored, so
/// storing nothing new for it), then the collection deletes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tree_rebuilt_after_the_walk_and_before_the_delete_is_kept() {
    use std::sync::atomic::Ordering;

    let gated = Arc::new(common::gated::Gated::new(Arc::new(MemoryBackend::new())));
    gated.gate.add_permits(1 << 20);
    let lake = lake_over(gated.clone(), tempfile::tempdir().unwrap()).await;
    let before = head(&lake.catalog, "main").await;
    lake.catalog
        .create_namespace(&main(), &key("x"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let reset_away = head(&lake.catalog, "main").await;
    let tree = lake.catalog.odb().commit(&reset_away).await.unwrap().tree;
    move_ref(
        &lake.catalog,
        main(),
        Expected::Equals(reset_away),
        Target::Set(before),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(30)).await;

    let collector = {
        let catalog = lake.catalog.clone().with_retention(window(10));
        tokio::spawn(async move { collect(&catalog, false).await })
    };
    while gated.deletes.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Without a policy, this catalog handle still reads the commit by its hash.
    let request = pangolin_catalog::HistoryRequest {
        principal: "ana".into(),
        message: None,
        expected_head: None,
    };
    lake.catalog
        .cherry_pick(
            &[spec(&reset_away.to_hex())],
            &spec("main"),
            &pangolin_merge::PickOptions::default(),
            &request,
        )
        .await
        .unwrap();
    let main_head = head(&lake.catalog, "main").await;
    assert_eq!(
        lake.catalog.odb().commit(&main_head).await.unwrap().tree,
        tree,
        "the pick rebuilt the tree"
    );
    gated.delete_gate.add_permits(1 << 20);
    let report = collector.await.unwrap();
    assert!(report.rewalks >= 1, "{report:?}");
    assert_whole(&lake.catalog, main_head).await;
    assert!(
        report.deleted > 0,
        "the reset-away commit still goes: {report:?}"
    );
}
