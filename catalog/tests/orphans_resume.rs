//! A sweep whose mark phase fails part way resumes from its checkpoints: what it read is not
//! read again, it keeps the first run's start, it ends as a sweep run whole would, and its
//! checkpoints are deleted once it succeeds.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::files::*;
use common::lake::*;
use pangolin_catalog::orphans::{Checkpoints, MarkError, SweepContext, SweepError, SweepProgress};
use pangolin_records::RecordStore;

fn checkpoints(catalog: &Catalog) -> Checkpoints {
    let records: Arc<dyn RecordStore> = catalog.store().clone();
    Checkpoints::new(records, "acme", "lake", "1764770000000-0a1b2c3d")
        .unwrap()
        .every(Duration::ZERO)
}

/// Tables whose metadata files are marked in the first chunks, and the one marked last.
const TABLES: usize = 20;

async fn a_failed_sweep_resumes_without_reading_again_what_it_read(lake: Lake) {
    let catalog = &lake.catalog;
    // Metadata files are marked in location order, 16 between two checkpoints: the 40 files of
    // `t00` to `t19` in three runs, of which the last holds `t16` to `t19`.
    let mut files = Vec::new();
    let mut strays = Vec::new();
    for i in 0..TABLES {
        let name = format!("db.t{i:02}");
        let location = create(catalog, &main(), &name)
            .await
            .metadata
            .location
            .clone();
        let id = i64::try_from(i).unwrap() + 1;
        files.push(append_with_files(catalog, &main(), &name, id, &mut Vec::new()).await);
        if i == 0 || i == TABLES - 1 {
            let stray = format!("{location}/data/stray.parquet");
            put(&stray, b"stray");
            strays.push(stray);
        }
    }
    // The last table's manifest list is unreadable for now.
    let list = local(&files[TABLES - 1][2]);
    let good = std::fs::read(&list).unwrap();
    std::fs::write(&list, b"not avro").unwrap();
    backdate(&lake.root(), &[]);

    let context = SweepContext {
        checkpoints: Some(checkpoints(catalog)),
        ..SweepContext::default()
    };
    let failed = catalog
        .plan_sweep(&sweep_request(false), context)
        .await
        .unwrap_err();
    assert!(
        matches!(failed, SweepError::Mark(MarkError::Unreadable { .. })),
        "{failed}"
    );
    let saved = checkpoints(catalog).load().await.unwrap().unwrap();
    for (i, written) in files.iter().enumerate() {
        let manifest = &written[1];
        assert_eq!(saved.read.contains(manifest), i < 16, "{manifest}");
        if i < 16 {
            for file in written {
                assert!(
                    saved.marked.contains(file),
                    "{file} is marked in a checkpoint"
                );
            }
        }
    }
    for stray in &strays {
        assert!(exists(stray), "nothing is deleted before the mark ends");
    }

    std::fs::write(&list, good).unwrap();
    backdate(&lake.root(), &[]);
    let progress = Arc::new(SweepProgress::default());
    let context = SweepContext {
        checkpoints: Some(checkpoints(catalog)),
        progress: progress.clone(),
        ..SweepContext::default()
    };
    let resumed = catalog
        .plan_sweep(&sweep_request(false), context)
        .await
        .unwrap()
        .finish(false)
        .await
        .unwrap();
    assert_eq!(
        resumed.started_ms, saved.started_ms,
        "the first run's start"
    );
    assert_eq!(resumed.reads_resumed, saved.read.len());
    assert_eq!(resumed.deleted, 2, "{:?}", resumed.orphans);
    for stray in &strays {
        assert!(!exists(stray), "{stray}");
    }
    for file in files.iter().flatten() {
        assert!(exists(file), "{file}");
    }

    // A sweep run whole reads every manifest; the resumed one read only those of the tables
    // no checkpoint had.
    let whole = catalog
        .sweep_orphan_files(sweep_request(true), Vec::new())
        .await
        .unwrap();
    assert_eq!(whole.orphan_files, 0);
    assert_eq!(whole.referenced, resumed.referenced);
    assert_eq!(whole.manifests_read, TABLES as u64);
    assert_eq!(resumed.manifests_read, 4, "{resumed:?}");
    assert_eq!(resumed.manifest_lists_read, 4, "{resumed:?}");
    assert!(
        checkpoints(catalog).load().await.unwrap().is_none(),
        "checkpoints go once a sweep succeeds"
    );
    let last = format!("db.t{:02}", TABLES - 1);
    assert!(catalog.load_table(&spec("main"), &key(&last)).await.is_ok());
}

#[tokio::test]
async fn a_failed_sweep_resumes_in_memory() {
    a_failed_sweep_resumes_without_reading_again_what_it_read(lake().await).await;
}

#[tokio::test]
async fn a_failed_sweep_resumes_in_sqlite() {
    a_failed_sweep_resumes_without_reading_again_what_it_read(sqlite_lake().await).await;
}

#[tokio::test]
async fn checkpoints_of_a_run_merge_in_order_and_any_success_clears_the_catalogs() {
    let lake = lake().await;
    let records: Arc<dyn RecordStore> = lake.catalog.store().clone();
    let mut first = Checkpoints::new(records.clone(), "acme", "lake", "run-1").unwrap();
    assert!(first.load().await.unwrap().is_none());
    for (i, started) in [(0, 100), (1, 100)] {
        let checkpoint = pangolin_catalog::orphans::Checkpoint {
            started_ms: started,
            read: vec![format!("file:///w/t/metadata/{i}-m0.avro")],
            marked: vec![format!("file:///w/t/data/{i}.parquet")],
            ..Default::default()
        };
        first.save(&checkpoint).await.unwrap();
    }
    let mut other = Checkpoints::new(records.clone(), "acme", "lake", "run-2").unwrap();
    other
        .save(&pangolin_catalog::orphans::Checkpoint {
            started_ms: 5,
            read: vec!["file:///w/u/metadata/x.avro".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let mut again = Checkpoints::new(records.clone(), "acme", "lake", "run-1").unwrap();
    let merged = again.load().await.unwrap().unwrap();
    assert_eq!(merged.started_ms, 100);
    assert_eq!(
        merged.read,
        [
            "file:///w/t/metadata/0-m0.avro",
            "file:///w/t/metadata/1-m0.avro"
        ]
    );
    assert_eq!(merged.marked.len(), 2);
    // Saving after a load goes after what was loaded.
    again
        .save(&pangolin_catalog::orphans::Checkpoint {
            started_ms: 100,
            read: vec!["file:///w/t/metadata/2-m0.avro".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let mut reread = Checkpoints::new(records.clone(), "acme", "lake", "run-1").unwrap();
    assert_eq!(reread.load().await.unwrap().unwrap().read.len(), 3);

    assert_eq!(again.clear().await.unwrap(), 4, "both runs' checkpoints");
    let mut cleared = Checkpoints::new(records.clone(), "acme", "lake", "run-2").unwrap();
    assert!(cleared.load().await.unwrap().is_none());
    assert!(Checkpoints::new(records, "acme", "lake", "a/b").is_err());
}
