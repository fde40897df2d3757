//! The events feed: what each change yields, paging and resuming at any cursor, and a
//! consumer that restarts while writers race on several branches.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::lake::*;
use pangolin_catalog::HistoryRequest;
use pangolin_catalog::events::{Change, Cursor, Event, EventKind, EventQuery, TableState};
use pangolin_merge::{FastForward, MergeOptions};

fn query(after: Option<Cursor>, limit: usize) -> EventQuery {
    EventQuery {
        after,
        limit,
        scan: 1_000,
        kinds: None,
        prefix: None,
        reference: None,
    }
}

async fn all_events(catalog: &Catalog, after: Option<Cursor>, limit: usize) -> Vec<Event> {
    let mut events = Vec::new();
    let mut after = after;
    loop {
        let page = catalog
            .events(&query(after, limit), &|_| true)
            .await
            .unwrap();
        assert!(page.events.len() <= limit);
        let done = page.events.is_empty();
        events.extend(page.events);
        if done {
            return events;
        }
        after = page.cursor;
    }
}

fn kinds(events: &[Event]) -> Vec<(&'static str, &str, String)> {
    events
        .iter()
        .map(|e| {
            let key = e.keys().next().map(|k| k.to_string()).unwrap_or_default();
            (e.kind.as_str(), e.reference.name.as_str(), key)
        })
        .collect()
}

fn request(message: &str) -> HistoryRequest {
    HistoryRequest {
        principal: "ana".into(),
        message: Some(message.into()),
        expected_head: None,
    }
}

#[tokio::test]
async fn every_change_yields_its_event_in_the_order_it_landed() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    create(catalog, &main(), "db.t").await;
    append(catalog, &main(), "db.t", 1, None, 1).await.unwrap();
    catalog
        .rename_table(&main(), &key("db.t"), &key("db.u"), &meta("mv"))
        .await
        .unwrap();
    let props = BTreeMap::from([("owner".to_owned(), "ana".to_owned())]);
    catalog
        .update_namespace_properties(&main(), &key("db"), &[], &props, &meta("props"))
        .await
        .unwrap();
    new_branch(catalog, "dev", "main").await;
    create(catalog, &branch("dev"), "db.d").await;
    let before_merge = head(catalog, "main").await;
    catalog
        .merge(
            &spec("dev"),
            &spec("main"),
            &MergeOptions {
                fast_forward: FastForward::Never,
                ..MergeOptions::default()
            },
            &request("merge dev"),
        )
        .await
        .unwrap();
    catalog
        .drop_table(&main(), &key("db.u"), false, &meta("drop"))
        .await
        .unwrap();
    // A reset: not commits on top of what main held.
    move_ref(catalog, main(), Expected::Any, Target::Set(before_merge)).await;
    move_ref(catalog, branch("dev"), Expected::Any, Target::Delete).await;
    // A failed commit yields nothing.
    assert!(
        append(catalog, &main(), "db.u", 9, Some(42), 2)
            .await
            .is_err()
    );

    let events = all_events(catalog, None, 100).await;
    assert_eq!(
        kinds(&events),
        vec![
            ("create-branch", "main", String::new()),
            ("create-namespace", "main", "db".into()),
            ("create-table", "main", "db.t".into()),
            ("update-table", "main", "db.t".into()),
            ("rename-table", "main", "db.u".into()),
            ("update-namespace-properties", "main", "db".into()),
            ("create-branch", "dev", String::new()),
            ("create-table", "dev", "db.d".into()),
            ("merge", "main", String::new()),
            ("create-table", "main", "db.d".into()),
            ("drop-table", "main", "db.u".into()),
            ("move-branch", "main", String::new()),
            ("drop-table", "main", "db.d".into()),
            ("create-table", "main", "db.u".into()),
            ("delete-branch", "dev", String::new()),
        ]
    );
    assert!(events.windows(2).all(|w| w[0].cursor < w[1].cursor));
    let rename = &events[4];
    let Change::Entry { previous_key, .. } = &rename.change else {
        panic!("a rename changes an entry");
    };
    assert_eq!(previous_key.as_ref(), Some(&key("db.t")));
    assert_eq!(rename.principal, "ana");
    assert_eq!(rename.message, "mv");

    // Table events carry what the metadata file says.
    let tables = catalog.event_tables(&events[2..4]).await;
    let Some(TableState::Read {
        snapshot: None,
        format_version,
        ..
    }) = &tables[0]
    else {
        panic!("a new table has no snapshot: {:?}", tables[0]);
    };
    assert_eq!(*format_version, 2);
    let Some(TableState::Read {
        snapshot: Some(snapshot),
        ..
    }) = &tables[1]
    else {
        panic!("an append names its snapshot: {:?}", tables[1]);
    };
    assert_eq!(snapshot.snapshot_id, 1);
    assert_eq!(snapshot.summary["operation"], "append");
    assert_eq!(catalog.event_tables(&events[..1]).await, vec![None]);
}

#[tokio::test]
async fn pages_resume_after_any_cursor_and_filters_keep_their_place() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    for i in 0..6 {
        create(catalog, &main(), &format!("db.t{i}")).await;
    }
    new_branch(catalog, "dev", "main").await;
    catalog
        .create_namespace(&branch("dev"), &key("other"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let all = all_events(catalog, None, 1_000).await;
    assert_eq!(all.len(), 10);
    for limit in [1, 2, 3, 7] {
        assert_eq!(all_events(catalog, None, limit).await, all, "limit {limit}");
    }
    for (i, event) in all.iter().enumerate() {
        let rest = all_events(catalog, Some(event.cursor), 3).await;
        assert_eq!(rest, all[i + 1..].to_vec(), "after {}", event.cursor);
        let text = event.cursor.to_string();
        assert_eq!(text.parse::<Cursor>().unwrap(), event.cursor);
    }
    let end = Cursor::end_of(all.last().unwrap().cursor.sequence);
    assert!(all_events(catalog, Some(end), 5).await.is_empty());

    // Filters: a page that matches nothing still says how far it read.
    let mut only_dev = query(None, 100);
    only_dev.reference = Some(RefName::new("dev").unwrap());
    let page = catalog.events(&only_dev, &|_| true).await.unwrap();
    assert_eq!(
        kinds(&page.events),
        vec![
            ("create-branch", "dev", String::new()),
            ("create-namespace", "dev", "other".into())
        ]
    );
    let mut tables_under_db = query(None, 100);
    tables_under_db.prefix = Some(key("db"));
    tables_under_db.kinds = Some(BTreeSet::from([EventKind::CreateTable]));
    let page = catalog.events(&tables_under_db, &|_| true).await.unwrap();
    assert_eq!(page.events.len(), 6);
    let mut nothing = query(None, 100);
    nothing.kinds = Some(BTreeSet::from([EventKind::DropView]));
    nothing.scan = 3;
    let page = catalog.events(&nothing, &|_| true).await.unwrap();
    assert!(page.events.is_empty());
    let far = page.cursor.unwrap();
    assert_eq!(far.index(), None, "the end of the third entry read");
    assert_eq!(
        all_events(catalog, Some(far), 100).await,
        all.iter()
            .filter(|e| e.cursor > far)
            .cloned()
            .collect::<Vec<_>>()
    );
    // What a caller may not see is left out, the cursor moving past it.
    let page = catalog
        .events(&query(None, 100), &|e| e.reference.name.as_str() == "dev")
        .await
        .unwrap();
    assert_eq!(page.events.len(), 2);
    assert_eq!(page.cursor, Some(Cursor::end_of(all[9].cursor.sequence)));
}

/// A small deterministic generator: the test must be repeatable.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % sides
    }
}

/// Writers race on three branches (group commit batches their commits), some of their
/// commits fail, and a consumer that restarts at random points from its last saved cursor
/// sees every landed change exactly once, in order, and nothing of the failed ones.
async fn consumer_sees_every_landed_change_once(catalog: Catalog, seed: u64) {
    const BRANCHES: [&str; 3] = ["main", "dev", "ops"];
    const WRITERS_PER_BRANCH: usize = 2;
    const COMMITS: usize = 15;
    for name in &BRANCHES[1..] {
        new_branch(&catalog, name, "main").await;
    }
    let catalog = Arc::new(catalog);
    let mut writers = tokio::task::JoinSet::new();
    for name in BRANCHES {
        for writer in 0..WRITERS_PER_BRANCH {
            let catalog = catalog.clone();
            writers.spawn(async move {
                let mut landed = Vec::new();
                for i in 0..COMMITS {
                    let ns = key(&format!("{name}_{writer}_{i}"));
                    catalog
                        .create_namespace(&branch(name), &ns, BTreeMap::new(), &meta("ns"))
                        .await
                        .unwrap();
                    landed.push((name.to_owned(), ns.to_string()));
                    // Fails: the namespace is there already.
                    assert!(
                        catalog
                            .create_namespace(&branch(name), &ns, BTreeMap::new(), &meta("again"))
                            .await
                            .is_err()
                    );
                }
                landed
            });
        }
    }
    // The consumer runs while they write; it saves its cursor with what it processed.
    let consumer = {
        let catalog = catalog.clone();
        tokio::spawn(async move {
            let mut dice = Dice(seed);
            let mut processed: Vec<Event> = Vec::new();
            let mut saved: Option<Cursor> = None;
            let mut quiet_rounds = 0;
            let mut restarts = 0;
            while quiet_rounds < 20 {
                // A restart: everything but the saved cursor is forgotten.
                let mut after = saved;
                let pages = 1 + dice.roll(4);
                for _ in 0..pages {
                    let limit = 1 + dice.roll(9) as usize;
                    let page = catalog
                        .events(&query(after, limit), &|_| true)
                        .await
                        .unwrap();
                    if page.events.is_empty() {
                        quiet_rounds += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    } else {
                        quiet_rounds = 0;
                    }
                    processed.extend(page.events);
                    after = page.cursor;
                    saved = after;
                }
                restarts += 1;
            }
            (processed, restarts)
        })
    };
    let mut landed = Vec::new();
    while let Some(result) = writers.join_next().await {
        landed.extend(result.unwrap());
    }
    let (processed, restarts) = consumer.await.unwrap();
    assert!(restarts > 1);
    assert!(processed.windows(2).all(|w| w[0].cursor < w[1].cursor));
    let namespaces: Vec<(String, String)> = processed
        .iter()
        .filter(|e| e.kind == EventKind::CreateNamespace)
        .map(|e| {
            (
                e.reference.name.to_string(),
                e.keys().next().unwrap().to_string(),
            )
        })
        .collect();
    let mut expected = landed.clone();
    expected.push(("main".to_owned(), "db".to_owned()));
    expected.sort();
    let mut seen = namespaces.clone();
    seen.sort();
    assert_eq!(seen, expected, "every landed change once, no failed one");
    // The only other events: the branches made (the catalog's first commit made main).
    let others: Vec<_> = processed
        .iter()
        .filter(|e| e.kind != EventKind::CreateNamespace)
        .map(|e| (e.kind, e.reference.name.to_string()))
        .collect();
    assert_eq!(
        others,
        vec![
            (EventKind::CreateBranch, "main".to_owned()),
            (EventKind::CreateBranch, "dev".to_owned()),
            (EventKind::CreateBranch, "ops".to_owned()),
        ]
    );
    // Per branch, events follow the order of the branch's history.
    for name in BRANCHES {
        let own = |k: &String| k.starts_with(&format!("{name}_"));
        let on_branch: Vec<String> = namespaces
            .iter()
            .filter(|(b, k)| b == name && own(k))
            .map(|(_, k)| k.clone())
            .collect();
        let log = catalog
            .log(
                &spec(name),
                &pangolin_catalog::LogFilter::default(),
                None,
                1_000,
            )
            .await
            .unwrap();
        let mut made: Vec<String> = Vec::new();
        for (id, _) in log.commits.iter().rev() {
            let detail = catalog
                .commit_detail(&spec(&id.to_hex()), None, 10)
                .await
                .unwrap();
            made.extend(detail.changes.changes.iter().map(|c| c.key.to_string()));
        }
        made.retain(|k| own(k));
        assert_eq!(made.len(), WRITERS_PER_BRANCH * COMMITS);
        assert_eq!(on_branch, made, "{name}: events in history order");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarting_consumer_sees_every_landed_change_once_in_memory() {
    for seed in [7, 1_234_567] {
        let lake = lake().await;
        consumer_sees_every_landed_change_once(lake.catalog, seed).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarting_consumer_sees_every_landed_change_once_on_sqlite() {
    let lake = sqlite_lake().await;
    let catalog = lake.catalog.clone();
    consumer_sees_every_landed_change_once(catalog, 99).await;
    drop(lake);
}

/// Events of commits that object collection deleted (past the retention window) are gone:
/// reading them says so and names the entry to continue after; later events still read.
#[tokio::test]
async fn events_of_collected_commits_are_gone_and_the_feed_continues_after_them() {
    use pangolin_catalog::collect::CollectRequest;
    use pangolin_catalog::events::EventsError;
    use pangolin_catalog::orphans::SweepProgress;

    let lake = lake().await;
    new_branch(&lake.catalog, "dev", "main").await;
    create(&lake.catalog, &branch("dev"), "db.gone").await;
    let dev = head(&lake.catalog, "dev").await;
    move_ref(
        &lake.catalog,
        branch("dev"),
        Expected::Equals(dev),
        Target::Delete,
    )
    .await;
    let catalog = lake
        .catalog
        .clone()
        .with_retention(common::files::window(10));
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    let request = CollectRequest {
        dry_run: false,
        slack_ms: 0,
    };
    let report = catalog
        .collect_objects(request, Arc::new(SweepProgress::default()))
        .await
        .unwrap();
    assert_eq!(report.unreachable_commits, 1, "{report:?}");

    let mut after = None;
    let mut kinds = Vec::new();
    let mut gone = Vec::new();
    loop {
        match catalog.events(&query(after, 100), &|_| true).await {
            Ok(page) if page.events.is_empty() => break,
            Ok(page) => {
                kinds.extend(page.events.iter().map(|e| e.kind));
                after = page.cursor;
            }
            Err(EventsError::Gone { sequence }) => {
                gone.push(sequence);
                after = Some(Cursor::end_of(sequence));
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(gone.len(), 1, "dev's commit");
    assert_eq!(
        kinds,
        vec![
            EventKind::CreateBranch,
            EventKind::CreateNamespace,
            EventKind::CreateBranch,
            EventKind::DeleteBranch
        ]
    );
}

/// A server's readers share the events they derive; a repository dropped and made again under
/// the same name (whose numbers start over in memory) is never answered from the old one.
#[tokio::test]
async fn a_shared_cache_answers_the_same_events_and_only_its_own_catalogs() {
    use pangolin_catalog::events::EventCache;

    let cache = Arc::new(EventCache::new(1_000));
    let lake = lake().await;
    let catalog = lake.catalog.clone().with_event_cache(cache.clone());
    create(&catalog, &main(), "db.t").await;
    let first = all_events(&catalog, None, 2).await;
    assert_eq!(first.len(), 3);
    assert_eq!(all_events(&catalog, None, 1).await, first, "from the cache");
    assert_eq!(
        all_events(&lake.catalog, None, 100).await,
        first,
        "derived again"
    );
    assert!(format!("{cache:?}").contains("entries: 3"), "{cache:?}");

    let store = catalog.store().clone();
    store.drop_repo(catalog.odb().repo()).await.unwrap();
    let remade = Catalog::create(
        store,
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        "lake",
        "ana",
    )
    .await
    .unwrap()
    .with_event_cache(cache);
    remade
        .create_namespace(&main(), &key("other"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let events = all_events(&remade, None, 100).await;
    assert_eq!(
        kinds(&events),
        vec![
            ("create-branch", "main", String::new()),
            ("create-namespace", "main", "other".into())
        ]
    );
}

#[tokio::test]
async fn the_feed_ends_after_its_last_entry() {
    let lake = lake().await;
    let catalog = &lake.catalog;
    for i in 0..40 {
        let all = all_events(catalog, None, 1_000).await;
        let last = all.last().map(|e| Cursor::end_of(e.cursor.sequence));
        assert_eq!(
            catalog.events_end().await.unwrap(),
            last,
            "after {i} commits"
        );
        create(catalog, &main(), &format!("db.t{i}")).await;
    }
    let end = catalog.events_end().await.unwrap();
    create(catalog, &main(), "db.later").await;
    let later = all_events(catalog, end, 10).await;
    assert_eq!(
        kinds(&later),
        vec![("create-table", "main", "db.later".to_owned())]
    );
}
