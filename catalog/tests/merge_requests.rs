//! Merge requests: checks judge the merge commit the target would move to (written, but
//! referenced by nothing), a merge lands exactly that commit, a moved target makes the checks
//! run again, failed checks block a protected branch unless overridden, and protected
//! branches refuse every other way of changing them.
#![allow(clippy::unwrap_used)]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use common::lake::*;
use pangolin_catalog::merge_requests::{
    BranchProtection, CheckInput, ExternalChecks, ExternalVerdict, MergeRequest, MergeRequestError,
    MergeRequests, NewMergeRequest, NoExternalChecks, RequestState, RunChecksError, Verdict,
};
use pangolin_catalog::tenancy::Name;
use pangolin_catalog::{HistoryRequest, MergeRefError, UpdateRefError};
use pangolin_merge::MergeOptions;

fn names() -> (Name, Name) {
    (
        Name::new("tenant", "acme").unwrap(),
        Name::new("catalog", "lake").unwrap(),
    )
}

fn protect(lake: Lake, rules: Value) -> Lake {
    let protection: BranchProtection = serde_json::from_value(json!({ "rules": rules })).unwrap();
    protection.validate().unwrap();
    Lake {
        catalog: lake.catalog.with_protection(Some(Arc::new(protection))),
        dir: lake.dir,
    }
}

fn requests(lake: &Lake) -> MergeRequests {
    MergeRequests::new(lake.catalog.store().clone())
}

async fn open_request(lake: &Lake, source: &str, target: &str, title: &str) -> MergeRequest {
    let (tenant, catalog) = names();
    requests(lake)
        .create(
            &tenant,
            &catalog,
            NewMergeRequest {
                title: title.to_owned(),
                description: None,
                source: RefName::new(source).unwrap(),
                target: RefName::new(target).unwrap(),
            },
            "bo",
            Timestamp::now(),
        )
        .await
        .unwrap()
        .value
}

/// A snapshot whose summary counts `rows` rows in the table.
fn snapshot_with_rows(
    snapshot_id: i64,
    parent: Option<i64>,
    sequence: i64,
    rows: u64,
) -> Vec<TableUpdate> {
    let mut snapshot = json!({
        "snapshot-id": snapshot_id,
        "sequence-number": sequence,
        "timestamp-ms": Timestamp::now().as_millis(),
        "manifest-list": format!("s3://elsewhere/snap-{snapshot_id}.avro"),
        "summary": {"operation": "overwrite", "total-records": rows.to_string()},
        "schema-id": 0
    });
    if let Some(parent) = parent {
        snapshot["parent-snapshot-id"] = json!(parent);
    }
    vec![
        update(json!({"action": "add-snapshot", "snapshot": snapshot})),
        update(
            json!({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}),
        ),
    ]
}

async fn set_rows(
    lake: &Lake,
    at: &Reference,
    table: &str,
    id: i64,
    parent: Option<i64>,
    rows: u64,
) {
    lake.catalog
        .commit_table(
            at,
            &key(table),
            vec![],
            snapshot_with_rows(id, parent, id, rows),
            &meta("write"),
        )
        .await
        .unwrap();
}

async fn run(lake: &Lake, number: u64, external: &dyn ExternalChecks) -> MergeRequest {
    let (tenant, catalog) = names();
    requests(lake)
        .run_checks(&lake.catalog, (&tenant, &catalog), number, "cy", external)
        .await
        .unwrap()
        .value
}

async fn merge(
    lake: &Lake,
    number: u64,
    overridden: Option<&str>,
) -> Result<MergeRequest, MergeRequestError> {
    let (tenant, catalog) = names();
    requests(lake)
        .merge(
            &lake.catalog,
            (&tenant, &catalog),
            number,
            "cy",
            overridden.map(str::to_owned),
            &NoExternalChecks,
        )
        .await
        .map(|v| v.value)
}

#[tokio::test]
async fn requests_are_numbered_and_listed_newest_first_by_state() {
    let lake = lake().await;
    new_branch(&lake.catalog, "dev", "main").await;
    for title in ["one", "two", "three"] {
        open_request(&lake, "dev", "main", title).await;
    }
    let (tenant, catalog) = names();
    let store = requests(&lake);
    let page = store.list(&tenant, &catalog, None, None, 2).await.unwrap();
    let numbers: Vec<u64> = page.items.iter().map(|r| r.value.number).collect();
    assert_eq!(numbers, [3, 2]);
    let rest = store
        .list(&tenant, &catalog, None, page.next_before, 2)
        .await
        .unwrap();
    assert_eq!(rest.items[0].value.title, "one");
    assert_eq!(rest.next_before, None);
    assert!(
        store
            .list(&tenant, &catalog, Some(RequestState::Merged), None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );

    let refused = store
        .create(
            &tenant,
            &catalog,
            NewMergeRequest {
                title: "  ".to_owned(),
                description: None,
                source: RefName::new("dev").unwrap(),
                target: RefName::new("main").unwrap(),
            },
            "bo",
            Timestamp::now(),
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("title"), "{refused}");
}

#[tokio::test]
async fn checks_judge_an_unreferenced_merge_commit_and_the_merge_lands_exactly_it() {
    let lake = protect(
        lake().await,
        json!([{"branch": "main", "checks": [{"kind": "forbid", "types": ["drop-table"]}]}]),
    );
    new_branch(&lake.catalog, "dev", "main").await;
    create(&lake.catalog, &branch("dev"), "db.orders").await;
    let main_before = head(&lake.catalog, "main").await;
    let request = open_request(&lake, "dev", "main", "add orders").await;

    let checked = run(&lake, request.number, &NoExternalChecks).await;
    let run = checked.checks.clone().unwrap();
    assert_eq!(run.verdict, Verdict::Passed);
    assert_eq!(run.checks.len(), 1);
    assert!(run.checks[0].passed);
    assert_eq!(run.changed_keys, 1);
    assert_eq!(run.target_head, main_before.to_hex());
    // Checked but not landed: main has not moved, and the commit exists.
    assert_eq!(head(&lake.catalog, "main").await, main_before);
    let commit: ObjectId = run.merge_commit.as_deref().unwrap().parse().unwrap();
    let written = lake.catalog.odb().commit(&commit).await.unwrap();
    assert_eq!(
        written.parents,
        [main_before, head(&lake.catalog, "dev").await]
    );
    assert_eq!(written.properties["merge-request"], "1");

    let merged = merge(&lake, request.number, None).await.unwrap();
    assert_eq!(merged.state, RequestState::Merged);
    assert_eq!(merged.merged.as_ref().unwrap().commit, commit.to_hex());
    assert_eq!(merged.merged.as_ref().unwrap().overridden, None);
    assert_eq!(head(&lake.catalog, "main").await, commit);
    assert!(
        lake.catalog
            .load_table(&spec("main"), &key("db.orders"))
            .await
            .is_ok()
    );

    let again = merge(&lake, request.number, None).await.unwrap_err();
    assert!(matches!(
        again,
        MergeRequestError::Run(RunChecksError::NotOpen { .. })
    ));
}

#[tokio::test]
async fn a_target_that_moved_after_the_checks_makes_the_merge_check_again() {
    let lake = protect(lake().await, json!([{"branch": "main"}]));
    new_branch(&lake.catalog, "dev", "main").await;
    create(&lake.catalog, &branch("dev"), "db.orders").await;
    let request = open_request(&lake, "dev", "main", "add orders").await;
    let first = run(&lake, request.number, &NoExternalChecks)
        .await
        .checks
        .unwrap();

    // Someone else's change lands on main (as a merge request would).
    lake.catalog
        .create_namespace(&main(), &key("other"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let moved = head(&lake.catalog, "main").await;
    assert_ne!(first.target_head, moved.to_hex());

    let merged = merge(&lake, request.number, None).await.unwrap();
    let second = merged.checks.unwrap();
    assert_eq!(second.target_head, moved.to_hex());
    assert_ne!(second.merge_commit, first.merge_commit);
    let landed = head(&lake.catalog, "main").await;
    assert_eq!(Some(landed.to_hex()), second.merge_commit);
    assert_eq!(
        lake.catalog.odb().commit(&landed).await.unwrap().parents[0],
        moved
    );
}

#[tokio::test]
async fn failed_checks_block_a_protected_branch_until_overridden_with_a_reason() {
    let lake = protect(
        lake().await,
        json!([{"branch": "main", "checks": [
            {"kind": "no-lost-rows"},
            {"kind": "forbid", "types": ["drop-table"], "prefix": ["db"]},
        ]}]),
    );
    create(&lake.catalog, &main(), "db.orders").await;
    set_rows(&lake, &main(), "db.orders", 1, None, 5).await;
    create(&lake.catalog, &main(), "db.items").await;
    set_rows(&lake, &main(), "db.items", 1, None, 7).await;
    new_branch(&lake.catalog, "dev", "main").await;
    set_rows(&lake, &branch("dev"), "db.orders", 2, Some(1), 3).await;
    lake.catalog
        .drop_table(&branch("dev"), &key("db.items"), false, &meta("drop"))
        .await
        .unwrap();
    let request = open_request(&lake, "dev", "main", "shrink").await;
    let main_before = head(&lake.catalog, "main").await;

    let refused = merge(&lake, request.number, None).await.unwrap_err();
    let MergeRequestError::ChecksFailed {
        request: failed, ..
    } = refused
    else {
        panic!("expected failed checks, got {refused}");
    };
    let run = failed.checks.unwrap();
    assert_eq!(run.verdict, Verdict::Failed);
    let rows = &run.checks[0];
    assert!(!rows.passed);
    assert_eq!(
        rows.messages,
        [
            "db.items is dropped with 7 rows",
            "db.orders goes from 5 to 3 rows"
        ]
    );
    assert_eq!(run.checks[1].messages, ["drop-table db.items"]);
    assert_eq!(head(&lake.catalog, "main").await, main_before);

    let merged = merge(&lake, request.number, Some("restatement approved"))
        .await
        .unwrap();
    assert_eq!(
        merged.merged.unwrap().overridden.as_deref(),
        Some("restatement approved")
    );
    assert_eq!(
        Some(head(&lake.catalog, "main").await.to_hex()),
        run.merge_commit
    );
}

#[tokio::test]
async fn no_dropped_columns_names_every_column_a_table_loses() {
    let lake = protect(
        lake().await,
        json!([{"branch": "main", "checks": [{"kind": "no-dropped-columns", "prefix": ["db"]}]}]),
    );
    create(&lake.catalog, &main(), "db.orders").await;
    new_branch(&lake.catalog, "dev", "main").await;
    let narrower = json!({"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "id", "required": true, "type": "long"},
        {"id": 3, "name": "amount", "required": false, "type": "double"},
    ]});
    lake.catalog
        .commit_table(
            &branch("dev"),
            &key("db.orders"),
            vec![],
            vec![
                update(json!({"action": "add-schema", "schema": narrower, "last-column-id": 3})),
                update(json!({"action": "set-current-schema", "schema-id": -1})),
            ],
            &meta("drop a column"),
        )
        .await
        .unwrap();
    let request = open_request(&lake, "dev", "main", "narrow").await;
    let run = run(&lake, request.number, &NoExternalChecks)
        .await
        .checks
        .unwrap();
    assert_eq!(run.verdict, Verdict::Failed);
    assert_eq!(run.checks[0].messages, ["db.orders drops `data` (id 2)"]);
}

#[tokio::test]
async fn conflicts_leave_nothing_to_check_or_merge() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.orders").await;
    new_branch(&lake.catalog, "dev", "main").await;
    set_rows(&lake, &branch("dev"), "db.orders", 1, None, 1).await;
    set_rows(&lake, &main(), "db.orders", 2, None, 2).await;
    let request = open_request(&lake, "dev", "main", "clash").await;
    let run = run(&lake, request.number, &NoExternalChecks)
        .await
        .checks
        .unwrap();
    assert_eq!(run.verdict, Verdict::Conflicted);
    assert_eq!(run.conflicts, ["db.orders"]);
    assert_eq!(run.merge_commit, None);
    let refused = merge(&lake, request.number, None).await.unwrap_err();
    assert!(
        matches!(refused, MergeRequestError::Conflicted { .. }),
        "{refused}"
    );
}

/// Answers every webhook check as told and keeps what it was shown.
struct Endpoint {
    passes: bool,
    seen: Mutex<Vec<(String, ObjectId, usize)>>,
}

impl ExternalChecks for Endpoint {
    fn ask<'a>(
        &'a self,
        webhook: &'a str,
        input: &'a CheckInput<'a>,
    ) -> Pin<Box<dyn Future<Output = ExternalVerdict> + Send + 'a>> {
        self.seen.lock().unwrap().push((
            webhook.to_owned(),
            input.merge_commit,
            input.changes.len(),
        ));
        let passes = self.passes;
        Box::pin(async move { Ok((passes, vec![format!("passes: {passes}")])) })
    }
}

#[tokio::test]
async fn webhook_checks_are_shown_the_merge_commit_and_decide() {
    let lake = protect(
        lake().await,
        json!([{"branch": "main", "checks": [{"kind": "webhook", "webhook": "quality"}]}]),
    );
    new_branch(&lake.catalog, "dev", "main").await;
    create(&lake.catalog, &branch("dev"), "db.orders").await;
    let request = open_request(&lake, "dev", "main", "add orders").await;
    for passes in [false, true] {
        let endpoint = Endpoint {
            passes,
            seen: Mutex::default(),
        };
        let run = run(&lake, request.number, &endpoint).await.checks.unwrap();
        assert_eq!(run.checks[0].passed, passes);
        assert_eq!(run.checks[0].messages, [format!("passes: {passes}")]);
        let seen = endpoint.seen.into_inner().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, "quality");
        assert_eq!(Some(seen[0].1.to_hex()), run.merge_commit);
        assert_eq!(seen[0].2, 1);
    }
    // The last run passed on the current heads, so the merge asks nobody again.
    let merged = merge(&lake, request.number, None).await.unwrap();
    assert_eq!(merged.state, RequestState::Merged);
}

#[tokio::test]
async fn protected_branches_refuse_direct_merges_resets_and_deletes() {
    let lake = protect(
        lake().await,
        json!([{"branch": "main"}, {"branch": "release/*"}]),
    );
    new_branch(&lake.catalog, "dev", "main").await;
    new_branch(&lake.catalog, "release/1", "main").await;
    create(&lake.catalog, &branch("dev"), "db.orders").await;
    let history = HistoryRequest {
        principal: "bo".to_owned(),
        message: None,
        expected_head: None,
    };
    for target in ["main", "release/1"] {
        let refused = lake
            .catalog
            .merge(
                &spec("dev"),
                &spec(target),
                &MergeOptions::default(),
                &history,
            )
            .await
            .unwrap_err();
        assert!(matches!(refused, MergeRefError::Protected(_)), "{refused}");
        assert!(refused.to_string().contains("merge requests"), "{refused}");
    }
    let main_head = head(&lake.catalog, "main").await;
    let reset = lake
        .catalog
        .assign_branch(
            &RefName::new("main").unwrap(),
            &spec("dev"),
            main_head,
            "bo",
        )
        .await
        .unwrap_err();
    assert!(matches!(reset, UpdateRefError::Protected(_)), "{reset}");
    let delete = lake
        .catalog
        .delete_ref(&RefName::new("release/1").unwrap(), None, "bo")
        .await
        .unwrap_err();
    assert!(matches!(delete, UpdateRefError::Protected(_)), "{delete}");
    // Unprotected branches still take all of these.
    lake.catalog
        .merge(
            &spec("main"),
            &spec("dev"),
            &MergeOptions::default(),
            &history,
        )
        .await
        .unwrap();
    assert_eq!(head(&lake.catalog, "main").await, main_head);
}
