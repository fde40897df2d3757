//! The sweep over random histories: branches made, reset and deleted, appends on either
//! branch, drops, snapshot expiries, tags made and deleted, and stray files. After a sweep
//! without a retention policy, every table at every stored commit (reached by a ref, a tag or
//! a ref log, or only by its hash, as a deleted branch's) loads, and every file its snapshots
//! read (manifest lists, manifests, data files) is still there; every stray file in the folder
//! of a table those commits hold is gone. Then, with every commit but the heads of branches
//! and tags past a short window, a sweep leaves every table on a head whole and empties the
//! folder of every other table ever made. Then the store's objects are collected past the same
//! window: everything the heads reach is still whole, and every other commit is gone.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::files::*;
use common::lake::*;
use pangolin_catalog::collect::CollectRequest;
use pangolin_catalog::iceberg::expire::Retention;
use pangolin_catalog::iceberg::manifest;
use pangolin_catalog::reach;
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{Content, ObjectKind};
use proptest::prelude::*;

const TABLES: [&str; 2] = ["db.t0", "db.t1"];

#[derive(Debug, Clone)]
enum Op {
    Append {
        dev: bool,
        table: usize,
    },
    /// Creates `dev` at `main`'s head, or resets it there.
    Branch,
    DeleteDev,
    Drop {
        dev: bool,
        table: usize,
    },
    Expire {
        dev: bool,
    },
    Tag,
    Untag,
    /// A stray file in the folder of a table ever created.
    Stray {
        table: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), 0..2usize).prop_map(|(dev, table)| Op::Append { dev, table }),
        1 => Just(Op::Branch),
        1 => Just(Op::DeleteDev),
        1 => (any::<bool>(), 0..2usize).prop_map(|(dev, table)| Op::Drop { dev, table }),
        1 => any::<bool>().prop_map(|dev| Op::Expire { dev }),
        1 => Just(Op::Tag),
        1 => Just(Op::Untag),
        2 => (0..4usize).prop_map(|table| Op::Stray { table }),
    ]
}

struct World {
    lake: Lake,
    next_snapshot: i64,
    tags: Vec<String>,
    folders: Vec<String>,
    strays: Vec<String>,
}

impl World {
    fn on(&self, dev: bool) -> Reference {
        branch(if dev { "dev" } else { "main" })
    }

    async fn has_dev(&self) -> bool {
        self.lake.catalog.resolve(&spec("dev")).await.is_ok()
    }

    async fn apply(&mut self, op: &Op) {
        let catalog = &self.lake.catalog;
        match op {
            Op::Append { dev, table } => {
                if *dev && !self.has_dev().await {
                    return;
                }
                let at = self.on(*dev);
                let name = TABLES[*table];
                let spec = RefSpec::Named(at.name.clone());
                let mut manifests = match catalog.load_table(&spec, &key(name)).await {
                    Ok(loaded) => current_manifests(&loaded.metadata),
                    Err(_) => {
                        let created = catalog
                            .create_table(&at, &key(name), new_table(), &meta("create"))
                            .await
                            .unwrap()
                            .1;
                        self.folders.push(created.metadata.location.clone());
                        Vec::new()
                    }
                };
                self.next_snapshot += 1;
                append_with_files(catalog, &at, name, self.next_snapshot, &mut manifests).await;
            }
            Op::Branch => {
                let head = head(catalog, "main").await;
                move_ref(catalog, branch("dev"), Expected::Any, Target::Set(head)).await;
            }
            Op::DeleteDev => {
                if self.has_dev().await {
                    move_ref(catalog, branch("dev"), Expected::Any, Target::Delete).await;
                }
            }
            Op::Drop { dev, table } => {
                if *dev && !self.has_dev().await {
                    return;
                }
                let _ = catalog
                    .drop_table(&self.on(*dev), &key(TABLES[*table]), false, &meta("drop"))
                    .await;
            }
            Op::Expire { dev } => {
                if *dev && !self.has_dev().await {
                    return;
                }
                let retention = Retention {
                    older_than_ms: Some(Timestamp::now().as_millis() + 60_000),
                    retain_last: Some(1),
                };
                catalog
                    .expire_snapshots(&self.on(*dev), &retention, Timestamp::now(), false, "ops")
                    .await
                    .unwrap();
            }
            Op::Tag => {
                let name = format!("t{}", self.tags.len());
                let head = head(catalog, "main").await;
                let tag = Reference::tag(RefName::new(&name).unwrap());
                move_ref(catalog, tag, Expected::Absent, Target::Set(head)).await;
                self.tags.push(name);
            }
            Op::Untag => {
                if let Some(name) = self.tags.pop() {
                    let tag = Reference::tag(RefName::new(&name).unwrap());
                    move_ref(catalog, tag, Expected::Any, Target::Delete).await;
                }
            }
            Op::Stray { table } => {
                if self.folders.is_empty() {
                    return;
                }
                let folder = &self.folders[table % self.folders.len()];
                let stray = format!("{folder}/data/stray-{}.parquet", self.strays.len());
                put(&stray, b"stray");
                self.strays.push(stray);
            }
        }
    }
}

/// The manifests the current snapshot's manifest list names: what a fast append keeps.
fn current_manifests(metadata: &pangolin_catalog::iceberg::TableMetadata) -> Vec<String> {
    let Some(current) = metadata.current_snapshot_id else {
        return Vec::new();
    };
    let snapshot = metadata
        .snapshots
        .iter()
        .find(|s| s.snapshot_id == current)
        .unwrap();
    let list = std::fs::read(local(snapshot.manifest_list.as_ref().unwrap())).unwrap();
    manifest::manifest_paths(&list).unwrap()
}

/// Every commit stored: without a retention policy, a bare hash reads any of them.
async fn retained_commits(catalog: &Catalog) -> BTreeSet<ObjectId> {
    let store = catalog.store().as_ref();
    let repo = catalog.odb().repo();
    reach::stored_objects(store, repo, Some(ObjectKind::Commit), |_| {})
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// What the tables of retained commits hold: their folders and the files their snapshots read.
#[derive(Default)]
struct Held {
    folders: BTreeSet<String>,
    files: BTreeSet<String>,
}

/// Checks that every table at `commit` loads and every file its snapshots read exists, and
/// adds them to `held`.
async fn check_commit(catalog: &Catalog, commit: ObjectId, held: &mut Held) {
    let tree = catalog.odb().commit(&commit).await.unwrap().tree;
    let page = tree::list(catalog.odb(), &tree, &KeyRange::all(), usize::MAX)
        .await
        .unwrap();
    let at = spec(&commit.to_hex());
    for (key, entry) in page.entries {
        if !matches!(entry.content, Content::IcebergTable { .. }) {
            continue;
        }
        let loaded = catalog.load_table(&at, &key).await;
        let loaded = loaded.unwrap_or_else(|e| panic!("{key} at {commit}: {e}"));
        held.folders.insert(loaded.metadata.location.clone());
        for snapshot in &loaded.metadata.snapshots {
            held.files.extend(snapshot.manifest_list.clone());
            let list = local(snapshot.manifest_list.as_ref().unwrap());
            let bytes = std::fs::read(&list)
                .unwrap_or_else(|e| panic!("{key} at {commit}: {}: {e}", list.display()));
            for path in manifest::manifest_paths(&bytes).unwrap() {
                let bytes = std::fs::read(local(&path))
                    .unwrap_or_else(|e| panic!("{key} at {commit}: {path}: {e}"));
                for file in manifest::content_file_paths(&bytes).unwrap() {
                    assert!(exists(&file), "{key} at {commit}: {file} was swept");
                    held.files.insert(file);
                }
                held.files.insert(path);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_sweep_keeps_what_every_retained_commit_reads_and_takes_the_strays(
        ops in prop::collection::vec(op(), 1..24),
    ) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let mut world = World {
                    lake: lake().await,
                    next_snapshot: 0,
                    tags: Vec::new(),
                    folders: Vec::new(),
                    strays: Vec::new(),
                };
                for op in &ops {
                    world.apply(op).await;
                }
                backdate(&world.lake.root(), &[]);
                let catalog = &world.lake.catalog;
                let report = catalog.sweep_orphan_files(sweep_request(false), Vec::new()).await.unwrap();
                assert!(report.skipped.is_empty(), "{:?}", report.skipped);
                let mut held = Held::default();
                for commit in retained_commits(catalog).await {
                    check_commit(catalog, commit, &mut held).await;
                }
                for orphan in &report.orphans {
                    let path = orphan.location.strip_prefix("file://").unwrap();
                    let named = held.files.iter().any(|f| f.strip_prefix("file://") == Some(path));
                    assert!(!named, "{} is read by a retained commit", orphan.location);
                }
                let (swept, kept): (Vec<&String>, Vec<&String>) = world.strays.iter().partition(
                    |stray| held.folders.iter().any(|f| stray.starts_with(&format!("{f}/"))),
                );
                assert!(report.orphan_files >= swept.len(), "{:?}", report.orphans);
                for stray in swept {
                    assert!(!exists(stray), "{stray} is not swept");
                }
                for stray in kept {
                    assert!(exists(stray), "{stray} is outside every retained table's folder");
                }

                // Then a sweep with every commit but the heads of branches and tags past a short
                // window: every table on a head loads and reads all its files, and the folder
                // of every other table ever made (dropped, or only on a deleted branch or in
                // history) is empty.
                let stored = retained_commits(catalog).await;
                let heads = head_history(catalog).await;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                let short = catalog.clone().with_retention(window(10));
                let report = short.sweep_orphan_files(sweep_request(false), Vec::new()).await.unwrap();
                assert!(report.skipped.is_empty(), "{:?}", report.skipped);
                let refs = reach::all_refs(catalog.store().as_ref(), catalog.odb().repo())
                    .await
                    .unwrap();
                let mut held = Held::default();
                for (_, head) in &refs {
                    check_commit(catalog, *head, &mut held).await;
                }
                for folder in world.folders.iter().filter(|f| !held.folders.contains(*f)) {
                    assert_eq!(count_files(&local(folder)), 0, "{folder} is not swept whole");
                }

                // Then the store's objects, past the same window: what the heads reach stays
                // whole (their files are another matter: the sweep took what only history read)
                // and every table on a head loads; every other commit is gone.
                let request = CollectRequest { dry_run: false, slack_ms: 0 };
                let collected = short
                    .collect_objects(request, Arc::default())
                    .await
                    .unwrap();
                assert_eq!(collected.deleted, collected.unreachable, "{collected:?}");
                let store = catalog.store().as_ref();
                let repo = catalog.odb().repo();
                let mut whole = reach::Reach::default();
                for commit in &heads {
                    whole.push(*commit);
                }
                while !whole.next(store, repo).await.unwrap().is_empty() {}
                let mut held = Held::default();
                for (_, head) in &refs {
                    check_commit(catalog, *head, &mut held).await;
                }
                for gone in stored.difference(&heads) {
                    assert!(!store.contains(repo, gone).await.unwrap(), "{gone} outlived its window");
                }
            });
    }
}

/// Every commit the heads of branches and tags reach.
async fn head_history(catalog: &Catalog) -> BTreeSet<ObjectId> {
    let mut frontier: Vec<ObjectId> =
        reach::all_refs(catalog.store().as_ref(), catalog.odb().repo())
            .await
            .unwrap()
            .into_iter()
            .map(|(_, head)| head)
            .collect();
    let mut seen = BTreeSet::new();
    while let Some(id) = frontier.pop() {
        if seen.insert(id) {
            frontier.extend(
                catalog
                    .odb()
                    .commit(&id)
                    .await
                    .unwrap()
                    .parents
                    .iter()
                    .copied(),
            );
        }
    }
    seen
}

/// Writers appending while sweeps run lose nothing: their files are newer than the grace
/// period until their commits land, and whatever lands is marked before anything goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_running_during_sweeps_lose_nothing() {
    let lake = Arc::new(lake().await);
    let catalog = &lake.catalog;
    let mut strays = Vec::new();
    for (i, name) in TABLES.iter().enumerate() {
        let location = create(catalog, &main(), name)
            .await
            .metadata
            .location
            .clone();
        append_with_files(catalog, &main(), name, 1, &mut Vec::new()).await;
        let stray = format!("{location}/data/stray-{i}.parquet");
        put(&stray, b"stray");
        strays.push(stray);
    }
    backdate(&lake.root(), &[]);

    let mut writers = tokio::task::JoinSet::new();
    for name in TABLES {
        let lake = lake.clone();
        writers.spawn(async move {
            for id in 2..=15 {
                let loaded = lake
                    .catalog
                    .load_table(&spec("main"), &key(name))
                    .await
                    .unwrap();
                let mut manifests = current_manifests(&loaded.metadata);
                append_with_files(&lake.catalog, &main(), name, id, &mut manifests).await;
            }
        });
    }
    let mut swept = 0;
    while !writers.is_empty() {
        let report = catalog
            .sweep_orphan_files(sweep_request(false), Vec::new())
            .await
            .unwrap();
        swept += report.deleted;
        while let Some(done) = writers.try_join_next() {
            done.unwrap();
        }
    }
    swept += catalog
        .sweep_orphan_files(sweep_request(false), Vec::new())
        .await
        .unwrap()
        .deleted;
    assert_eq!(swept, strays.len());
    for stray in &strays {
        assert!(!exists(stray));
    }
    let mut held = Held::default();
    for commit in retained_commits(catalog).await {
        check_commit(catalog, commit, &mut held).await;
    }
    for name in TABLES {
        let loaded = catalog.load_table(&spec("main"), &key(name)).await.unwrap();
        assert_eq!(loaded.metadata.snapshots.len(), 15, "{name}");
    }
}
