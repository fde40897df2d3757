//! The sweep of orphan files: what no commit of any branch, tag or ref log references goes,
//! and nothing else; a dry run deletes nothing; folders a client chose or whose files are
//! missing are left alone; what lands during a sweep keeps its files.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::files::*;
use common::lake::*;
use pangolin_catalog::collect::CollectRequest;
use pangolin_catalog::iceberg::manifest;
use pangolin_catalog::orphans::{Forgotten, Phase, SweepContext, SweepProgress};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn manifest_lists_and_manifests_name_their_files() {
    let manifests = strings(&["s3://b/t/metadata/a-m0.avro", "s3://b/t/metadata/b-m1.avro"]);
    assert_eq!(
        manifest::manifest_paths(&manifest_list(&manifests)).unwrap(),
        manifests
    );
    assert!(
        manifest::manifest_paths(&manifest_list(&[]))
            .unwrap()
            .is_empty()
    );
    // Deleted entries count: an older snapshot may still read the file.
    let files = strings(&["file:///w/t/data/1.parquet", "file:///w/t/data/2.parquet"]);
    assert_eq!(
        manifest::content_file_paths(&manifest_of(&files)).unwrap(),
        files
    );
}

#[test]
fn files_of_another_shape_are_refused() {
    assert!(manifest::manifest_paths(b"not avro at all").is_err());
    let error =
        manifest::manifest_paths(&manifest_of(&strings(&["file:///w/x.parquet"]))).unwrap_err();
    assert!(error.contains("manifest_path"), "{error}");
    let error = manifest::content_file_paths(&manifest_list(&strings(&["m.avro"]))).unwrap_err();
    assert!(error.contains("data_file.file_path"), "{error}");
}

#[tokio::test]
async fn a_sweep_removes_only_what_no_commit_references() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    let t = create(catalog, &main(), "db.t")
        .await
        .metadata
        .location
        .clone();
    let mut t_manifests = Vec::new();
    let mut referenced = Vec::new();
    for id in [1, 2] {
        referenced.extend(append_with_files(catalog, &main(), "db.t", id, &mut t_manifests).await);
    }
    // A snapshot only `dev` has, and one only a tag's history has.
    new_branch(catalog, "dev", "main").await;
    let mut dev_manifests = t_manifests.clone();
    referenced
        .extend(append_with_files(catalog, &branch("dev"), "db.t", 3, &mut dev_manifests).await);
    // A dropped table: every commit before the drop still reads it.
    let gone = create(catalog, &main(), "db.gone")
        .await
        .metadata
        .location
        .clone();
    referenced.extend(append_with_files(catalog, &main(), "db.gone", 10, &mut Vec::new()).await);
    catalog
        .drop_table(&main(), &key("db.gone"), false, &meta("drop"))
        .await
        .unwrap();

    let orphans = [
        format!("{t}/data/failed-write.parquet"),
        format!("{t}/metadata/unreferenced-m0.avro"),
        format!("{gone}/data/never-committed.parquet"),
    ];
    for orphan in &orphans {
        put(orphan, b"orphan bytes");
    }
    let fresh = format!("{t}/data/being-written.parquet");
    put(&fresh, b"a writer's file, not committed yet");
    // Outside every table's folder: never listed.
    let stray = format!("file://{}/db/stray.parquet", lake.root().display());
    put(&stray, b"stray");
    backdate(&lake.root(), &[local(&fresh)]);

    let dry = catalog
        .sweep_orphan_files(sweep_request(true), Vec::new())
        .await
        .unwrap();
    assert_eq!(
        orphan_names(&dry),
        [
            "never-committed.parquet",
            "failed-write.parquet",
            "unreferenced-m0.avro"
        ],
        "in location order: {:?}",
        dry.orphans
    );
    assert_eq!(dry.orphan_files, 3);
    assert_eq!(dry.orphan_bytes, 3 * b"orphan bytes".len() as u64);
    assert_eq!(dry.too_recent, 1);
    assert_eq!(dry.deleted, 0);
    assert_eq!(dry.directories_swept, 2);
    assert!(dry.skipped.is_empty(), "{:?}", dry.skipped);
    assert_eq!(dry.manifest_lists_read, 4);
    assert_eq!(dry.manifests_read, 4, "each manifest read once");
    assert!(
        orphans.iter().all(|o| exists(o)),
        "a dry run deletes nothing"
    );

    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(orphan_names(&report), orphan_names(&dry));
    assert_eq!(report.deleted, 3);
    for orphan in &orphans {
        assert!(!exists(orphan), "{orphan} is swept");
    }
    for file in &referenced {
        assert!(exists(file), "{file} is referenced and kept");
    }
    assert!(exists(&fresh) && exists(&stray));
    // Every metadata file any commit names is kept: each commit still loads its tables.
    for at in ["main", "dev", "main~1", "main~2", "main~3", "main~4"] {
        let loaded = catalog.load_table(&spec(at), &key("db.t")).await;
        assert!(loaded.is_ok(), "db.t at {at}: {loaded:?}");
    }
    assert!(
        catalog
            .load_table(&spec("main~1"), &key("db.gone"))
            .await
            .is_ok()
    );

    let again = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(again.orphan_files, 0);
    assert_eq!(again.too_recent, 1);
}

#[tokio::test]
async fn files_of_a_commit_that_lands_during_the_sweep_are_kept() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    let t = create(catalog, &main(), "db.t")
        .await
        .metadata
        .location
        .clone();
    let mut manifests = Vec::new();
    append_with_files(catalog, &main(), "db.t", 1, &mut manifests).await;
    // A slow writer's files, older than the grace period, not committed yet.
    let pending = snapshot_files(&t, 2, &mut manifests.clone());
    let orphan = format!("{t}/data/failed-write.parquet");
    put(&orphan, b"orphan");
    backdate(&lake.root(), &[]);

    let progress = Arc::new(SweepProgress::default());
    let plan = catalog
        .plan_sweep(
            &sweep_request(false),
            SweepContext {
                progress: progress.clone(),
                ..SweepContext::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(progress.phase(), Phase::Listing);
    assert_eq!(
        SweepProgress::get(&progress.files_listed),
        9,
        "2 metadata files, 3 + 3 of two snapshots, 1 orphan"
    );
    // The writer's commit lands between the listing and the deletes.
    let committed = append_with_files(catalog, &main(), "db.t", 2, &mut manifests).await;
    assert_eq!(committed, pending);
    let report = plan.finish(false).await.unwrap();
    assert_eq!(progress.phase(), Phase::Done);
    assert_eq!(SweepProgress::get(&progress.deleted), 1);
    assert_eq!(
        SweepProgress::get(&progress.referenced),
        report.referenced as u64
    );

    assert_eq!(orphan_names(&report), ["failed-write.parquet"]);
    assert!(!exists(&orphan));
    for file in &pending {
        assert!(exists(file), "{file} was committed during the sweep");
    }
    assert!(
        catalog
            .load_table(&spec("main"), &key("db.t"))
            .await
            .is_ok()
    );
}

/// A deleted branch's commits stay readable by their hashes while the catalog's window allows
/// (always, without a policy), so they keep their files until then; once past it, what only
/// they read goes.
#[tokio::test]
async fn commits_no_ref_reaches_keep_their_files_while_a_hash_may_read_them() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    create(catalog, &main(), "db.t").await;
    let mut manifests = Vec::new();
    let on_main = append_with_files(catalog, &main(), "db.t", 1, &mut manifests).await;
    new_branch(catalog, "dev", "main").await;
    let on_dev = append_with_files(catalog, &branch("dev"), "db.t", 2, &mut manifests).await;
    // A table only `dev` ever held, with a stray in its folder.
    let dev_only = create(catalog, &branch("dev"), "db.dev_only")
        .await
        .metadata
        .location
        .clone();
    let dev_only_files =
        append_with_files(catalog, &branch("dev"), "db.dev_only", 3, &mut Vec::new()).await;
    let stray = format!("{dev_only}/data/stray.parquet");
    put(&stray, b"stray");
    let dangling = head(catalog, "dev").await;
    move_ref(catalog, branch("dev"), Expected::Any, Target::Delete).await;
    backdate(&lake.root(), &[]);
    let by_hash = spec(&dangling.to_hex());

    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(orphan_names(&report), ["stray.parquet"]);
    for file in on_main.iter().chain(&on_dev).chain(&dev_only_files) {
        assert!(exists(file), "{file}");
    }
    for table in ["db.t", "db.dev_only"] {
        let loaded = catalog.load_table(&by_hash, &key(table)).await.unwrap();
        assert!(loaded.metadata.current_snapshot_id.is_some(), "{table}");
    }

    // Inside a window, the same.
    let kept = lake
        .catalog
        .clone()
        .with_retention(window(24 * 3600 * 1000))
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(kept.orphan_files, 0, "{:?}", kept.orphans);
    assert!(exists(&on_dev[0]) && exists(&dev_only_files[0]));

    // Past it, the hash is refused and what only `dev` read goes: from the folder of `db.t`,
    // which retained commits name, and the whole of `db.dev_only`'s, which only the stale
    // commits of the deleted branch name.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let catalog = lake.catalog.with_retention(window(10));
    assert!(catalog.load_table(&by_hash, &key("db.t")).await.is_err());
    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.forgotten_directories, 1, "{report:?}");
    let gone = orphan_names(&report);
    for file in on_dev.iter().chain(&dev_only_files) {
        assert!(gone.contains(&file_name(file)) && !exists(file), "{file}");
    }
    // And the metadata files `dev`'s commits wrote.
    assert_eq!(count_files(&local(&dev_only)), 0);
    assert!(
        gone.iter().any(|f| f.ends_with(".metadata.json")),
        "{gone:?}"
    );
    for file in &on_main {
        assert!(exists(file), "{file}");
    }
    assert!(
        catalog
            .load_table(&spec("main"), &key("db.t"))
            .await
            .is_ok()
    );
}

/// A table dropped without purge keeps its files while a retained commit holds it; past the
/// window no read can name it, and its folder, found through the stored commits past the
/// window, is swept whole.
#[tokio::test]
async fn a_dropped_tables_folder_is_swept_once_past_the_window() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    create(catalog, &main(), "db.kept").await;
    let kept = append_with_files(catalog, &main(), "db.kept", 1, &mut Vec::new()).await;
    let gone = create(catalog, &main(), "db.gone")
        .await
        .metadata
        .location
        .clone();
    append_with_files(catalog, &main(), "db.gone", 2, &mut Vec::new()).await;
    catalog
        .drop_table(&main(), &key("db.gone"), false, &meta("drop"))
        .await
        .unwrap();
    backdate(&lake.root(), &[]);
    let files = count_files(&local(&gone));
    assert!(files >= 5, "{files}");

    // Inside the window the commits before the drop still read it.
    let report = catalog
        .clone()
        .with_retention(window(24 * 3600 * 1000))
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.orphan_files, 0, "{:?}", report.orphans);
    assert_eq!(count_files(&local(&gone)), files);

    tokio::time::sleep(Duration::from_millis(20)).await;
    let short = catalog.clone().with_retention(window(10));
    let report = short
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.forgotten_directories, 1, "{report:?}");
    assert_eq!(report.deleted, files, "{:?}", report.orphans);
    assert_eq!(count_files(&local(&gone)), 0);
    for file in &kept {
        assert!(exists(file), "{file}");
    }
    assert!(
        short
            .load_table(&spec("main"), &key("db.kept"))
            .await
            .is_ok()
    );
}

/// Another catalog sharing the warehouse registered this catalog's table and wrote on, into
/// the same folder. Not knowing of it, a sweep would take its files; told of it, the sweep
/// leaves the folder alone.
#[tokio::test]
async fn a_folder_another_catalog_keeps_a_table_in_is_left_alone() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    let folder = create(catalog, &main(), "db.t")
        .await
        .metadata
        .location
        .clone();
    let mut manifests = Vec::new();
    append_with_files(catalog, &main(), "db.t", 1, &mut manifests).await;
    let ours = catalog
        .load_table(&spec("main"), &key("db.t"))
        .await
        .unwrap()
        .metadata_location
        .unwrap();
    let other = neighbour(&lake, "other").await;
    other
        .register_table(&main(), &key("db.copy"), &ours, false, &meta("register"))
        .await
        .unwrap();
    let theirs = append_with_files(&other, &main(), "db.copy", 2, &mut manifests).await;
    backdate(&lake.root(), &[]);

    let blind = catalog
        .sweep_orphan_files(sweep_request(true), Vec::new())
        .await
        .unwrap();
    for file in &theirs {
        assert!(orphan_names(&blind).contains(&file_name(file)), "{file}");
    }

    let report = catalog
        .sweep_orphan_files(sweep_request(false), vec![other.clone()])
        .await
        .unwrap();
    assert_eq!(report.other_catalogs, 1);
    assert_eq!(report.orphan_files, 0, "{:?}", report.orphans);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert_eq!(report.skipped[0].location, folder);
    assert!(
        report.skipped[0].reason.contains("acme/other"),
        "{:?}",
        report.skipped
    );
    for file in &theirs {
        assert!(exists(file), "{file}");
    }
    assert!(
        other
            .load_table(&spec("main"), &key("db.copy"))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_folder_whose_files_are_missing_is_left_alone() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    let t = create(catalog, &main(), "db.t")
        .await
        .metadata
        .location
        .clone();
    let files = append_with_files(catalog, &main(), "db.t", 1, &mut Vec::new()).await;
    std::fs::remove_file(local(&files[1])).unwrap();
    let orphan = format!("{t}/data/orphan.parquet");
    put(&orphan, b"orphan");
    backdate(&lake.root(), &[]);

    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.orphan_files, 0);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert_eq!(report.skipped[0].location, t);
    assert!(
        report.skipped[0].reason.contains("1-m0.avro"),
        "{:?}",
        report.skipped
    );
    assert!(exists(&orphan) && exists(&files[0]));
}

#[tokio::test]
async fn a_location_a_client_chose_is_never_listed() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    let chosen = format!("file://{}/db/shared", lake.root().display());
    let mut table = new_table();
    table.location = chosen.clone();
    catalog
        .create_table(&main(), &key("db.t"), table, &meta("create"))
        .await
        .unwrap();
    append_with_files(catalog, &main(), "db.t", 1, &mut Vec::new()).await;
    let foreign = format!("{chosen}/data/another-tables-file.parquet");
    put(&foreign, b"not this catalog's");
    backdate(&lake.root(), &[]);

    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.directories_swept, 0);
    assert_eq!(report.skipped.len(), 1);
    assert!(report.skipped[0].reason.contains("chosen by a client"));
    assert!(exists(&foreign));
}

#[tokio::test]
async fn a_catalog_without_a_warehouse_has_nothing_to_sweep() {
    let catalog = Catalog::create(
        Arc::new(MemoryBackend::new()),
        Arc::new(ObjectCache::new(1 << 20)),
        "acme",
        "bare",
        "ana",
    )
    .await
    .unwrap();
    let error = catalog
        .sweep_orphan_files(sweep_request(true), Vec::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no warehouse"), "{error}");
}

/// A commit no ref reaches any more but a ref log records is still what `ref#<time>` reads.
async fn commits_only_a_ref_log_records_keep_their_files(lake: Lake) {
    let catalog = &lake.catalog;
    create(catalog, &main(), "db.t").await;
    let mut manifests = Vec::new();
    append_with_files(catalog, &main(), "db.t", 1, &mut manifests).await;
    new_branch(catalog, "dev", "main").await;
    let abandoned = append_with_files(catalog, &branch("dev"), "db.t", 2, &mut manifests).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let before_reset = Timestamp::now();
    tokio::time::sleep(Duration::from_millis(5)).await;
    reset(catalog, "dev", head(catalog, "main").await).await;
    backdate(&lake.root(), &[]);

    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.orphan_files, 0, "{:?}", report.orphans);
    for file in &abandoned {
        assert!(
            exists(file),
            "{file} is read by dev at a time before the reset"
        );
    }
    let at = RefSpec::AtTime(RefName::new("dev").unwrap(), before_reset);
    let loaded = catalog.load_table(&at, &key("db.t")).await.unwrap();
    assert_eq!(loaded.metadata.current_snapshot_id, Some(2));
}

#[tokio::test]
async fn commits_only_a_ref_log_records_keep_their_files_in_memory() {
    commits_only_a_ref_log_records_keep_their_files(lake().await).await;
}

#[tokio::test]
async fn commits_only_a_ref_log_records_keep_their_files_in_sqlite() {
    commits_only_a_ref_log_records_keep_their_files(sqlite_lake().await).await;
}

/// Object collection deletes the commits through which a sweep would find the folder of a
/// table only a deleted branch held; it records the folder first, so a sweep after it still
/// empties the folder, which then leaves the record.
#[tokio::test]
async fn a_folder_only_collected_commits_named_is_still_swept() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    new_branch(catalog, "dev", "main").await;
    let gone = create(catalog, &branch("dev"), "db.gone")
        .await
        .metadata
        .location
        .clone();
    append_with_files(catalog, &branch("dev"), "db.gone", 1, &mut Vec::new()).await;
    move_ref(catalog, branch("dev"), Expected::Any, Target::Delete).await;
    backdate(&lake.root(), &[]);
    assert!(count_files(&local(&gone)) > 0);
    tokio::time::sleep(Duration::from_millis(20)).await;

    let short = catalog.clone().with_retention(window(10));
    let request = CollectRequest {
        dry_run: false,
        slack_ms: 0,
    };
    let collected = short
        .collect_objects(request, Arc::default())
        .await
        .unwrap();
    assert!(collected.unreachable_commits > 0, "{collected:?}");
    let records = catalog.store().as_ref();
    let forgotten = Forgotten::new(records, "acme", "lake").unwrap();
    let recorded = forgotten.load().await.unwrap();
    assert_eq!(recorded.keys().collect::<Vec<_>>(), [&gone]);

    let report = short
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.forgotten_directories, 1, "{report:?}");
    assert_eq!(count_files(&local(&gone)), 0);
    assert!(forgotten.load().await.unwrap().is_empty());
}
