//! Snapshot expiry on a branch: one commit on that branch, nothing on any other, earlier
//! commits still read every snapshot they had, a dry run writes nothing, no file is deleted.
#![allow(clippy::unwrap_used)]

mod common;

use common::lake::*;
use pangolin_catalog::iceberg::expire::Retention;
use pangolin_catalog::maintenance::ExpireReport;

/// Table `db.t` with snapshots 1..=`n` on `main`, and `db.one` with a single snapshot.
async fn tables(lake: &Lake, n: i64) {
    let catalog = &lake.catalog;
    create(catalog, &main(), "db.t").await;
    for id in 1..=n {
        let parent = (id > 1).then(|| id - 1);
        append(catalog, &main(), "db.t", id, parent, id)
            .await
            .unwrap();
    }
    create(catalog, &main(), "db.one").await;
    append(catalog, &main(), "db.one", 100, None, 1)
        .await
        .unwrap();
}

/// Everything is old; each branch of a table keeps its `keep` newest snapshots.
fn keep_last(keep: u32) -> Retention {
    Retention {
        older_than_ms: Some(Timestamp::now().as_millis() + 60_000),
        retain_last: Some(keep),
    }
}

/// Expires on `at` as `ops`, now, and returns the report.
async fn expire(
    catalog: &Catalog,
    at: &Reference,
    retention: Retention,
    dry_run: bool,
) -> ExpireReport {
    catalog
        .expire_snapshots(at, &retention, Timestamp::now(), dry_run, "ops")
        .await
        .unwrap()
}

async fn snapshot_ids(catalog: &Catalog, at: &str, table: &str) -> Vec<i64> {
    let loaded = catalog.load_table(&spec(at), &key(table)).await.unwrap();
    loaded
        .metadata
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .collect()
}

#[tokio::test]
async fn expiry_on_a_branch_is_one_commit_there_and_nothing_elsewhere() {
    let lake = lake().await;
    tables(&lake, 5).await;
    let catalog = &lake.catalog;
    new_branch(catalog, "dev", "main").await;
    let main_before = head(catalog, "main").await;
    let dev_before = head(catalog, "dev").await;
    let files_before = count_files(&lake.root().join("db"));

    let report = expire(catalog, &branch("dev"), keep_last(2), false).await;
    assert_eq!(report.read_at, dev_before);
    assert_eq!(report.tables_read, 2);
    assert_eq!(report.tables.len(), 1, "db.one keeps its only snapshot");
    assert_eq!(report.tables[0].key, key("db.t"));
    assert_eq!(report.tables[0].expired, vec![1, 2, 3]);
    assert_eq!(report.tables[0].kept, 2);

    let commit = report.commit.unwrap();
    assert_eq!(head(catalog, "dev").await, commit);
    let landed = catalog.odb().commit(&commit).await.unwrap();
    assert_eq!(landed.parents, vec![dev_before]);
    assert_eq!(landed.author, "ops");
    assert_eq!(landed.properties["operation"], "expire-snapshots");
    assert_eq!(landed.message, "expire 3 snapshots of 1 tables on dev");

    assert_eq!(snapshot_ids(catalog, "dev", "db.t").await, vec![4, 5]);
    assert_eq!(
        snapshot_ids(catalog, "main", "db.t").await,
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(
        head(catalog, "main").await,
        main_before,
        "main did not move"
    );
    assert_eq!(
        snapshot_ids(catalog, "dev~1", "db.t").await,
        vec![1, 2, 3, 4, 5],
        "the commit before the expiry still reads every snapshot"
    );
    let current = catalog
        .load_table(&spec("dev"), &key("db.t"))
        .await
        .unwrap();
    assert_eq!(current.metadata.current_snapshot_id, Some(5));
    assert!(
        count_files(&lake.root().join("db")) >= files_before,
        "expiry deletes no file"
    );

    // Nothing more to expire: no commit.
    let again = expire(catalog, &branch("dev"), keep_last(2), false).await;
    assert!(again.tables.is_empty() && again.commit.is_none());
    assert_eq!(head(catalog, "dev").await, commit);
}

#[tokio::test]
async fn a_dry_run_reports_and_writes_nothing() {
    let lake = lake().await;
    tables(&lake, 4).await;
    let catalog = &lake.catalog;
    let before = head(catalog, "main").await;
    let report = expire(catalog, &main(), keep_last(1), true).await;
    assert_eq!(report.tables[0].expired, vec![1, 2, 3]);
    assert!(report.commit.is_none());
    assert_eq!(head(catalog, "main").await, before);
    assert_eq!(
        snapshot_ids(catalog, "main", "db.t").await,
        vec![1, 2, 3, 4]
    );
}

#[tokio::test]
async fn the_tables_own_settings_apply_when_the_request_sets_none() {
    let lake = lake().await;
    tables(&lake, 3).await;
    let catalog = &lake.catalog;
    // Everything is younger than the default five days: nothing expires.
    let report = expire(catalog, &main(), Retention::default(), false).await;
    assert!(report.tables.is_empty() && report.commit.is_none());
    // Ten days later, by the table's defaults (one snapshot), 1 and 2 go.
    let later = Timestamp::from_millis(Timestamp::now().as_millis() + 10 * 24 * 3600 * 1000);
    let report = catalog
        .expire_snapshots(&main(), &Retention::default(), later, false, "ops")
        .await
        .unwrap();
    assert_eq!(report.tables[0].expired, vec![1, 2]);
    assert_eq!(snapshot_ids(catalog, "main", "db.t").await, vec![3]);
}

#[tokio::test]
async fn expiry_of_a_missing_branch_is_refused() {
    let lake = lake().await;
    let error = lake
        .catalog
        .expire_snapshots(
            &branch("nope"),
            &keep_last(1),
            Timestamp::now(),
            false,
            "ops",
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("nope"), "{error}");
}

#[tokio::test]
async fn refs_past_their_maximum_age_are_removed_with_what_only_they_kept() {
    let lake = lake().await;
    tables(&lake, 5).await;
    let catalog = &lake.catalog;
    let tag = update(
        json!({"action": "set-snapshot-ref", "ref-name": "old", "type": "tag",
        "snapshot-id": 1, "max-ref-age-ms": 1}),
    );
    catalog
        .commit_table(&main(), &key("db.t"), vec![], vec![tag], &meta("tag"))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;

    let report = expire(catalog, &main(), keep_last(2), false).await;
    assert_eq!(
        report.tables[0].expired,
        vec![1, 2, 3],
        "the tag no longer keeps 1"
    );
    assert_eq!(report.tables[0].expired_refs, ["old"]);
    let landed = catalog.odb().commit(&report.commit.unwrap()).await.unwrap();
    assert_eq!(
        landed.message,
        "expire 3 snapshots and 1 refs of 1 tables on main"
    );
    assert_eq!(landed.properties["expired-refs"], "1");
    let loaded = catalog
        .load_table(&spec("main"), &key("db.t"))
        .await
        .unwrap();
    assert!(!loaded.metadata.refs.contains_key("old"));
    assert!(loaded.metadata.refs.contains_key("main"));
}
