//! `pangolin merge --table-merge auto`: a table both branches changed in ways that commute is
//! merged (and the command says how); one whose changes overlap stays a conflict that says
//! which change.
#![allow(clippy::unwrap_used)]

mod common;

use common::setup::{Setup, setup};
use serde_json::json;

fn set_table_property(s: &Setup, prefix: &str, key: &str, value: &str) {
    s.iceberg(
        "POST",
        &format!("/v1/{prefix}/namespaces/db/tables/orders"),
        json!({"requirements": [], "updates": [
            {"action": "set-properties", "updates": {key: value}}]}),
    );
}

#[test]
fn a_table_changed_on_both_branches_merges_when_the_changes_commute() {
    let s = setup();
    s.create_namespace("default", "db");
    s.iceberg(
        "POST",
        "/v1/default/namespaces/db/tables",
        json!({"name": "orders", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": false, "type": "long"}]}}),
    );
    s.run(&["branch", "create", "dev"]).success();
    set_table_property(&s, "default", "owner", "sales");
    set_table_property(&s, "default@dev", "retention", "30d");

    let refused = s.run(&["merge", "dev"]).fails_with(1);
    assert!(refused.stdout.contains("both-modified"), "{refused:?}");
    let merged = s.run(&["merge", "dev", "--table-merge", "auto"]).success();
    assert!(
        merged
            .stdout
            .contains("Table db.orders changed on both sides, merged: properties set: retention"),
        "{merged:?}"
    );

    set_table_property(&s, "default", "owner", "finance");
    set_table_property(&s, "default@dev", "owner", "etl");
    let overlap = s
        .run(&["merge", "dev", "--table-merge", "auto"])
        .fails_with(1);
    assert!(
        overlap.stdout.contains("table-changes-overlap"),
        "{overlap:?}"
    );
    assert!(
        overlap
            .stdout
            .contains("both sides changed property `owner`"),
        "{overlap:?}"
    );
}
