//! History exchanged between catalogs as git exchanges it: a clone has the same refs and
//! hashes; a fetch carries exactly the objects the receiver lacks and records the remote's
//! refs; a push moves one branch by compare-and-swap, fast-forward only unless forced; a cut,
//! altered or incomplete pack moves nothing; what a fetch brought outlives collections.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::files::{sweep_request, window};
use common::lake::*;
use common::tenancy::{Fixture, memory, on_every_backend, postgres, sqlite};
use common::transfer::*;
use pangolin_catalog::bundle::{BundleReader, BundleWriter, IntakeError, Item, Receiving};
use pangolin_catalog::remotes::{Fetched, NewRemote, PushError, PushRequest, Pushed, ReceiveError};
use pangolin_merge::MergeOutcome;
use pangolin_refs::RefKind;
use tokio::sync::mpsc;

async fn fetch(into: &Catalog, bytes: &[u8]) -> Result<Fetched, ReceiveError> {
    let mut receiver = into.fetch_receiver("origin").await?;
    for piece in bytes.chunks(997) {
        receiver.feed(piece).await?;
    }
    receiver.finish("fetcher").await
}

async fn push(into: &Catalog, request: PushRequest, bytes: &[u8]) -> Result<Pushed, PushError> {
    let mut receiver = into.push_receiver(request)?;
    for piece in bytes.chunks(997) {
        receiver.feed(piece).await?;
    }
    receiver.finish("pusher").await
}

fn push_of(branch: &str, expected: Option<ObjectId>, force: bool) -> PushRequest {
    PushRequest {
        branch: RefName::new(branch).unwrap(),
        expected,
        force,
        origin: Some("http://elsewhere/lake".into()),
    }
}

/// A catalog `name` on `fixture`, with the lake's warehouse so its tables read alike.
async fn copy_on(fixture: &Fixture, lake: &Lake, name: &str) -> Catalog {
    let catalog = Catalog::create(
        fixture.store.clone(),
        fixture.cache.clone(),
        "acme",
        name,
        "ana",
    )
    .await
    .unwrap();
    let root = format!("file://{}", lake.root().display());
    catalog.with_warehouse(Warehouse::new(root, Arc::new(FileIo::new(16 << 20))))
}

async fn add_origin(catalog: &Catalog) {
    catalog
        .add_remote(
            NewRemote {
                name: "origin".into(),
                url: "http://origin.example:8080".into(),
                catalog: Some("lake".into()),
            },
            "ana",
        )
        .await
        .unwrap();
}

async fn clone_diverge_fetch_merge_push(fixture: Fixture) {
    let lake = sqlite_lake().await;
    let source = &lake.catalog;
    create(source, &main(), "db.orders").await;
    append(source, &main(), "db.orders", 1, None, 1)
        .await
        .unwrap();
    new_branch(source, "dev", "main").await;
    create(source, &branch("dev"), "db.dev_only").await;

    // Clone: a full pack into a new catalog, then a fetch that needs nothing.
    let copy = copy_on(&fixture, &lake, "copy").await;
    let mut importer = copy.importer();
    importer.feed(&pack(source, None, &[]).await).await.unwrap();
    importer.finish("cloner").await.unwrap();
    add_origin(&copy).await;
    let fetched = fetch(&copy, &pack(source, None, &heads(&copy).await).await)
        .await
        .unwrap();
    assert_eq!(fetched.objects, 0, "a clone holds everything already");
    assert_eq!(fetched.changes.len(), 2, "main and dev appear: {fetched:?}");
    assert!(fetched.changes.iter().all(|c| c.old.is_none() && !c.forced));
    assert_eq!(
        heads(&copy).await,
        heads(source).await,
        "same refs, same hashes"
    );

    // Both diverge.
    append(source, &main(), "db.orders", 2, Some(1), 2)
        .await
        .unwrap();
    create(source, &main(), "db.customers").await;
    create(&copy, &main(), "db.local").await;
    new_branch(&copy, "mine", "main").await;

    // A fetch sends exactly what the copy lacks.
    let tracking = copy.remote("origin").await.unwrap().value;
    let mut have: Vec<ObjectId> = heads(&copy).await;
    have.extend(tracking.refs.iter().map(|r| r.hash));
    let missing = lacking(source, &heads(source).await, &copy).await;
    assert!(!missing.is_empty());
    let fetched = fetch(&copy, &pack(source, None, &have).await)
        .await
        .unwrap();
    assert_eq!(fetched.objects, missing.len() as u64, "only the difference");
    let main_change: Vec<_> = fetched
        .changes
        .iter()
        .filter(|c| c.reference.name.as_str() == "main")
        .collect();
    assert_eq!(main_change.len(), 1, "{fetched:?}");
    assert!(!main_change[0].forced, "the source's main moved forward");
    let theirs = fetched.remote.head("main").unwrap();
    assert_eq!(theirs, head(source, "main").await);

    // Merged by hash into the copy's main: both sides' tables.
    let merged = merge(&copy, &spec(&theirs.to_hex()), "main").await;
    assert!(
        matches!(merged.outcome, MergeOutcome::Merged { .. }),
        "{merged:?}"
    );
    for table in ["db.orders", "db.customers", "db.local"] {
        copy.load_table(&spec("main"), &key(table)).await.unwrap();
    }

    // Pushed back: a fast-forward of the source's main, carrying only what it lacks.
    let missing = lacking(&copy, &[head(&copy, "main").await], source).await;
    let bytes = pack(&copy, Some(&["main"]), &heads(source).await).await;
    let pushed = push(
        source,
        push_of("main", Some(head(source, "main").await), false),
        &bytes,
    )
    .await
    .unwrap();
    assert_eq!(pushed.objects, missing.len() as u64, "only the difference");
    assert!(!pushed.forced);
    assert_eq!(head(source, "main").await, head(&copy, "main").await);
    // And a new branch is created by a push expecting it absent.
    let bytes = pack(&copy, Some(&["mine"]), &heads(source).await).await;
    let pushed = push(source, push_of("mine", None, false), &bytes)
        .await
        .unwrap();
    assert_eq!(pushed.previous, None);
    assert_eq!(pushed.objects, 0, "everything mine reaches was just pushed");

    // Nothing new since: an empty pack.
    let mut have = heads(&copy).await;
    have.extend(
        copy.remote("origin")
            .await
            .unwrap()
            .value
            .refs
            .iter()
            .map(|r| r.hash),
    );
    let fetched = fetch(&copy, &pack(source, None, &have).await)
        .await
        .unwrap();
    assert_eq!(fetched.objects, 0);
    let entries = source
        .store()
        .ref_log(
            source.odb().repo(),
            &main(),
            pangolin_refs::LogQuery {
                before: None,
                limit: 1,
            },
        )
        .await
        .unwrap();
    assert_eq!(entries[0].principal, "pusher");
    assert_eq!(entries[0].message, "push from http://elsewhere/lake");
}

on_every_backend!(clone_diverge_fetch_merge_push);

/// A source and a copy that both have commits the other lacks on `main`.
async fn diverged() -> (Lake, Catalog, Fixture) {
    let lake = sqlite_lake().await;
    create(&lake.catalog, &main(), "db.orders").await;
    let fixture = memory().await.unwrap();
    let copy = copy_on(&fixture, &lake, "copy").await;
    let mut importer = copy.importer();
    importer
        .feed(&pack(&lake.catalog, None, &[]).await)
        .await
        .unwrap();
    importer.finish("cloner").await.unwrap();
    add_origin(&copy).await;
    create(&lake.catalog, &main(), "db.theirs").await;
    create(&copy, &main(), "db.ours").await;
    (lake, copy, fixture)
}

#[tokio::test]
async fn a_push_that_would_drop_commits_is_refused_unless_forced() {
    let (lake, copy, _fixture) = diverged().await;
    let source = &lake.catalog;
    let before = head(source, "main").await;
    fetch(&copy, &pack(source, None, &heads(&copy).await).await)
        .await
        .unwrap();
    let bytes = pack(&copy, Some(&["main"]), &heads(source).await).await;

    let error = push(source, push_of("main", Some(before), false), &bytes)
        .await
        .unwrap_err();
    assert!(matches!(error, PushError::NotFastForward { .. }), "{error}");
    assert_eq!(head(source, "main").await, before);

    // Expecting a head the branch is no longer at: refused, even forced.
    let stale = head(&copy, "main").await;
    let error = push(source, push_of("main", Some(stale), true), &bytes)
        .await
        .unwrap_err();
    assert!(matches!(error, PushError::Stale { .. }), "{error}");
    assert_eq!(head(source, "main").await, before);

    let forced = push(source, push_of("main", Some(before), true), &bytes)
        .await
        .unwrap();
    assert!(forced.forced);
    assert_eq!(forced.previous, Some(before));
    assert_eq!(head(source, "main").await, head(&copy, "main").await);

    // The next fetch sees the rewrite: the remote's main no longer descends from where it
    // was.
    let fetched = fetch(&copy, &pack(source, None, &heads(&copy).await).await)
        .await
        .unwrap();
    let main_change = fetched
        .changes
        .iter()
        .find(|c| c.reference.name.as_str() == "main")
        .unwrap();
    assert_eq!(main_change.old, Some(before));
    assert!(main_change.forced, "{fetched:?}");
}

#[tokio::test]
async fn cut_altered_or_incomplete_packs_move_nothing() {
    let (lake, copy, _fixture) = diverged().await;
    let source = &lake.catalog;
    // A fast-forward the copy could push: source's main merged into the copy's.
    let theirs = head(source, "main").await;
    let mut have = heads(&copy).await;
    let bytes = pack(source, None, &have).await;
    fetch(&copy, &bytes).await.unwrap();
    merge(&copy, &spec(&theirs.to_hex()), "main").await;
    have = heads(source).await;
    let good = pack(&copy, Some(&["main"]), &have).await;
    let before = head(source, "main").await;
    let request = || push_of("main", Some(before), false);

    // Cut anywhere: the end is missing, nothing moves.
    for len in [0, 20, good.len() / 2, good.len() - 1] {
        let error = push(source, request(), &good[..len]).await.unwrap_err();
        assert!(
            matches!(
                error,
                PushError::Receive(ReceiveError::Intake(IntakeError::Malformed(_)))
            ),
            "cut at {len}: {error}"
        );
        assert_eq!(head(source, "main").await, before);
    }
    // Any flipped byte.
    for at in [30, good.len() / 3, good.len() - 40] {
        let mut altered = good.clone();
        altered[at] ^= 0x20;
        assert!(
            push(source, request(), &altered).await.is_err(),
            "byte {at}"
        );
        assert_eq!(head(source, "main").await, before);
    }
    // Rewritten whole, with a trailing hash that matches, but an object left out: what
    // points to it finds it neither in the pack nor in the catalog.
    let mut reader = BundleReader::new();
    reader.feed(&good);
    let (mut header, mut objects) = (None, Vec::new());
    while let Some(item) = reader.next_item().unwrap() {
        match item {
            Item::Header(h) => header = Some(*h),
            Item::Object(raw, _) => objects.push(raw),
            Item::End(_) => {}
        }
    }
    let header = header.unwrap();
    let leaf = objects
        .iter()
        .position(|o| o.kind == pangolin_store::ObjectKind::Tree)
        .unwrap();
    objects.remove(leaf);
    let (mut writer, start) = BundleWriter::start(&header);
    let mut forged = start.to_vec();
    for object in &objects {
        forged.extend_from_slice(&writer.object(object));
    }
    let (_, end) = writer.finish();
    forged.extend_from_slice(&end);
    let error = push(source, request(), &forged).await.unwrap_err();
    assert!(
        matches!(
            error,
            PushError::Receive(ReceiveError::Intake(IntakeError::Incomplete { .. }))
        ),
        "{error}"
    );
    assert_eq!(head(source, "main").await, before);

    // A pack of another branch than the one pushed is refused before anything is stored.
    let error = push(source, push_of("other", None, false), &good)
        .await
        .unwrap_err();
    assert!(
        matches!(error, PushError::Receive(ReceiveError::Unexpected(_))),
        "{error}"
    );

    // The whole pack lands.
    let pushed = push(source, request(), &good).await.unwrap();
    assert_eq!(head(source, "main").await, pushed.head);
}

#[tokio::test]
async fn a_push_never_moves_a_protected_branch_nor_shadows_a_tag() {
    let (lake, copy, _fixture) = diverged().await;
    let protection: pangolin_catalog::merge_requests::BranchProtection =
        serde_json::from_value(serde_json::json!({"rules": [{"branch": "main"}]})).unwrap();
    let source = lake.catalog.with_protection(Some(Arc::new(protection)));
    let error = source
        .push_receiver(push_of("main", None, true))
        .unwrap_err();
    assert!(matches!(error, PushError::Protected(_)), "{error}");

    source
        .create_ref(
            RefKind::Tag,
            RefName::new("v1").unwrap(),
            &spec("main"),
            "ana",
        )
        .await
        .unwrap();
    new_branch(&copy, "v1", "main").await;
    let bytes = pack(&copy, Some(&["v1"]), &heads(&source).await).await;
    let error = push(&source, push_of("v1", None, false), &bytes)
        .await
        .unwrap_err();
    assert!(matches!(error, PushError::TagExists(_)), "{error}");
}

#[tokio::test]
async fn fetches_need_a_remote_and_a_pack_not_a_bundle_increment() {
    let (lake, copy, _fixture) = diverged().await;
    let error = copy.fetch_receiver("upstream").await.unwrap_err();
    assert!(matches!(error, ReceiveError::Remote(_)), "{error}");
    let base = pangolin_catalog::bundle::Base {
        bundle: "00".repeat(32).parse().unwrap(),
        refs: Vec::new(),
    };
    let plan = lake.catalog.plan_export(Some(base)).await.unwrap();
    let (pieces, mut received) = mpsc::channel(4);
    let writer = tokio::spawn(plan.write(pieces));
    let mut increment = Vec::new();
    while let Some(piece) = received.recv().await {
        increment.extend_from_slice(&piece);
    }
    writer.await.unwrap().unwrap();
    let error = fetch(&copy, &increment).await.unwrap_err();
    assert!(matches!(error, ReceiveError::Unexpected(_)), "{error}");
    assert!(copy.remote("origin").await.unwrap().value.refs.is_empty());
}

#[tokio::test]
async fn what_a_fetch_brought_outlives_collections_until_its_remote_goes() {
    let (lake, copy, _fixture) = diverged().await;
    let have = heads(&copy).await;
    fetch(&copy, &pack(&lake.catalog, None, &have).await)
        .await
        .unwrap();
    let theirs = tracked_main(&copy).await;
    let windowed = copy.clone().with_retention(window(10));
    tokio::time::sleep(Duration::from_millis(30)).await;
    collect(&windowed).await;
    for id in reachable(&copy, &[theirs]).await {
        assert!(copy.store().contains(copy.odb().repo(), &id).await.unwrap());
    }
    // Once the remote is removed, nothing keeps the commit only it reached.
    copy.remove_remote("origin").await.unwrap();
    let report = collect(&windowed).await;
    assert!(report.deleted > 0, "{report:?}");
    assert!(
        !copy
            .store()
            .contains(copy.odb().repo(), &theirs)
            .await
            .unwrap()
    );
}

/// Where the copy's remote `origin` had its `main` at the last fetch.
async fn tracked_main(copy: &Catalog) -> ObjectId {
    copy.remote("origin")
        .await
        .unwrap()
        .value
        .head("main")
        .unwrap()
}

async fn holds(catalog: &Catalog) -> usize {
    catalog
        .store()
        .list_records(
            &format!("receiving/{}/{}/", catalog.tenant(), catalog.name()),
            None,
            100,
        )
        .await
        .unwrap()
        .records
        .len()
}

#[tokio::test]
async fn a_collection_during_a_transfer_keeps_what_arrived_until_it_lands_or_is_abandoned() {
    let (lake, copy, _fixture) = diverged().await;
    let source = &lake.catalog;
    // The copy's main, merged with the source's, is a fast-forward the copy can push; its
    // commits are older than the window below by the time they arrive.
    fetch(&copy, &pack(source, None, &heads(&copy).await).await)
        .await
        .unwrap();
    let theirs = tracked_main(&copy).await;
    merge(&copy, &spec(&theirs.to_hex()), "main").await;
    // Enough objects that they are stored in several batches as they arrive.
    for t in 0..300 {
        create(&copy, &main(), &format!("db.t{t}")).await;
    }
    let bytes = pack(&copy, Some(&["main"]), &heads(source).await).await;
    let windowed = source.clone().with_retention(window(10));
    tokio::time::sleep(Duration::from_millis(30)).await;

    let before = head(source, "main").await;
    let (first, rest) = bytes.split_at(bytes.len() * 2 / 3);

    // A transfer given up on releases its hold: what it left is collected.
    let mut receiver = source
        .push_receiver(push_of("main", Some(before), false))
        .unwrap();
    receiver.feed(first).await.unwrap();
    assert_eq!(holds(source).await, 1, "held from the first object stored");
    receiver.abandon().await;
    assert_eq!(holds(source).await, 0);
    // Without a window every commit is kept, the half-stored ones too; the file sweep walks
    // them as far as they are stored.
    source
        .sweep_orphan_files(sweep_request(true), Vec::new())
        .await
        .unwrap();
    let report = collect(&windowed).await;
    assert!(report.deleted > 0, "{report:?}");

    // Two thirds arrived, then a collection: it keeps what arrived, and the push lands whole.
    let mut receiver = source
        .push_receiver(push_of("main", Some(before), false))
        .unwrap();
    receiver.feed(first).await.unwrap();
    assert_eq!(holds(source).await, 1);
    let report = collect(&windowed).await;
    assert_eq!(report.deleted, 0, "{report:?}");
    receiver.feed(rest).await.unwrap();
    let pushed = receiver.finish("pusher").await.unwrap();
    assert_eq!(holds(source).await, 0, "released once the branch moved");
    assert_eq!(
        reachable(source, &[pushed.head]).await,
        reachable(&copy, &[pushed.head]).await,
        "the branch reaches everything it did on the copy"
    );
}
