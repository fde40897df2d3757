//! Export and import of a catalog as a bundle: a restore on another backend has the same refs,
//! commits (same hashes), history and tables; an increment carries only what is new; damaged,
//! altered, cut or misplaced bundles are refused and move no ref.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::lake::*;
use common::tenancy;
use common::transfer::merge;
use pangolin_catalog::bundle::{
    self, Base, BundleError, ImportError, Imported, IntakeError, Receiving,
};
use pangolin_refs::RefQuery;
use tokio::sync::mpsc;

/// Tables on `main`: enough that the tree has inner nodes, not one leaf.
const TABLES: usize = 70;

/// A history with what a walk must follow: many tables, appends, a branch with changes of its
/// own merged back (a commit with two parents), and a tag.
async fn history(lake: &Lake) {
    let catalog = &lake.catalog;
    for t in 0..TABLES {
        create(catalog, &main(), &format!("db.t{t}")).await;
    }
    append(catalog, &main(), "db.t0", 1, None, 1).await.unwrap();
    new_branch(catalog, "dev", "main").await;
    create(catalog, &branch("dev"), "db.dev_only").await;
    append(catalog, &branch("dev"), "db.t1", 2, None, 1)
        .await
        .unwrap();
    append(catalog, &main(), "db.t0", 3, Some(1), 2)
        .await
        .unwrap();
    merge(catalog, &spec("dev"), "main").await;
    catalog
        .create_ref(
            pangolin_refs::RefKind::Tag,
            RefName::new("v1").unwrap(),
            &spec("main"),
            "ana",
        )
        .await
        .unwrap();
}

async fn export(catalog: &Catalog, base: Option<Base>) -> Vec<u8> {
    let plan = catalog.plan_export(base).await.unwrap();
    let (pieces, mut received) = mpsc::channel(4);
    let writer = tokio::spawn(plan.write(pieces));
    let mut bytes = Vec::new();
    while let Some(piece) = received.recv().await {
        bytes.extend_from_slice(&piece);
    }
    let exported = writer.await.unwrap().unwrap();
    assert_eq!(exported.bytes, bytes.len() as u64);
    bytes
}

/// Imports `bytes`, fed in pieces of an odd size so that items straddle them.
async fn import(catalog: &Catalog, bytes: &[u8]) -> Result<Imported, ImportError> {
    let mut importer = catalog.importer();
    for piece in bytes.chunks(1021) {
        importer.feed(piece).await?;
    }
    importer.finish("restorer").await
}

fn verified(bytes: &[u8]) -> bundle::Verified {
    bundle::verify(bytes, |_| {}).unwrap()
}

async fn refs(catalog: &Catalog) -> Vec<(Reference, ObjectId)> {
    let query = RefQuery {
        kind: None,
        prefix: String::new(),
        after: None,
        limit: 1000,
    };
    catalog
        .store()
        .list_refs(catalog.odb().repo(), &query)
        .await
        .unwrap()
        .refs
}

async fn first_parents(catalog: &Catalog, at: &str) -> Vec<ObjectId> {
    let page = catalog
        .log(&spec(at), &Default::default(), None, 10_000)
        .await
        .unwrap();
    page.commits.into_iter().map(|(id, _)| id).collect()
}

/// A new catalog, as `admin catalog create` makes one, on `store`.
async fn new_catalog(store: Arc<dyn Store>, name: &str) -> Catalog {
    Catalog::create(
        store,
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        name,
        "ana",
    )
    .await
    .unwrap()
}

/// The same catalog on another backend, read through the same warehouse.
async fn assert_same(source: &Lake, copy: &Catalog) {
    assert_eq!(refs(copy).await, refs(&source.catalog).await);
    for at in ["main", "dev", "v1"] {
        assert_eq!(
            first_parents(copy, at).await,
            first_parents(&source.catalog, at).await,
            "history of {at}"
        );
    }
    let root = format!("file://{}", source.root().display());
    let copy = copy
        .clone()
        .with_warehouse(Warehouse::new(root, Arc::new(FileIo::new(16 << 20))));
    for (at, table) in [("main", "db.t0"), ("main", "db.dev_only"), ("v1", "db.t1")] {
        let want = source
            .catalog
            .load_table(&spec(at), &key(table))
            .await
            .unwrap();
        let got = copy.load_table(&spec(at), &key(table)).await.unwrap();
        assert_eq!(got.metadata_location, want.metadata_location);
        assert_eq!(got.metadata, want.metadata, "{table}@{at}");
    }
}

async fn restores_with_the_same_hashes(target: tenancy::Fixture) {
    let source = sqlite_lake().await;
    history(&source).await;
    let bytes = export(&source.catalog, None).await;
    let bundle = verified(&bytes);
    assert!(bundle.self_contained(), "a full bundle holds what it needs");
    let copy = new_catalog(target.store.clone(), "copy").await;
    let imported = import(&copy, &bytes).await.unwrap();
    assert_eq!(imported.bundle, bundle.id);
    assert_eq!(imported.objects, bundle.objects);
    assert_eq!(imported.changed, refs(&source.catalog).await.len());
    assert_same(&source, &copy).await;
    // Exported again from the copy: the same objects, since they are the same commits.
    let again = verified(&export(&copy, None).await);
    assert_eq!(again.objects, bundle.objects);
    assert_eq!(again.header.refs, bundle.header.refs);
}

/// Every object written once: counting objects a bundle holds finds no duplicates.
#[tokio::test]
async fn a_bundle_holds_each_reachable_object_once() {
    let source = lake().await;
    history(&source).await;
    let bytes = export(&source.catalog, None).await;
    let mut reader = bundle::BundleReader::new();
    reader.feed(&bytes);
    let mut ids = Vec::new();
    while let Some(item) = reader.next_item().unwrap() {
        if let bundle::Item::Object(raw, _) = item {
            ids.push(raw.id);
        }
    }
    let distinct: BTreeSet<ObjectId> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "no object twice");
    assert!(
        ids.len() > TABLES + 10,
        "commits and inner nodes too: {}",
        ids.len()
    );
}

#[tokio::test]
async fn an_increment_carries_only_what_is_new_and_continues_the_restore() {
    let source = sqlite_lake().await;
    history(&source).await;
    let first = export(&source.catalog, None).await;
    let first_bundle = verified(&first);
    let copy = new_catalog(Arc::new(MemoryBackend::new()), "copy").await;
    import(&copy, &first).await.unwrap();

    // More history: an append, a new branch, a deleted one.
    let catalog = &source.catalog;
    append(catalog, &main(), "db.t0", 4, Some(3), 3)
        .await
        .unwrap();
    new_branch(catalog, "fix", "main").await;
    create(catalog, &branch("fix"), "db.fixed").await;
    catalog
        .delete_ref(&RefName::new("dev").unwrap(), None, "ana")
        .await
        .unwrap();

    let base = Base {
        bundle: first_bundle.id,
        refs: first_bundle.header.refs.clone(),
    };
    let second = export(catalog, Some(base.clone())).await;
    let increment = verified(&second);
    assert_eq!(
        increment.header.base.as_ref().unwrap().bundle,
        first_bundle.id
    );
    // Two commits and the nodes they changed, nothing the first bundle had.
    let mut reader = bundle::BundleReader::new();
    reader.feed(&first);
    let mut before = BTreeSet::new();
    while let Some(item) = reader.next_item().unwrap() {
        if let bundle::Item::Object(raw, _) = item {
            before.insert(raw.id);
        }
    }
    let mut reader = bundle::BundleReader::new();
    reader.feed(&second);
    let mut sent = 0;
    while let Some(item) = reader.next_item().unwrap() {
        if let bundle::Item::Object(raw, _) = item {
            assert!(!before.contains(&raw.id), "{} was in the base", raw.id);
            sent += 1;
        }
    }
    assert!(sent > 0 && sent < 20, "only the new objects: {sent}");
    assert!(!increment.missing.is_empty(), "it points into its base");

    let imported = import(&copy, &second).await.unwrap();
    assert_eq!(imported.base, Some(first_bundle.id));
    assert_eq!(refs(&copy).await, refs(catalog).await);
    assert_eq!(
        first_parents(&copy, "fix").await,
        first_parents(catalog, "fix").await
    );

    // Applied once: the catalog's refs are no longer the base's.
    let again = import(&copy, &second).await.unwrap_err();
    assert!(matches!(again, ImportError::BaseMismatch { .. }), "{again}");
    // Nor does an increment go into a catalog that lacks its base.
    let empty = new_catalog(Arc::new(MemoryBackend::new()), "empty").await;
    let error = import(&empty, &second).await.unwrap_err();
    assert!(matches!(error, ImportError::BaseMismatch { .. }), "{error}");
    // An export from a base this catalog never held is refused before any byte is sent.
    let mut foreign = base;
    foreign.refs[0].hash = ObjectId::compute(pangolin_store::ObjectKind::Commit, b"elsewhere");
    let error = catalog.plan_export(Some(foreign)).await.unwrap_err();
    assert!(
        matches!(error, bundle::ExportError::UnknownBase { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn damaged_altered_cut_or_misplaced_bundles_are_refused_and_move_nothing() {
    let source = lake().await;
    history(&source).await;
    let bytes = export(&source.catalog, None).await;

    // Into a catalog with history of its own: refused before anything is stored.
    let error = import(&source.catalog, &bytes).await.unwrap_err();
    assert!(matches!(error, ImportError::NotEmpty { .. }), "{error}");

    let target = new_catalog(Arc::new(MemoryBackend::new()), "copy").await;
    let untouched = refs(&target).await;
    let header_end = 16 + 8 + 40;
    for at in [
        20,
        header_end,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 40,
        bytes.len() - 1,
    ] {
        let mut altered = bytes.clone();
        altered[at] ^= 0x20;
        let error = import(&target, &altered).await.unwrap_err();
        assert!(
            matches!(
                error,
                ImportError::Intake(IntakeError::Malformed(_) | IntakeError::Incomplete { .. })
            ),
            "a flipped byte at {at}: {error}"
        );
        assert_eq!(refs(&target).await, untouched, "a flipped byte at {at}");
    }
    let error = import(&target, &bytes[..bytes.len() - 100])
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ImportError::Intake(IntakeError::Malformed(BundleError::Truncated))
        ),
        "{error}"
    );
    let error = import(&target, b"PK\x03\x04 a zip file").await.unwrap_err();
    assert!(
        matches!(
            error,
            ImportError::Intake(IntakeError::Malformed(BundleError::NotABundle))
        ),
        "{error}"
    );
    assert_eq!(refs(&target).await, untouched);

    // And the whole bundle still imports.
    import(&target, &bytes).await.unwrap();
    assert_eq!(refs(&target).await, refs(&source.catalog).await);
}

#[tokio::test]
async fn memory_restores_with_the_same_hashes() {
    restores_with_the_same_hashes(tenancy::memory().await.unwrap()).await;
}

#[tokio::test]
async fn sqlite_restores_with_the_same_hashes() {
    restores_with_the_same_hashes(tenancy::sqlite().await.unwrap()).await;
}

#[tokio::test]
async fn postgres_restores_with_the_same_hashes() {
    let Some(target) = tenancy::postgres().await else {
        return;
    };
    restores_with_the_same_hashes(target).await;
}
