//! Catalog semantics on the memory backend: addressing, namespaces, the commit protocol.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::{
    Catalog, CommitError, CommitMeta, NamespaceError, ReadAtError, RefSpec, ResolveError,
};
use pangolin_refs::{Expected, RefName, RefStore, RefUpdate, Reference, Target, Transaction};
use pangolin_store::{ContentKey, ObjectCache, Timestamp};

fn key(path: &str) -> ContentKey {
    ContentKey::new(path.split('.')).unwrap()
}

fn meta(message: &str) -> CommitMeta {
    CommitMeta {
        principal: "ana".into(),
        message: message.into(),
        properties: BTreeMap::new(),
    }
}

fn spec(s: &str) -> RefSpec {
    RefSpec::parse(s).unwrap()
}

fn branch(name: &str) -> Reference {
    Reference::branch(RefName::new(name).unwrap())
}

async fn catalog() -> (Catalog, Arc<MemoryBackend>) {
    let backend = Arc::new(MemoryBackend::new());
    let catalog = Catalog::create(
        backend.clone(),
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        "lake",
        "ana",
    )
    .await
    .unwrap();
    (catalog, backend)
}

async fn new_branch(catalog: &Catalog, backend: &MemoryBackend, name: &str, from: &str) {
    let head = catalog.resolve(&spec(from)).await.unwrap().commit;
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: branch(name),
            expected: Expected::Absent,
            target: Target::Set(head),
        }],
        principal: "ana".into(),
        message: "branch".into(),
        time: Timestamp::now(),
    };
    backend.transact(catalog.odb().repo(), tx).await.unwrap();
}

#[tokio::test]
async fn creating_a_catalog_twice_is_refused() {
    let (catalog, backend) = catalog().await;
    let err = Catalog::create(
        backend,
        Arc::new(ObjectCache::new(1 << 20)),
        "acme",
        "lake",
        "bo",
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    assert!(
        Catalog::open(
            catalog.store().clone(),
            Arc::new(ObjectCache::new(1 << 20)),
            "acme",
            "bad.name"
        )
        .is_err()
    );
}

#[tokio::test]
async fn namespaces_nest_list_update_and_drop() {
    let (catalog, _) = catalog().await;
    let main = branch("main");
    catalog
        .create_namespace(
            &main,
            &key("sales"),
            BTreeMap::from([("owner".into(), "ana".into())]),
            &meta("ns"),
        )
        .await
        .unwrap();
    catalog
        .create_namespace(&main, &key("sales.eu"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    catalog
        .create_namespace(&main, &key("hr"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();

    let err = catalog
        .create_namespace(&main, &key("sales"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(NamespaceError::AlreadyExists(_))),
        "{err}"
    );
    let err = catalog
        .create_namespace(&main, &key("nope.child"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(NamespaceError::ParentNotFound { ref parent, .. }) if *parent == key("nope")),
        "{err}"
    );

    let (top, next) = catalog
        .list_namespaces(&spec("main"), None, None, 10)
        .await
        .unwrap();
    assert_eq!(top, vec![key("hr"), key("sales")]);
    assert_eq!(next, None);
    let (first, next) = catalog
        .list_namespaces(&spec("main"), None, None, 1)
        .await
        .unwrap();
    assert_eq!((first, next.clone()), (vec![key("hr")], Some(key("hr"))));
    let (rest, _) = catalog
        .list_namespaces(&spec("main"), None, next.as_ref(), 1)
        .await
        .unwrap();
    assert_eq!(rest, vec![key("sales")]);
    let (children, _) = catalog
        .list_namespaces(&spec("main"), Some(&key("sales")), None, 10)
        .await
        .unwrap();
    assert_eq!(children, vec![key("sales.eu")]);

    let (_, report) = catalog
        .update_namespace_properties(
            &main,
            &key("sales"),
            &["owner".into(), "ghost".into()],
            &BTreeMap::from([("tier".into(), "gold".into())]),
            &meta("props"),
        )
        .await
        .unwrap();
    assert_eq!(
        (report.removed, report.missing, report.updated),
        (
            vec!["owner".to_owned()],
            vec!["ghost".to_owned()],
            vec!["tier".to_owned()]
        )
    );
    let loaded = catalog
        .load_namespace(&spec("main"), &key("sales"))
        .await
        .unwrap();
    assert_eq!(
        loaded.properties,
        BTreeMap::from([("tier".into(), "gold".into())])
    );

    let err = catalog
        .drop_namespace(&main, &key("sales"), &meta("drop"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(NamespaceError::NotEmpty { ref first, .. }) if *first == key("sales.eu")),
        "{err}"
    );
    catalog
        .drop_namespace(&main, &key("sales.eu"), &meta("drop"))
        .await
        .unwrap();
    catalog
        .drop_namespace(&main, &key("sales"), &meta("drop"))
        .await
        .unwrap();
    let err = catalog
        .load_namespace(&spec("main"), &key("sales"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ReadAtError::Namespace(NamespaceError::NotFound(_))),
        "{err}"
    );
}

#[tokio::test]
async fn a_change_on_a_branch_is_invisible_elsewhere_and_history_stays_readable() {
    let (catalog, backend) = catalog().await;
    let main = branch("main");
    let first = catalog
        .create_namespace(&main, &key("a"), BTreeMap::new(), &meta("a"))
        .await
        .unwrap();
    new_branch(&catalog, &backend, "dev", "main").await;
    catalog
        .create_namespace(&branch("dev"), &key("b"), BTreeMap::new(), &meta("b"))
        .await
        .unwrap();
    assert!(
        catalog
            .load_namespace(&spec("dev"), &key("b"))
            .await
            .is_ok()
    );
    assert!(
        catalog
            .load_namespace(&spec("main"), &key("b"))
            .await
            .is_err(),
        "dev's namespace is not on main"
    );

    let second = catalog
        .create_namespace(&main, &key("c"), BTreeMap::new(), &meta("c"))
        .await
        .unwrap();
    // main~1 and main#<first> are the state before `c`.
    let hash = first.commit.short(12);
    for at in [format!("main#{hash}"), "main~1".to_owned()] {
        let resolved = catalog.resolve(&spec(&at)).await.unwrap();
        assert_eq!(resolved.commit, first.commit, "{at}");
        assert_eq!(resolved.writable_branch, None, "{at} is read-only");
    }
    assert_eq!(
        catalog
            .resolve(&spec("main"))
            .await
            .unwrap()
            .writable_branch,
        Some(main.clone())
    );
    assert_eq!(
        catalog
            .resolve(&spec(&second.commit.to_hex()))
            .await
            .unwrap()
            .commit,
        second.commit,
        "a bare hash"
    );

    // A hash from dev's history is not readable through main.
    let dev_head = catalog.resolve(&spec("dev")).await.unwrap().commit;
    let err = catalog
        .resolve(&spec(&format!("main#{}", dev_head.short(16))))
        .await
        .unwrap_err();
    assert!(matches!(err, ResolveError::NotReachable { .. }), "{err}");
    let err = catalog.resolve(&spec("nope")).await.unwrap_err();
    assert!(matches!(err, ResolveError::UnknownRef(_)), "{err}");
}

#[tokio::test]
async fn time_travel_reads_what_the_branch_held_then() {
    let (catalog, _) = catalog().await;
    let main = branch("main");
    catalog
        .create_namespace(&main, &key("a"), BTreeMap::new(), &meta("a"))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let between = jiff::Timestamp::now();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    catalog
        .create_namespace(&main, &key("b"), BTreeMap::new(), &meta("b"))
        .await
        .unwrap();

    let at = spec(&format!("main#{between}"));
    assert!(catalog.load_namespace(&at, &key("a")).await.is_ok());
    assert!(
        catalog.load_namespace(&at, &key("b")).await.is_err(),
        "b came later"
    );
    let err = catalog
        .resolve(&spec("main#2001-01-01T00:00:00Z"))
        .await
        .unwrap_err();
    assert!(matches!(err, ResolveError::NotYetThere { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_to_different_keys_are_rebased_not_rejected() {
    let (catalog, _) = catalog().await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..16 {
        let catalog = catalog.clone();
        tasks.spawn(async move {
            catalog
                .create_namespace(
                    &branch("main"),
                    &key(&format!("ns{i:02}")),
                    BTreeMap::new(),
                    &meta("ns"),
                )
                .await
                .unwrap()
        });
    }
    let mut attempts = 0;
    while let Some(result) = tasks.join_next().await {
        attempts += result.unwrap().attempts;
    }
    let (all, _) = catalog
        .list_namespaces(&spec("main"), None, None, 100)
        .await
        .unwrap();
    assert_eq!(all.len(), 16, "every writer's namespace landed");
    assert!(attempts >= 16);
    // 16 commits on top of the catalog's first commit, one per writer.
    let first = catalog.resolve(&spec("main~16")).await.unwrap().commit;
    assert_eq!(catalog.odb().commit(&first).await.unwrap().depth, 0);
    assert!(catalog.resolve(&spec("main~17")).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_of_one_namespace_let_exactly_one_win() {
    let (catalog, _) = catalog().await;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let catalog = catalog.clone();
        tasks.spawn(async move {
            catalog
                .create_namespace(&branch("main"), &key("same"), BTreeMap::new(), &meta("ns"))
                .await
        });
    }
    let (mut won, mut refused) = (0, 0);
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            Ok(_) => won += 1,
            Err(CommitError::Rejected(NamespaceError::AlreadyExists(_))) => refused += 1,
            Err(other) => panic!("unexpected: {other}"),
        }
    }
    assert_eq!((won, refused), (1, 7));
}

#[tokio::test]
async fn writes_to_a_missing_branch_fail_and_tags_are_read_only() {
    let (catalog, backend) = catalog().await;
    let err = catalog
        .create_namespace(&branch("nope"), &key("a"), BTreeMap::new(), &meta("a"))
        .await
        .unwrap_err();
    assert!(matches!(err, CommitError::MissingBranch(_)), "{err}");

    let head = catalog.resolve(&spec("main")).await.unwrap().commit;
    let tag = Reference::tag(RefName::new("v1").unwrap());
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: tag,
            expected: Expected::Absent,
            target: Target::Set(head),
        }],
        principal: "ana".into(),
        message: "tag".into(),
        time: Timestamp::now(),
    };
    backend.transact(catalog.odb().repo(), tx).await.unwrap();
    let resolved = catalog.resolve(&spec("v1")).await.unwrap();
    assert_eq!(resolved.commit, head);
    assert_eq!(
        resolved.writable_branch, None,
        "a tag names a commit, not a place to write"
    );
}

/// The commit protocol on the embedded default backend: racing writers all land, in one
/// unbroken history, and the catalog reopens with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_writers_on_sqlite_all_land() {
    use pangolin_backend_sqlite::SqliteBackend;

    let path =
        std::env::temp_dir().join(format!("pangolin-sqlite-catalog-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let store = Arc::new(SqliteBackend::open(&path).await.unwrap());
    let catalog = Catalog::create(
        store.clone(),
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        "lake",
        "ana",
    )
    .await
    .unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let catalog = catalog.clone();
        tasks.spawn(async move {
            catalog
                .create_namespace(
                    &branch("main"),
                    &key(&format!("ns{i}")),
                    BTreeMap::new(),
                    &meta("ns"),
                )
                .await
                .unwrap()
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    store.close().await;

    let store = Arc::new(SqliteBackend::open(&path).await.unwrap());
    let reopened =
        Catalog::open(store, Arc::new(ObjectCache::new(16 << 20)), "acme", "lake").unwrap();
    let (all, _) = reopened
        .list_namespaces(&spec("main"), None, None, 100)
        .await
        .unwrap();
    assert_eq!(all.len(), 8);
    let root = reopened.resolve(&spec("main~8")).await.unwrap().commit;
    assert_eq!(
        reopened.odb().commit(&root).await.unwrap().depth,
        0,
        "eight commits on the first one"
    );
}
