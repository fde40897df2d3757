//! Tenancy records on every backend (see `common/tenancy.rs`): tenants, warehouses and
//! catalogs, their lifecycles, isolation between tenants and concurrent changes. Storage kinds
//! and credentials are in `warehouse_credentials.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_catalog::iceberg::{MetadataCache, json_io};
use pangolin_catalog::tenancy::records::catalog_key;
use pangolin_catalog::tenancy::{
    CreateCatalogError, CreateTenantError, CreateWarehouseError, DefaultSetup, DeleteCatalogError,
    DeleteTenantError, DeleteWarehouseError, GetCatalogError, GetTenantError, GetWarehouseError,
    Name, SecretKey, StorageConfig, UpdateTenantError, UpdateWarehouseError, WarehouseSpec,
    WarehouseUpdate,
};
use pangolin_catalog::{Catalog, CommitMeta, RefSpec};
use pangolin_refs::{
    Expected, LogQuery, ObjectQuery, RefName, RefUpdate, Reference, Target, Transaction,
};
use pangolin_store::{ContentKey, Timestamp};

use common::tenancy::*;

on_every_backend!(
    tenants_are_created_listed_in_pages_updated_and_deleted,
    invalid_names_are_refused_everywhere,
    warehouses_are_created_listed_in_pages_updated_and_deleted,
    catalogs_are_created_with_their_repository_listed_and_deleted,
    a_tenant_with_catalogs_or_warehouses_cannot_be_deleted,
    a_warehouse_with_a_bound_catalog_cannot_be_deleted,
    a_catalog_cannot_bind_a_warehouse_of_another_tenant,
    another_tenants_catalog_is_not_found,
    concurrent_updates_of_one_warehouse_have_exactly_one_winner,
    a_local_warehouse_reads_and_writes_through_file_io,
    a_non_empty_catalog_cannot_be_deleted,
    ensure_default_adopts_the_existing_catalog_and_is_idempotent,
    no_warehouse_outlives_a_tenant_deleted_while_it_is_created,
    catalogs_sharing_files_are_found_in_every_tenant,
    every_warehouse_keeps_its_metadata_in_the_servers_cache,
);

async fn tenants_are_created_listed_in_pages_updated_and_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    for name in ["delta", "alpha", "echo", "charlie", "bravo"] {
        tenancy.create_tenant(name, None).await.unwrap();
    }
    let err = tenancy.create_tenant("alpha", None).await.unwrap_err();
    assert!(matches!(err, CreateTenantError::Exists(_)), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");

    let mut seen = Vec::new();
    let mut after: Option<Name> = None;
    loop {
        let page = tenancy
            .list_tenants(after.as_ref().map(Name::as_str), 2)
            .await
            .unwrap();
        assert!(page.items.len() <= 2);
        seen.extend(names(&page.items, |t| &t.name));
        match page.next_after {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["alpha", "bravo", "charlie", "delta", "echo"]);

    let alpha = tenancy.tenant("alpha").await.unwrap();
    let updated = tenancy
        .update_tenant_description("alpha", alpha.version, Some("the first".into()))
        .await
        .unwrap();
    assert_eq!(updated.version, alpha.version + 1);
    assert_eq!(
        tenancy
            .tenant("alpha")
            .await
            .unwrap()
            .value
            .description
            .as_deref(),
        Some("the first")
    );
    let stale = tenancy
        .update_tenant_description("alpha", alpha.version, None)
        .await
        .unwrap_err();
    assert!(
        matches!(stale, UpdateTenantError::Conflict { .. }),
        "{stale}"
    );

    tenancy.delete_tenant("alpha").await.unwrap();
    let gone = tenancy.tenant("alpha").await.unwrap_err();
    assert!(matches!(gone, GetTenantError::NotFound(_)), "{gone}");
    let gone = tenancy.delete_tenant("alpha").await.unwrap_err();
    assert!(matches!(gone, DeleteTenantError::NotFound(_)), "{gone}");
}

async fn invalid_names_are_refused_everywhere(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let too_long = "a".repeat(64);
    for bad in ["", "a/b", "a.b", "sp ace", "ü", too_long.as_str()] {
        let err = tenancy.create_tenant(bad, None).await.unwrap_err();
        assert!(
            matches!(err, CreateTenantError::InvalidName(_)),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("not a valid tenant name"), "{err}");
    }
    tenancy.create_tenant(&"a".repeat(63), None).await.unwrap();
    let dir = acme_local(&tenancy).await;
    let err = tenancy
        .create_warehouse("acme", "no/slash", local(dir.path()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not a valid warehouse name"),
        "{err}"
    );
    let err = tenancy
        .create_catalog("acme", "no.dot", new_catalog("files"), "ana")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not a valid catalog name"),
        "{err}"
    );
    assert!(
        tenancy
            .list_catalogs("acme", Some("x/y"), 10)
            .await
            .is_err()
    );
}

async fn warehouses_are_created_listed_in_pages_updated_and_deleted(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    let err = tenancy
        .create_warehouse("nobody", "lake", s3(false))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CreateWarehouseError::TenantNotFound(_)),
        "{err}"
    );
    acme(&tenancy).await;
    for name in ["w3", "w1", "w2"] {
        tenancy
            .create_warehouse("acme", name, s3(false))
            .await
            .unwrap();
    }
    let err = tenancy
        .create_warehouse("acme", "lake", s3(false))
        .await
        .unwrap_err();
    assert!(matches!(err, CreateWarehouseError::Exists { .. }), "{err}");

    let first = tenancy.list_warehouses("acme", None, 3).await.unwrap();
    assert_eq!(names(&first.items, |w| &w.name), ["lake", "w1", "w2"]);
    let next = first.next_after.unwrap();
    let second = tenancy
        .list_warehouses("acme", Some(next.as_str()), 3)
        .await
        .unwrap();
    assert_eq!(names(&second.items, |w| &w.name), ["w3"]);
    assert_eq!(second.next_after, None);

    let w1 = tenancy.warehouse("acme", "w1").await.unwrap();
    let update = WarehouseUpdate {
        credentials: Some(None),
        ..WarehouseUpdate::default()
    };
    let updated = tenancy
        .update_warehouse("acme", "w1", w1.version, update.clone())
        .await
        .unwrap();
    assert_eq!(updated.value.view().credentials, None);
    assert_eq!(updated.value.credentials(&key).unwrap(), None);
    let stale = tenancy
        .update_warehouse("acme", "w1", w1.version, update)
        .await
        .unwrap_err();
    assert!(
        matches!(stale, UpdateWarehouseError::Conflict { .. }),
        "{stale}"
    );

    // Credentials must fit the storage they are for.
    let dir = tempfile::tempdir().unwrap();
    let mismatch = WarehouseSpec {
        credentials: s3(false).credentials,
        ..local(dir.path())
    };
    let err = tenancy
        .create_warehouse("acme", "bad", mismatch)
        .await
        .unwrap_err();
    assert!(matches!(err, CreateWarehouseError::Invalid { .. }), "{err}");
    let relative = WarehouseSpec {
        storage: StorageConfig::Local {
            root: "relative/dir".into(),
        },
        credentials: None,
    };
    let err = tenancy
        .create_warehouse("acme", "bad", relative)
        .await
        .unwrap_err();
    assert!(matches!(err, CreateWarehouseError::Invalid { .. }), "{err}");

    tenancy.delete_warehouse("acme", "w1").await.unwrap();
    let gone = tenancy.warehouse("acme", "w1").await.unwrap_err();
    assert!(matches!(gone, GetWarehouseError::NotFound { .. }), "{gone}");
}

async fn catalogs_are_created_with_their_repository_listed_and_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    for name in ["sales", "hr", "ops"] {
        let created = tenancy
            .create_catalog("acme", name, new_catalog("files"), "ana")
            .await
            .unwrap();
        assert_eq!(created.value.warehouse.as_str(), "files");
        let repo = Catalog::open(f.store.clone(), f.cache.clone(), "acme", name).unwrap();
        assert!(repo.exists().await.unwrap(), "{name} has its repository");
    }
    let err = tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap_err();
    assert!(matches!(err, CreateCatalogError::Exists { .. }), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");

    let page = tenancy.list_catalogs("acme", None, 2).await.unwrap();
    assert_eq!(names(&page.items, |c| &c.name), ["hr", "ops"]);
    let rest = tenancy
        .list_catalogs("acme", page.next_after.as_ref().map(Name::as_str), 2)
        .await
        .unwrap();
    assert_eq!(names(&rest.items, |c| &c.name), ["sales"]);
    assert_eq!(rest.next_after, None);

    let sales = tenancy.resolve("acme", "sales").await.unwrap();
    assert_eq!(sales.value.properties["owner"], "data-team");
    let opened = tenancy.open_catalog("acme", "sales").await.unwrap();
    assert_eq!(opened.name(), "sales");

    tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap();
    let gone = tenancy.resolve("acme", "sales").await.unwrap_err();
    assert!(matches!(gone, GetCatalogError::NotFound { .. }), "{gone}");
    let repo = Catalog::open(f.store.clone(), f.cache.clone(), "acme", "sales").unwrap();
    assert!(
        !repo.exists().await.unwrap(),
        "the repository's main is gone"
    );
    // The name can be used again.
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
}

async fn a_tenant_with_catalogs_or_warehouses_cannot_be_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let err = tenancy.delete_tenant("acme").await.unwrap_err();
    assert!(matches!(err, DeleteTenantError::HasCatalogs(_)), "{err}");
    assert!(err.to_string().contains("still has catalogs"), "{err}");

    tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap();
    let err = tenancy.delete_tenant("acme").await.unwrap_err();
    assert!(matches!(err, DeleteTenantError::HasWarehouses(_)), "{err}");

    tenancy.delete_warehouse("acme", "files").await.unwrap();
    tenancy.delete_tenant("acme").await.unwrap();
}

async fn a_warehouse_with_a_bound_catalog_cannot_be_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let dir = acme_local(&tenancy).await;
    tenancy
        .create_warehouse("acme", "spare", local(dir.path()))
        .await
        .unwrap();
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let err = tenancy.delete_warehouse("acme", "files").await.unwrap_err();
    match &err {
        DeleteWarehouseError::Bound { catalog, .. } => assert_eq!(catalog.as_str(), "sales"),
        other => panic!("expected Bound, got {other}"),
    }
    assert!(err.to_string().contains("catalog `sales`"), "{err}");
    tenancy.delete_warehouse("acme", "spare").await.unwrap();
}

async fn a_catalog_cannot_bind_a_warehouse_of_another_tenant(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    tenancy.create_tenant("globex", None).await.unwrap();
    let err = tenancy
        .create_catalog("globex", "sales", new_catalog("files"), "ana")
        .await
        .unwrap_err();
    assert!(
        matches!(err, CreateCatalogError::WarehouseNotFound { .. }),
        "{err}"
    );
    assert!(
        tenancy.resolve("globex", "sales").await.is_err(),
        "no record left"
    );
    let repo = Catalog::open(f.store.clone(), f.cache.clone(), "globex", "sales").unwrap();
    assert!(!repo.exists().await.unwrap(), "no repository either");
    let err = tenancy
        .create_catalog("nobody", "sales", new_catalog("files"), "ana")
        .await
        .unwrap_err();
    assert!(
        matches!(err, CreateCatalogError::TenantNotFound(_)),
        "{err}"
    );
}

async fn another_tenants_catalog_is_not_found(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    tenancy.create_tenant("globex", None).await.unwrap();
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let err = tenancy.resolve("globex", "sales").await.unwrap_err();
    assert!(matches!(err, GetCatalogError::NotFound { .. }), "{err}");
    assert!(
        !err.to_string().contains("acme"),
        "names no other tenant: {err}"
    );
    assert!(
        tenancy
            .list_catalogs("globex", None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

async fn concurrent_updates_of_one_warehouse_have_exactly_one_winner(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    acme(&tenancy).await;
    let version = tenancy.warehouse("acme", "lake").await.unwrap().version;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let tenancy = tenancy.clone();
        tasks.spawn(async move {
            let update = WarehouseUpdate {
                storage: Some(StorageConfig::S3 {
                    bucket: format!("lake-{i}"),
                    prefix: None,
                    region: None,
                    endpoint: Some("http://127.0.0.1:9000".into()),
                    path_style: None,
                    hand_out_credentials: false,
                    sts: None,
                    remote_signing: false,
                }),
                credentials: None,
            };
            tenancy
                .update_warehouse("acme", "lake", version, update)
                .await
        });
    }
    let (mut won, mut lost) = (0, 0);
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            Ok(updated) => {
                won += 1;
                assert_eq!(updated.version, version + 1);
            }
            Err(UpdateWarehouseError::Conflict { expected, .. }) => {
                lost += 1;
                assert_eq!(expected, version);
            }
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    assert_eq!((won, lost), (1, 7));
    assert_eq!(
        tenancy.warehouse("acme", "lake").await.unwrap().version,
        version + 1
    );
}

async fn a_local_warehouse_reads_and_writes_through_file_io(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    let dir = acme_local(&tenancy).await;
    let record = tenancy.warehouse("acme", "files").await.unwrap().value;
    let runtime = record.to_runtime(&key, &Default::default()).unwrap();
    assert!(runtime.root().starts_with("file://"), "{}", runtime.root());
    assert!(runtime.client_config().is_empty());

    let location = format!("{}/sales/probe.json", runtime.root());
    let value = serde_json::json!({"written": "through the warehouse"});
    json_io::write_json(&runtime.io, &location, &value)
        .await
        .unwrap();
    let read: serde_json::Value = json_io::read_json(&runtime.io, &location).await.unwrap();
    assert_eq!(read, value);
    let on_disk = std::fs::read(dir.path().join("sales/probe.json")).unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&on_disk).unwrap(),
        value
    );
}

/// Warehouses overlap when one root is inside the other, whichever tenant they belong to;
/// a folder whose name only starts the same is another.
async fn catalogs_sharing_files_are_found_in_every_tenant(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let dir = acme_local(&tenancy).await;
    let root = dir.path();
    std::fs::create_dir_all(root.join("inner")).unwrap();
    let apart = root.to_str().unwrap().to_owned() + "-apart";
    std::fs::create_dir_all(&apart).unwrap();
    tenancy
        .create_warehouse("acme", "inner", local(&root.join("inner")))
        .await
        .unwrap();
    tenancy
        .create_warehouse("acme", "apart", local(std::path::Path::new(&apart)))
        .await
        .unwrap();
    tenancy.create_tenant("beta", None).await.unwrap();
    tenancy
        .create_warehouse("beta", "same", local(root))
        .await
        .unwrap();
    for (tenant, name, warehouse) in [
        ("acme", "a", "files"),
        ("acme", "b", "inner"),
        ("acme", "c", "apart"),
        ("acme", "d", "files"),
        ("beta", "e", "same"),
    ] {
        tenancy
            .create_catalog(tenant, name, new_catalog(warehouse), "ana")
            .await
            .unwrap();
    }
    let sharing = |tenant: &'static str, name: &'static str| {
        let tenancy = tenancy.clone();
        async move {
            let catalog = tenancy.open_catalog(tenant, name).await.unwrap();
            let others = tenancy.catalogs_sharing_files(&catalog).await.unwrap();
            others
                .iter()
                .map(|c| format!("{}/{}", c.tenant(), c.name()))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(sharing("acme", "a").await, ["acme/b", "acme/d", "beta/e"]);
    assert_eq!(sharing("acme", "b").await, ["acme/a", "acme/d", "beta/e"]);
    assert!(sharing("acme", "c").await.is_empty());
    assert_eq!(sharing("beta", "e").await, ["acme/a", "acme/b", "acme/d"]);
}

/// One budget bounds the parsed metadata of all warehouses, not one per warehouse.
async fn every_warehouse_keeps_its_metadata_in_the_servers_cache(f: Fixture) {
    let metadata = Arc::new(MetadataCache::new(16 << 20));
    let tenancy = f
        .tenancy(&SecretKey::generate())
        .with_metadata_cache(metadata.clone());
    let _files = acme_local(&tenancy).await;
    let other = tempfile::tempdir().unwrap();
    tenancy
        .create_warehouse("acme", "other", local(other.path()))
        .await
        .unwrap();
    for (name, warehouse) in [("sales", "files"), ("ops", "other")] {
        tenancy
            .create_catalog("acme", name, new_catalog(warehouse), "ana")
            .await
            .unwrap();
        let catalog = tenancy.open_catalog("acme", name).await.unwrap();
        let main = catalog.default_branch();
        let meta = CommitMeta {
            principal: "ana".into(),
            message: "create".into(),
            properties: BTreeMap::new(),
        };
        catalog
            .create_namespace(&main, &key("eu"), BTreeMap::new(), &meta)
            .await
            .unwrap();
        catalog
            .create_table(&main, &key("eu.t"), common::lake::new_table(), &meta)
            .await
            .unwrap();
    }
    assert!(Arc::ptr_eq(tenancy.metadata_cache(), &metadata));
    assert_eq!(metadata.len(), 2, "both warehouses' new files");
    assert!(metadata.weight() > 0 && metadata.weight() <= 16 << 20);
}

fn key(path: &str) -> ContentKey {
    ContentKey::new(path.split('.')).unwrap()
}

async fn a_non_empty_catalog_cannot_be_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let catalog = tenancy.open_catalog("acme", "sales").await.unwrap();
    let meta = CommitMeta {
        principal: "ana".into(),
        message: "ns".into(),
        properties: BTreeMap::new(),
    };
    let main = catalog.default_branch();
    catalog
        .create_namespace(&main, &key("eu"), BTreeMap::new(), &meta)
        .await
        .unwrap();
    let err = tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap_err();
    assert!(matches!(err, DeleteCatalogError::NotEmpty(_)), "{err}");
    assert!(err.to_string().contains("not empty"), "{err}");
    assert!(tenancy.resolve("acme", "sales").await.is_ok());

    catalog
        .drop_namespace(&main, &key("eu"), &meta)
        .await
        .unwrap();
    // Another branch may hold content of its own: refused too.
    let head = catalog
        .resolve(&RefSpec::parse("main").unwrap())
        .await
        .unwrap()
        .commit;
    let dev = Reference::branch(RefName::new("dev").unwrap());
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: dev.clone(),
            expected: Expected::Absent,
            target: Target::Set(head),
        }],
        principal: "ana".into(),
        message: "branch".into(),
        time: Timestamp::now(),
    };
    f.store.transact(catalog.odb().repo(), tx).await.unwrap();
    let err = tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap_err();
    assert!(
        matches!(err, DeleteCatalogError::HasOtherRefs { .. }),
        "{err}"
    );

    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: dev,
            expected: Expected::Equals(head),
            target: Target::Delete,
        }],
        principal: "ana".into(),
        message: "drop branch".into(),
        time: Timestamp::now(),
    };
    f.store.transact(catalog.odb().repo(), tx).await.unwrap();
    tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap();
    let key = catalog_key(
        &Name::new("tenant", "acme").unwrap(),
        &Name::new("catalog", "sales").unwrap(),
    );
    assert!(f.records().get_record(&key).await.unwrap().is_none());
    // Its ref log and objects went with it: a catalog made later under the same name reads
    // none of its hashes (not even from the shared cache).
    let repo = catalog.odb().repo();
    assert!(
        f.store
            .list_objects(repo, ObjectQuery::all(10))
            .await
            .unwrap()
            .is_empty()
    );
    let log = LogQuery {
        before: None,
        limit: 10,
    };
    assert!(f.store.ref_log(repo, &main, log).await.unwrap().is_empty());
    assert!(catalog.odb().commit(&head).await.is_err());
}

async fn ensure_default_adopts_the_existing_catalog_and_is_idempotent(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    // A server from before tenancy: the default catalog's repository, with history.
    let existing = Catalog::create(f.store.clone(), f.cache.clone(), "default", "main", "p")
        .await
        .unwrap();
    let meta = CommitMeta {
        principal: "ana".into(),
        message: "ns".into(),
        properties: BTreeMap::new(),
    };
    existing
        .create_namespace(
            &existing.default_branch(),
            &key("kept"),
            BTreeMap::new(),
            &meta,
        )
        .await
        .unwrap();
    let head = existing
        .resolve(&RefSpec::parse("main").unwrap())
        .await
        .unwrap()
        .commit;

    let dir = tempfile::tempdir().unwrap();
    let setup = DefaultSetup {
        tenant: "default".into(),
        warehouse: "default".into(),
        warehouse_spec: local(dir.path()),
        catalog: "main".into(),
        principal: "pangolin".into(),
    };
    let first = tenancy.ensure_default(setup.clone()).await.unwrap();
    assert!(first.created_tenant && first.created_warehouse && first.created_catalog);
    let again = tenancy.ensure_default(setup).await.unwrap();
    assert_eq!(again, Default::default(), "nothing to do the second time");

    let record = tenancy.resolve("default", "main").await.unwrap().value;
    assert_eq!(record.warehouse.as_str(), "default");
    let opened = tenancy.open_catalog("default", "main").await.unwrap();
    let now = opened
        .resolve(&RefSpec::parse("main").unwrap())
        .await
        .unwrap()
        .commit;
    assert_eq!(now, head, "the history was adopted, not replaced");

    // A record whose repository is missing (a create that stopped half way) is finished.
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: opened.default_branch(),
            expected: Expected::Equals(head),
            target: Target::Delete,
        }],
        principal: "ana".into(),
        message: "lose the repository".into(),
        time: Timestamp::now(),
    };
    f.store.transact(opened.odb().repo(), tx).await.unwrap();
    let setup = DefaultSetup {
        tenant: "default".into(),
        warehouse: "default".into(),
        warehouse_spec: local(dir.path()),
        catalog: "main".into(),
        principal: "pangolin".into(),
    };
    let repaired = tenancy.ensure_default(setup).await.unwrap();
    assert!(repaired.created_catalog && !repaired.created_tenant);
    assert!(opened.exists().await.unwrap());

    // Without a repository, ensure_default creates an empty catalog.
    let fresh = DefaultSetup {
        tenant: "other".into(),
        warehouse: "files".into(),
        warehouse_spec: local(dir.path()),
        catalog: "lake".into(),
        principal: "pangolin".into(),
    };
    tenancy.ensure_default(fresh).await.unwrap();
    let catalog = Catalog::open(f.store.clone(), f.cache.clone(), "other", "lake").unwrap();
    assert!(catalog.exists().await.unwrap());
}

async fn no_warehouse_outlives_a_tenant_deleted_while_it_is_created(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    for round in 0..20 {
        let tenant = format!("t{round}");
        tenancy.create_tenant(&tenant, None).await.unwrap();
        let create = {
            let (tenancy, tenant) = (tenancy.clone(), tenant.clone());
            tokio::spawn(async move { tenancy.create_warehouse(&tenant, "w", s3(false)).await })
        };
        let delete = {
            let (tenancy, tenant) = (tenancy.clone(), tenant.clone());
            tokio::spawn(async move { tenancy.delete_tenant(&tenant).await })
        };
        let created = create.await.unwrap();
        let deleted = delete.await.unwrap();
        let tenant_left = tenancy.tenant(&tenant).await.is_ok();
        let warehouse_left = tenancy.warehouse(&tenant, "w").await.is_ok();
        assert!(
            tenant_left || !warehouse_left,
            "round {round}: a warehouse outlived its tenant ({created:?}, {deleted:?})"
        );
        assert_eq!(
            created.is_ok(),
            warehouse_left,
            "round {round}: {created:?}"
        );
        assert_eq!(deleted.is_ok(), !tenant_left, "round {round}: {deleted:?}");
    }
}
