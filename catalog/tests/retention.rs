//! A retention policy: reads of commits older than a ref's window are refused with a message
//! naming it (heads and tags never are), and once those commits are outside it the sweep frees
//! the files only they referenced, such as the manifest lists of expired snapshots.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::files::*;
use common::lake::*;
use pangolin_catalog::ResolveError;
use pangolin_catalog::iceberg::expire::Retention;
use pangolin_catalog::retention::{BranchRetention, RetentionPolicy};

/// A policy whose windows are `ms` long, and `keep/*` branches' a day.
fn policy(ms: u64) -> Option<Arc<RetentionPolicy>> {
    Some(Arc::new(RetentionPolicy {
        history_ms: ms,
        branches: vec![BranchRetention {
            pattern: "keep/*".into(),
            history_ms: 24 * 3600 * 1000,
        }],
    }))
}

fn beyond(result: Result<pangolin_catalog::Resolved, ResolveError>) -> String {
    match result {
        Err(error @ ResolveError::BeyondRetention { .. }) => error.to_string(),
        other => panic!("not refused as beyond retention: {other:?}"),
    }
}

fn tag_ref(name: &str) -> Reference {
    Reference::tag(RefName::new(name).unwrap())
}

#[tokio::test]
async fn reads_older_than_a_window_are_refused_but_heads_and_tags_never() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.t").await;
    let tagged = head(&lake.catalog, "main").await;
    move_ref(
        &lake.catalog,
        tag_ref("v1"),
        Expected::Absent,
        Target::Set(tagged),
    )
    .await;
    new_branch(&lake.catalog, "keep/audit", "main").await;
    append(&lake.catalog, &main(), "db.t", 1, None, 1)
        .await
        .unwrap();
    let old = head(&lake.catalog, "main").await;
    let before = Timestamp::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    append(&lake.catalog, &main(), "db.t", 2, Some(1), 2)
        .await
        .unwrap();
    let catalog = lake.catalog.with_retention(policy(10));
    let newest = head(&catalog, "main").await;

    let message = beyond(catalog.resolve(&spec("main~1")).await);
    assert!(
        message.contains("main~1") && message.contains("commits since"),
        "{message}"
    );
    beyond(
        catalog
            .resolve(&spec(&format!("main#{}", old.to_hex())))
            .await,
    );
    beyond(
        catalog
            .resolve(&RefSpec::AtTime(RefName::new("main").unwrap(), before))
            .await,
    );
    beyond(catalog.resolve(&spec(&old.to_hex())).await);
    assert!(
        catalog
            .load_table(&spec("main~1"), &key("db.t"))
            .await
            .is_err(),
        "a table read is refused the same way"
    );

    // Heads whatever their age, and what the log says a ref pointed at within its window.
    assert_eq!(catalog.resolve(&spec("main")).await.unwrap().commit, newest);
    let at_head = format!("main#{}", newest.to_hex());
    assert_eq!(
        catalog.resolve(&spec(&at_head)).await.unwrap().commit,
        newest
    );
    let now = RefSpec::AtTime(RefName::new("main").unwrap(), Timestamp::now());
    assert_eq!(catalog.resolve(&now).await.unwrap().commit, newest);
    assert_eq!(catalog.resolve(&spec("v1")).await.unwrap().commit, tagged);
    assert_eq!(
        catalog
            .resolve(&spec(&tagged.to_hex()))
            .await
            .unwrap()
            .commit,
        tagged,
        "a bare hash a tag points at"
    );
    // `keep/*` branches keep a day.
    let keep = RefSpec::AtTime(RefName::new("keep/audit").unwrap(), before);
    assert_eq!(catalog.resolve(&keep).await.unwrap().commit, tagged);
    assert!(
        catalog
            .load_table(&spec("main"), &key("db.t"))
            .await
            .is_ok()
    );

    // Without a policy, everything is readable.
    let catalog = catalog.with_retention(None);
    assert_eq!(catalog.resolve(&spec("main~1")).await.unwrap().commit, old);
}

#[tokio::test]
async fn a_sweep_frees_what_only_commits_past_the_window_referenced() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    create(catalog, &main(), "db.t").await;
    let mut manifests = Vec::new();
    let mut files = Vec::new();
    for id in 1..=3 {
        files.push(append_with_files(catalog, &main(), "db.t", id, &mut manifests).await);
    }
    let expired = catalog
        .expire_snapshots(
            &main(),
            &Retention {
                older_than_ms: Some(Timestamp::now().as_millis() + 60_000),
                retain_last: Some(1),
            },
            Timestamp::now(),
            false,
            "ops",
        )
        .await
        .unwrap();
    assert_eq!(expired.tables[0].expired, vec![1, 2]);
    let before_expiry = head(catalog, "main~1").await;
    move_ref(
        catalog,
        tag_ref("before-expiry"),
        Expected::Absent,
        Target::Set(before_expiry),
    )
    .await;
    backdate(&lake.root(), &[]);
    tokio::time::sleep(Duration::from_millis(20)).await;

    // Without a policy every commit keeps its files; with one, the tag still does.
    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.orphan_files, 0, "{:?}", report.orphans);
    let catalog = lake.catalog.with_retention(policy(10));
    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    assert_eq!(report.orphan_files, 0, "{:?}", report.orphans);

    move_ref(
        &catalog,
        tag_ref("before-expiry"),
        Expected::Any,
        Target::Delete,
    )
    .await;
    let report = catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap();
    // The expired snapshots' manifest lists: the kept snapshot's list names every manifest,
    // and the current metadata's log names the earlier metadata files.
    assert_eq!(orphan_names(&report), ["snap-1.avro", "snap-2.avro"]);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(!exists(&files[0][2]) && !exists(&files[1][2]));
    for file in files
        .iter()
        .flatten()
        .filter(|f| !f.ends_with("snap-1.avro") && !f.ends_with("snap-2.avro"))
    {
        assert!(exists(file), "{file}");
    }
    assert!(
        catalog
            .load_table(&spec("main"), &key("db.t"))
            .await
            .is_ok()
    );
}
