//! What the catalog holds and how it changed, through the management API: a commit with its
//! changes against its first parent, the diff between any two references, and the entries of
//! the tree at any reference, each paged by key.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use axum::http::StatusCode;
use common::management::{
    API, all_pages, assert_bad_request, create_ref, create_table, delete, env, get_ok, hashes,
    keys, metadata_location, post_ok, ref_hash, set_namespace_property, set_table_property,
    table_uri,
};
use common::rest::{get, schema};
use serde_json::{Value, json};

/// Adds snapshot `id` to `db.{table}` at `prefix` and points the table's `main` at it.
async fn append(app: &axum::Router, prefix: &str, table: &str, id: i64) {
    post_ok(
        app,
        &table_uri(prefix, table),
        json!({"requirements": [], "updates": [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": id,
                "sequence-number": 1,
                "timestamp-ms": 1_700_000_000_000_i64 + id,
                "manifest-list": format!("file:///nowhere/snap-{id}.avro"),
                "summary": {"operation": "append", "added-records": "10"},
                "schema-id": 0
            }},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": id}
        ]}),
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// Commits

#[tokio::test]
async fn a_commit_shows_its_changes_against_its_first_parent() {
    let env = env().await;
    let app = &env.app;
    let commit = |reference: &str| format!("{API}/commits/{reference}");

    // The first commit of the catalog: no parents, no changes.
    let log = hashes(&get_ok(app, &format!("{API}/log")).await["commits"]);
    let root = get_ok(app, &commit(&log[1])).await;
    assert_eq!(root["hash"], json!(log[1]));
    assert_eq!(root["parents"], json!([]));
    assert_eq!(root["message"], "create catalog lake");
    assert_eq!(root["author"], "test");
    assert_eq!(root["changes"], json!([]));
    assert!(root.get("next-page-token").is_none(), "{root}");

    // The namespace: added, no summary.
    let created = get_ok(app, &commit("main")).await;
    assert_eq!(created["hash"], json!(log[0]));
    assert_eq!(created["parents"], json!([log[1]]));
    assert_eq!(created["changes"].as_array().unwrap().len(), 1, "{created}");
    let change = &created["changes"][0];
    assert_eq!(change["key"], json!(["db"]));
    assert_eq!(change["kind"], "added");
    assert_eq!(change["before"], Value::Null);
    assert_eq!(change["after"]["type"], "namespace");
    assert_eq!(change["after"]["properties"], json!({}));
    assert!(change["after"]["content-id"].is_string(), "{change}");
    assert_eq!(change["summary"], json!([]));

    // A table: created, a snapshot appended, properties set.
    let table = create_table(app, "lake", "t").await;
    let body = get_ok(app, &commit("main")).await;
    let change = &body["changes"][0];
    assert_eq!(
        (&change["key"], &change["kind"]),
        (&json!(["db", "t"]), &json!("added"))
    );
    assert_eq!(change["after"]["type"], "iceberg-table");
    assert_eq!(
        change["after"]["metadata-location"],
        table["metadata-location"]
    );
    assert_eq!(
        change["summary"],
        json!(["table created (format version 2, 2 columns)"])
    );
    assert!(
        body["properties"]["operation"]
            .as_str()
            .unwrap()
            .contains("table"),
        "{body}"
    );

    append(app, "lake", "t", 7).await;
    let body = get_ok(app, &commit("main")).await;
    assert_eq!(body["changes"].as_array().unwrap().len(), 1, "{body}");
    let change = &body["changes"][0];
    assert_eq!(change["kind"], "modified");
    assert_eq!(
        change["before"]["metadata-location"],
        table["metadata-location"]
    );
    assert_eq!(change["after"]["snapshot-id"], 7);
    assert_eq!(
        change["after"]["content-id"], change["before"]["content-id"],
        "{change}"
    );
    let summary = change["summary"].as_array().unwrap();
    assert!(
        summary.contains(&json!("snapshot 7 added: append, 10 records added")),
        "{change}"
    );

    set_table_property(app, "lake", "t", "owner", "ana").await;
    let body = get_ok(app, &commit("main")).await;
    assert_eq!(
        body["changes"][0]["summary"],
        json!(["properties set: owner"])
    );
    assert_eq!(body["changes"][0]["after"]["snapshot-id"], 7);
    // Reached through other expressions, and the earlier commit is still the append.
    let head = ref_hash(app, "main").await;
    assert_eq!(get_ok(app, &commit(&head)).await, body);
    assert_eq!(get_ok(app, &commit(&head[..12])).await, body);
    assert_eq!(
        get_ok(app, &commit(&format!("main%23{}", &head[..12]))).await,
        body
    );
    let previous = get_ok(app, &commit("main~1")).await;
    assert_eq!(body["parents"], json!([previous["hash"]]));
    assert_eq!(previous["changes"][0]["after"]["snapshot-id"], 7);
    assert_eq!(previous["changes"][0]["before"].get("snapshot-id"), None);

    // Namespace properties: modified, properties before and after.
    set_namespace_property(app, "lake", "db", "k", "v").await;
    let body = get_ok(app, &commit("main")).await;
    let change = &body["changes"][0];
    assert_eq!(
        (&change["key"], &change["kind"]),
        (&json!(["db"]), &json!("modified"))
    );
    assert_eq!(
        (
            &change["before"]["properties"],
            &change["after"]["properties"]
        ),
        (&json!({}), &json!({"k": "v"}))
    );
    assert_eq!(change["summary"], json!([]));

    // A dropped table: removed.
    let (status, body) = delete(app, &table_uri("lake", "t")).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let body = get_ok(app, &commit("main")).await;
    let change = &body["changes"][0];
    assert_eq!(
        (&change["key"], &change["kind"]),
        (&json!(["db", "t"]), &json!("removed"))
    );
    assert_eq!(change["after"], Value::Null);
    assert_eq!(change["summary"], json!(["table dropped"]));

    // Many changes in one commit (a squash merge) are paged by key.
    create_ref(app, "dev", "branch", None).await;
    for name in ["d", "a", "c", "b"] {
        create_table(app, "lake@dev", name).await;
    }
    let merged = post_ok(
        app,
        &format!("{API}/merge"),
        json!({"source": "dev", "squash": true, "fast-forward": "never"}),
    )
    .await;
    let squash = merged["target-head"].as_str().unwrap().to_owned();
    let whole = get_ok(app, &commit(&squash)).await;
    assert_eq!(keys(&whole["changes"]), ["db.a", "db.b", "db.c", "db.d"]);
    assert_eq!(whole["parents"].as_array().unwrap().len(), 1);
    for size in 1..=5 {
        let paged = all_pages(app, &commit(&squash), "changes", size).await;
        assert_eq!(Value::Array(paged), whole["changes"], "pageSize {size}");
    }

    // Bad references.
    for reference in [
        "zzzzzzzz".to_owned(),
        "deadbeef00".to_owned(),
        "nope".to_owned(),
        "main~99".to_owned(),
        head[..7].to_owned(),
        "main%23abc".to_owned(),
    ] {
        let (status, body) = get(app, &commit(&reference)).await;
        assert_bad_request(status, &body);
    }
    for query in ["pageSize=0", "pageToken=xyz", "pageToken=00"] {
        let (status, body) = get(app, &format!("{}?{query}", commit("main"))).await;
        assert_bad_request(status, &body);
    }
}

// ---------------------------------------------------------------------------------------------
// Diff

#[tokio::test]
async fn diffs_compare_any_two_references_paged_by_key() {
    let env = env().await;
    let app = &env.app;
    create_table(app, "lake", "t").await;
    let base = ref_hash(app, "main").await;
    create_ref(app, "dev", "branch", None).await;
    for name in ["c", "a", "b"] {
        create_table(app, "lake@dev", name).await;
    }
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    set_namespace_property(app, "lake", "db", "k", "main").await;
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);
    let diff = |query: &str| format!("{API}/diff?{query}");

    let body = get_ok(app, &diff("from=main&to=dev")).await;
    assert_eq!((&body["from"], &body["to"]), (&json!(main), &json!(dev)));
    assert!(body.get("next-page-token").is_none(), "{body}");
    assert_eq!(
        keys(&body["changes"]),
        ["db", "db.a", "db.b", "db.c", "db.t"]
    );
    let changes = body["changes"].as_array().unwrap();
    assert_eq!(
        changes
            .iter()
            .map(|c| c["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["modified", "added", "added", "added", "modified"]
    );
    assert_eq!(changes[0]["before"]["properties"], json!({"k": "main"}));
    assert_eq!(changes[0]["after"]["properties"], json!({}));
    assert_eq!(
        changes[1]["summary"],
        json!(["table created (format version 2, 2 columns)"])
    );
    assert_eq!(changes[4]["summary"], json!(["properties set: owner"]));

    // The other way round: the inverse changes.
    let back = get_ok(app, &diff("from=dev&to=main")).await;
    assert_eq!(
        keys(&back["changes"]),
        ["db", "db.a", "db.b", "db.c", "db.t"]
    );
    let kinds: Vec<&str> = back["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["modified", "removed", "removed", "removed", "modified"]
    );
    assert_eq!(back["changes"][1]["summary"], json!(["table dropped"]));

    // Hashes and ancestors: dev~4 is where dev started (main's `base`).
    let body = get_ok(app, &diff(&format!("from={base}&to=dev~1"))).await;
    assert_eq!(body["from"], json!(base));
    assert_eq!(keys(&body["changes"]), ["db.a", "db.b", "db.c"]);
    let body = get_ok(app, &diff(&format!("from=dev~4&to={}", &dev[..10]))).await;
    assert_eq!(body["from"], json!(base));
    assert_eq!(keys(&body["changes"]), ["db.a", "db.b", "db.c", "db.t"]);
    let body = get_ok(app, &diff(&format!("from=main~1&to=main%23{}", &main[..9]))).await;
    assert_eq!(keys(&body["changes"]), ["db"]);
    let same = get_ok(app, &diff("from=dev&to=dev")).await;
    assert_eq!(same["changes"], json!([]));

    // Prefix: the key itself and everything under it.
    let body = get_ok(app, &diff("from=main&to=dev&prefix=db%1Fb")).await;
    assert_eq!(keys(&body["changes"]), ["db.b"]);
    let body = get_ok(app, &diff("from=main&to=dev&prefix=db")).await;
    assert_eq!(
        keys(&body["changes"]),
        ["db", "db.a", "db.b", "db.c", "db.t"]
    );
    let body = get_ok(app, &diff("from=main&to=dev&prefix=other")).await;
    assert_eq!(body["changes"], json!([]));

    // Paging, with and without a prefix.
    let whole = get_ok(app, &diff("from=main&to=dev")).await;
    for size in 1..=6 {
        let paged = all_pages(app, &diff("from=main&to=dev"), "changes", size).await;
        assert_eq!(Value::Array(paged), whole["changes"], "pageSize {size}");
    }
    let paged = all_pages(app, &diff("from=dev&to=main&prefix=db"), "changes", 2).await;
    assert_eq!(Value::Array(paged), back["changes"]);

    // Bad input.
    for query in [
        "from=nope&to=dev",
        "from=main&to=nope",
        "from=main~99&to=dev",
        "from=main&to=main%23zzzzzzzz",
        "to=dev",
        "from=main",
        "",
        "from=main&to=dev&prefix=db%1F",
        "from=main&to=dev&pageSize=0",
        "from=main&to=dev&pageToken=q",
    ] {
        let (status, body) = get(app, &diff(query)).await;
        assert_bad_request(status, &body);
    }
}

// ---------------------------------------------------------------------------------------------
// Entries

#[tokio::test]
async fn entries_list_the_tree_at_any_reference() {
    let env = env().await;
    let app = &env.app;
    let root = ref_hash(app, "main~1").await;
    set_namespace_property(app, "lake", "db", "owner", "ana").await;
    post_ok(
        app,
        "/v1/lake/namespaces",
        json!({"namespace": ["db", "sub"], "properties": {"tier": "gold"}}),
    )
    .await;
    post_ok(
        app,
        "/v1/lake/namespaces/db%1Fsub/tables",
        json!({"name": "deep", "schema": schema()}),
    )
    .await;
    let t = create_table(app, "lake", "t").await;
    append(app, "lake", "t", 3).await;
    let old = ref_hash(app, "main").await;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "devonly").await;
    create_table(app, "lake", "u").await;
    post_ok(app, "/v1/lake/namespaces", json!({"namespace": ["zz"]})).await;
    let main = ref_hash(app, "main").await;

    let body = get_ok(app, &format!("{API}/entries")).await;
    assert_eq!(body["hash"], json!(main));
    assert!(body.get("next-page-token").is_none(), "{body}");
    assert_eq!(
        keys(&body["entries"]),
        ["db", "db.sub", "db.sub.deep", "db.t", "db.u", "zz"]
    );
    let entries = body["entries"].as_array().unwrap();
    assert_eq!(
        entries[0]["entry"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([
            &"type".to_owned(),
            &"content-id".to_owned(),
            &"properties".to_owned()
        ])
    );
    assert_eq!(entries[0]["entry"]["type"], "namespace");
    assert_eq!(entries[0]["entry"]["properties"], json!({"owner": "ana"}));
    assert_eq!(entries[1]["entry"]["properties"], json!({"tier": "gold"}));
    let table = &entries[3]["entry"];
    assert_eq!(table["type"], "iceberg-table");
    assert_eq!(table["snapshot-id"], 3);
    assert_eq!(
        table["metadata-location"],
        json!(metadata_location(app, "lake", "t").await)
    );
    assert_ne!(table["metadata-location"], t["metadata-location"]);
    assert_eq!(
        entries[4]["entry"].get("snapshot-id"),
        None,
        "{}",
        entries[4]
    );
    assert_eq!(get_ok(app, &format!("{API}/entries?ref=main")).await, body);

    // At a branch, an old hash, an ancestor, a time; and the empty first commit.
    let dev = get_ok(app, &format!("{API}/entries?ref=dev")).await;
    assert_eq!(dev["hash"], json!(ref_hash(app, "dev").await));
    assert_eq!(
        keys(&dev["entries"]),
        ["db", "db.devonly", "db.sub", "db.sub.deep", "db.t"]
    );
    let at_old = get_ok(app, &format!("{API}/entries?ref={old}")).await;
    assert_eq!(at_old["hash"], json!(old));
    assert_eq!(
        keys(&at_old["entries"]),
        ["db", "db.sub", "db.sub.deep", "db.t"]
    );
    assert_eq!(
        get_ok(app, &format!("{API}/entries?ref=main~2")).await,
        at_old
    );
    assert_eq!(
        get_ok(app, &format!("{API}/entries?ref=main%23{}", &old[..8])).await,
        at_old
    );
    let first = get_ok(app, &format!("{API}/entries?ref={root}")).await;
    assert_eq!(first, json!({"hash": root, "entries": []}));

    // Prefix: the key itself and everything under it, not its siblings by name.
    let sub = get_ok(app, &format!("{API}/entries?prefix=db%1Fsub")).await;
    assert_eq!(keys(&sub["entries"]), ["db.sub", "db.sub.deep"]);
    let t_only = get_ok(app, &format!("{API}/entries?ref=dev&prefix=db%1Ft")).await;
    assert_eq!(keys(&t_only["entries"]), ["db.t"]);
    let none = get_ok(app, &format!("{API}/entries?prefix=d")).await;
    assert_eq!(none["entries"], json!([]));

    // Paging.
    for size in 1..=7 {
        let paged = all_pages(app, &format!("{API}/entries"), "entries", size).await;
        assert_eq!(Value::Array(paged), body["entries"], "pageSize {size}");
    }
    let paged = all_pages(
        app,
        &format!("{API}/entries?ref=dev&prefix=db"),
        "entries",
        2,
    )
    .await;
    assert_eq!(Value::Array(paged), dev["entries"]);

    for query in [
        "ref=nope",
        "ref=main~99",
        "ref=a..b",
        "prefix=db%1F",
        "pageSize=0",
        "pageToken=nothex",
    ] {
        let (status, body) = get(app, &format!("{API}/entries?{query}")).await;
        assert_bad_request(status, &body);
    }
}
