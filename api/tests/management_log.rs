//! The commit log of the management API: newest first along first parents, paged without gaps
//! or duplicates from any reference, and filtered by author, time and key.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::management::{
    API, all_pages, assert_bad_request, create_ref, create_table, env, get_ok, hashes, pages,
    ref_hash, set_namespace_property, set_table_property,
};
use common::rest::{get, message};
use serde_json::{Value, json};

/// [`all_pages`] for a filtered log, whose last page may be empty (see
/// `a_filtered_log_gives_no_token_when_nothing_follows`).
async fn all_filtered_log_pages(app: &axum::Router, uri: &str, page_size: usize) -> Vec<Value> {
    pages(app, uri, "commits", page_size, true).await
}

/// The `time` of a commit, parsed.
fn time_of(commit: &Value) -> jiff::Timestamp {
    commit["time"].as_str().unwrap().parse().unwrap()
}

/// Seven commits on main after the two of `env()`; the hashes of main's history, newest first.
async fn history(app: &axum::Router) -> Vec<String> {
    create_table(app, "lake", "t").await;
    set_namespace_property(app, "lake", "db", "k", "1").await;
    create_table(app, "lake", "u").await;
    set_table_property(app, "lake", "t", "owner", "a").await;
    set_namespace_property(app, "lake", "db", "k", "2").await;
    set_table_property(app, "lake", "u", "owner", "b").await;
    set_table_property(app, "lake", "t", "owner", "c").await;
    let log = get_ok(app, &format!("{API}/refs/main/log")).await;
    assert!(log.get("next-page-token").is_none(), "{log}");
    hashes(&log["commits"])
}

#[tokio::test]
async fn the_log_is_newest_first_and_pages_without_gaps_or_duplicates() {
    let env = env().await;
    let app = &env.app;
    let log = history(app).await;
    assert_eq!(log.len(), 9);
    assert_eq!(log[0], ref_hash(app, "main").await);

    // A first-parent chain from the head down to the catalog's first commit.
    let full = get_ok(app, &format!("{API}/refs/main/log")).await;
    let commits = full["commits"].as_array().unwrap();
    for pair in commits.windows(2) {
        assert_eq!(pair[0]["parents"], json!([pair[1]["hash"]]), "{pair:?}");
        assert!(time_of(&pair[0]) > time_of(&pair[1]), "{pair:?}");
    }
    let root = commits.last().unwrap();
    assert_eq!(root["parents"], json!([]));
    assert_eq!(root["author"], "test");
    assert_eq!(root["message"], "create catalog lake");
    assert_eq!(root["properties"], json!({"operation": "create-catalog"}));
    let object = commits[0].as_object().unwrap();
    assert_eq!(
        object.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        BTreeSet::from([
            "hash",
            "parents",
            "author",
            "committer",
            "time",
            "message",
            "properties"
        ])
    );
    assert_eq!(
        (&commits[0]["author"], &commits[0]["committer"]),
        (&json!("anonymous"), &json!("anonymous"))
    );

    // The same log through `/log`, with and without `ref`.
    assert_eq!(get_ok(app, &format!("{API}/log")).await, full);
    assert_eq!(get_ok(app, &format!("{API}/log?ref=main")).await, full);
    // Any expression: the log starts there.
    let older = get_ok(app, &format!("{API}/log?ref=main~3")).await;
    assert_eq!(hashes(&older["commits"]), log[3..]);
    let older = get_ok(app, &format!("{API}/refs/main~3/log")).await;
    assert_eq!(hashes(&older["commits"]), log[3..]);
    let older = get_ok(app, &format!("{API}/refs/main%23{}/log", &log[5][..10])).await;
    assert_eq!(hashes(&older["commits"]), log[5..]);

    // Every page size pages through the whole log once.
    for size in 1..=10 {
        for uri in [
            format!("{API}/refs/main/log"),
            format!("{API}/log?ref=main"),
        ] {
            let paged = all_pages(app, &uri, "commits", size).await;
            assert_eq!(hashes(&Value::Array(paged)), log, "{uri} pageSize {size}");
        }
    }
    // Tokens are the commit the next page starts at, and work on either route.
    let page = get_ok(app, &format!("{API}/refs/main/log?pageSize=4")).await;
    let token = page["next-page-token"].as_str().unwrap();
    let next = get_ok(app, &format!("{API}/log?pageSize=4&pageToken={token}")).await;
    assert_eq!(hashes(&next["commits"]), log[4..8]);

    // A branch has its own log, which shares main's older history.
    create_ref(app, "dev", "branch", Some("main~2")).await;
    set_namespace_property(app, "lake@dev", "db", "k", "dev").await;
    let dev = hashes(&get_ok(app, &format!("{API}/refs/dev/log")).await["commits"]);
    assert_eq!(dev.len(), 8);
    assert_eq!(dev[1..], log[2..]);
    // A page token of dev's own history is refused on main, and one of main's newer history on
    // dev; shared history is fine.
    let dev_page = get_ok(app, &format!("{API}/refs/dev/log?pageSize=1")).await;
    let dev_token = dev_page["next-page-token"].as_str().unwrap().to_owned();
    let shared = get_ok(app, &format!("{API}/refs/main/log?pageToken={dev_token}")).await;
    assert_eq!(hashes(&shared["commits"]), log[2..]);
    let main_page = get_ok(app, &format!("{API}/refs/main/log?pageSize=1")).await;
    let main_token = main_page["next-page-token"].as_str().unwrap().to_owned();
    let (status, body) = get(app, &format!("{API}/refs/dev/log?pageToken={main_token}")).await;
    assert_bad_request(status, &body);
    let dev_only: String = dev[0].bytes().map(|b| format!("{b:02x}")).collect();
    let (status, body) = get(app, &format!("{API}/refs/main/log?pageToken={dev_only}")).await;
    assert_bad_request(status, &body);
    let (status, body) = get(app, &format!("{API}/log?ref=main&pageToken={dev_only}")).await;
    assert_bad_request(status, &body);

    // Bad references, sizes and tokens.
    for uri in [
        format!("{API}/refs/nope/log"),
        format!("{API}/log?ref=nope"),
        format!("{API}/log?ref=main~99"),
        format!("{API}/log?pageSize=0"),
        format!("{API}/log?pageSize=x"),
        format!("{API}/log?pageToken=xyz"),
        format!("{API}/log?pageToken=abc"),
        // Hex of `zzzzzzzz`: not a hash.
        format!("{API}/log?pageToken=7a7a7a7a7a7a7a7a"),
        // Hex of `abc`: too short for a hash.
        format!("{API}/log?pageToken=616263"),
    ] {
        let (status, body) = get(app, &uri).await;
        assert_bad_request(status, &body);
    }
}

/// The log checks `commits.len() == limit` before it reads the next commit, so when a filter
/// (`since`, `author`, `key`) leaves nothing after a full page, that page still carries a
/// `next-page-token`, and the page it names is empty.
#[tokio::test]
async fn a_filtered_log_gives_no_token_when_nothing_follows() {
    let env = env().await;
    let app = &env.app;
    let log = history(app).await;
    let full = get_ok(app, &format!("{API}/log")).await;
    let since = full["commits"][3]["time"].as_str().unwrap().to_owned();
    let paged = all_pages(app, &format!("{API}/log?since={since}"), "commits", 2).await;
    assert_eq!(hashes(&Value::Array(paged)), log[..4]);
    let paged = all_pages(app, &format!("{API}/log?author=anonymous"), "commits", 4).await;
    assert_eq!(hashes(&Value::Array(paged)), log[..8]);
    let paged = all_pages(app, &format!("{API}/log?key=db%1Fu"), "commits", 1).await;
    assert_eq!(hashes(&Value::Array(paged)), [log[1].as_str(), &log[4]]);
}

#[tokio::test]
async fn the_log_filters_by_author_time_and_key() {
    let env = env().await;
    let app = &env.app;
    let log = history(app).await;
    let full = get_ok(app, &format!("{API}/log")).await;
    let commits = full["commits"].as_array().unwrap().clone();
    let time = |i: usize| commits[i]["time"].as_str().unwrap().to_owned();

    // Author.
    let by = |author: &str| format!("{API}/refs/main/log?author={author}");
    assert_eq!(hashes(&get_ok(app, &by("test")).await["commits"]), log[8..]);
    assert_eq!(
        hashes(&get_ok(app, &by("anonymous")).await["commits"]),
        log[..8]
    );
    assert_eq!(get_ok(app, &by("nobody")).await, json!({"commits": []}));
    assert_eq!(
        hashes(
            &get_ok(
                app,
                &format!(
                    "{API}/log?author=anonymous&pageSize=3&pageToken={}",
                    log[6]
                        .bytes()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()
                )
            )
            .await["commits"]
        ),
        log[6..8]
    );
    let paged = all_filtered_log_pages(app, &by("anonymous"), 3).await;
    assert_eq!(hashes(&Value::Array(paged)), log[..8]);

    // Time: `since` and `until` are inclusive; commit times are strictly increasing along first
    // parents, so each names exactly one commit.
    let until = get_ok(app, &format!("{API}/log?until={}", time(3))).await;
    assert_eq!(hashes(&until["commits"]), log[3..]);
    let since = get_ok(app, &format!("{API}/refs/main/log?since={}", time(5))).await;
    assert_eq!(hashes(&since["commits"]), log[..=5]);
    let both = get_ok(
        app,
        &format!("{API}/log?since={}&until={}", time(6), time(2)),
    )
    .await;
    assert_eq!(hashes(&both["commits"]), log[2..=6]);
    let empty = get_ok(
        app,
        &format!("{API}/log?since={}&until={}", time(2), time(6)),
    )
    .await;
    assert_eq!(empty, json!({"commits": []}));
    let paged = all_filtered_log_pages(
        app,
        &format!("{API}/log?since={}&until={}", time(7), time(1)),
        2,
    )
    .await;
    assert_eq!(hashes(&Value::Array(paged)), log[1..=7]);
    // Offsets are accepted (RFC 3339), and a time before everything lists nothing.
    let none = get_ok(app, &format!("{API}/log?until=2001-01-01T01:00:00%2B01:00")).await;
    assert_eq!(none, json!({"commits": []}));
    let all = get_ok(app, &format!("{API}/log?since=2001-01-01T00:00:00Z")).await;
    assert_eq!(hashes(&all["commits"]), log);
    for uri in [
        format!("{API}/log?since=yesterday"),
        format!("{API}/log?until=2026-13-40T00:00:00Z"),
        format!("{API}/refs/main/log?since=1700000000000"),
        format!("{API}/refs/main/log?until=2026-01-01"),
    ] {
        let (status, body) = get(app, &uri).await;
        assert_bad_request(status, &body);
        assert!(message(&body).contains("RFC 3339"), "{uri}: {body}");
    }

    // Key: only the commits that changed that key.
    // History (newest first): 0 t.owner=c, 1 u.owner=b, 2 db.k=2, 3 t.owner=a, 4 create u,
    // 5 db.k=1, 6 create t, 7 create db, 8 create catalog.
    let key = |k: &str| format!("{API}/refs/main/log?key={k}");
    let t = get_ok(app, &key("db%1Ft")).await;
    assert_eq!(hashes(&t["commits"]), [log[0].as_str(), &log[3], &log[6]]);
    let u = get_ok(app, &format!("{API}/log?ref=main&key=db%1Fu")).await;
    assert_eq!(hashes(&u["commits"]), [log[1].as_str(), &log[4]]);
    let db = get_ok(app, &key("db")).await;
    assert_eq!(hashes(&db["commits"]), [log[2].as_str(), &log[5], &log[7]]);
    assert_eq!(get_ok(app, &key("db%1Fnope")).await, json!({"commits": []}));
    let paged = all_filtered_log_pages(app, &key("db%1Ft"), 1).await;
    assert_eq!(
        hashes(&Value::Array(paged)),
        [log[0].as_str(), &log[3], &log[6]]
    );
    // Filters combine.
    let combined = get_ok(
        app,
        &format!("{API}/log?key=db%1Ft&author=anonymous&until={}", time(1)),
    )
    .await;
    assert_eq!(hashes(&combined["commits"]), [log[3].as_str(), &log[6]]);
    for uri in [key("db%1F"), key("%1Fdb"), key("")] {
        let (status, body) = get(app, &uri).await;
        assert_bad_request(status, &body);
    }
}
