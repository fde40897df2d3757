//! `pangolin mr` against the real server: a request opened, checked on the merge it would
//! land, merged onto a protected branch that refuses a direct merge, listed; failed checks
//! exit 1 with every result printed, and an administrator's override lands it.
#![allow(clippy::unwrap_used)]

mod common;

use common::http;
use common::setup::setup;
use serde_json::json;

fn protect_main(port: u16) {
    let body = json!({"rules": [{"branch": "main", "checks": [
        {"kind": "forbid", "types": ["drop-namespace"]}]}]});
    let (status, answer) = http(
        port,
        "PUT",
        "/api/v1/catalogs/default/protection",
        Some(&body.to_string()),
    );
    assert_eq!(status, 200, "{answer}");
}

#[test]
fn a_request_is_opened_checked_merged_and_listed() {
    let s = setup();
    s.create_namespace("default", "db");
    s.run(&["branch", "create", "dev"]).success();
    s.create_namespace("default@dev", "sales");
    protect_main(s.port);

    let refused = s.run(&["merge", "dev"]).fails_with(5);
    assert!(refused.stderr.contains("protected"), "{refused:?}");
    let none = s.run(&["mr"]).success();
    assert_eq!(none.stdout, "No merge requests.\n");

    let opened = s.run(&["mr", "create", "dev", "-t", "add sales"]).success();
    assert!(
        opened
            .stdout
            .starts_with("Opened merge request 1: dev into main."),
        "{opened:?}"
    );
    let checked = s.run(&["mr", "check", "1"]).success();
    assert!(
        checked.stdout.starts_with("Checks passed on main "),
        "{checked:?}"
    );
    assert!(checked.stdout.contains("changes 1 keys"), "{checked:?}");
    assert!(
        checked.stdout.contains("pass  forbid drop-namespace"),
        "{checked:?}"
    );
    let before = s.head("main");
    let shown = s.run(&["mr", "show", "1", "--json"]).success().json();
    let commit = shown["checks"]["merge-commit"].as_str().unwrap().to_owned();
    assert_eq!(shown["checks"]["target-head"], before.as_str());

    let merged = s.run(&["mr", "merge", "1"]).success();
    assert!(
        merged
            .stdout
            .starts_with("Merged request 1: main is now at "),
        "{merged:?}"
    );
    assert_eq!(s.head("main"), commit, "the checked commit is what landed");
    let listed = s.run(&["mr", "list", "--state", "merged"]).success();
    let row = listed.stdout.lines().nth(1).unwrap();
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(words[..4], ["1", "merged", "dev", "->"], "{listed:?}");
    assert!(
        row.contains("passed") && row.ends_with("add sales"),
        "{row}"
    );
    let open = s
        .run(&["mr", "list", "--state", "open", "--json"])
        .success()
        .json();
    assert_eq!(open["merge-requests"], json!([]));
    let show = s.run(&["mr", "show", "1"]).success();
    assert!(
        show.stdout.starts_with("Merge request 1: add sales\n"),
        "{show:?}"
    );
    assert!(show.stdout.contains("merged by "), "{show:?}");
}

#[test]
fn failed_checks_exit_1_with_every_result_until_overridden() {
    let s = setup();
    s.create_namespace("default", "legacy");
    s.run(&["branch", "create", "dev"]).success();
    let (status, answer) = http(
        s.port,
        "DELETE",
        "/v1/default%40dev/namespaces/legacy",
        None,
    );
    assert_eq!(status, 204, "{answer}");
    protect_main(s.port);
    s.run(&["mr", "create", "dev", "-t", "retire legacy"])
        .success();
    let before = s.head("main");

    let refused = s.run(&["mr", "merge", "1"]).fails_with(1);
    assert!(
        refused.stderr.contains("checks of merge request 1 failed"),
        "{refused:?}"
    );
    assert!(
        refused.stdout.contains("Checks failed on main "),
        "{refused:?}"
    );
    assert!(
        refused.stdout.contains("FAIL  forbid drop-namespace")
            && refused.stdout.contains("drop-namespace legacy"),
        "{refused:?}"
    );
    assert_eq!(s.head("main"), before);

    let merged = s
        .run(&["mr", "merge", "1", "--override", "archived elsewhere"])
        .success();
    assert!(
        merged
            .stdout
            .contains("Failed checks were overridden: archived elsewhere"),
        "{merged:?}"
    );
    assert_ne!(s.head("main"), before);
    let closed = s.run(&["mr", "close", "1"]).fails_with(1);
    assert!(closed.stderr.contains("merged"), "{closed:?}");
    let missing = s.run(&["mr", "show", "7"]).fails_with(3);
    assert!(missing.stderr.contains("no merge request 7"), "{missing:?}");
}
