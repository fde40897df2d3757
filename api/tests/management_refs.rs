//! Reading branches and tags through the management API: listing them by type and prefix,
//! paged, with how far each branch is from main; reading one by any reference expression; and
//! refusing a hash that names no commit wherever a route takes a reference.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::management::{
    API, all_pages, assert_bad_request, create_ref, create_table, env, get_ok, instant_between,
    post_ok, ref_hash, set_namespace_property, set_table_property,
};
use common::rest::{get, message, post};
use pangolin_catalog::Catalog;
use pangolin_store::{ObjectId, ObjectKind, ObjectStore, RawObject, RepoId};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Refs: list

#[tokio::test]
async fn refs_are_listed_by_type_and_prefix_and_paged() {
    let env = env().await;
    let app = &env.app;
    let main = ref_hash(app, "main").await;
    for name in [
        "feature/e",
        "feature/a",
        "feature/c",
        "feature/b",
        "feature/d",
    ] {
        create_ref(app, name, "branch", None).await;
    }
    create_ref(app, "zeta", "branch", None).await;
    create_ref(app, "v2", "tag", None).await;
    create_ref(app, "v1", "tag", None).await;
    let names = |refs: &[Value]| -> Vec<String> {
        refs.iter()
            .map(|r| {
                format!(
                    "{}:{}",
                    r["type"].as_str().unwrap(),
                    r["name"].as_str().unwrap()
                )
            })
            .collect()
    };

    // Branches first, then tags, each by name.
    let all = get_ok(app, &format!("{API}/refs")).await;
    assert!(all.get("next-page-token").is_none(), "{all}");
    let listed = all["refs"].as_array().unwrap();
    assert_eq!(
        names(listed),
        [
            "branch:feature/a",
            "branch:feature/b",
            "branch:feature/c",
            "branch:feature/d",
            "branch:feature/e",
            "branch:main",
            "branch:zeta",
            "tag:v1",
            "tag:v2"
        ]
    );
    for r in listed {
        assert_eq!(r["hash"], json!(main), "{r}");
        assert_eq!(r.as_object().unwrap().len(), 5, "{r}");
    }

    // Paged: every page size gives the same refs, each once, no gaps.
    for size in [1, 2, 4, 9, 10] {
        let paged = all_pages(app, &format!("{API}/refs"), "refs", size).await;
        assert_eq!(&paged, listed, "pageSize {size}");
    }
    // The five feature branches, two at a time: 2 + 2 + 1.
    let uri = format!("{API}/refs?type=branch&prefix=feature/&pageSize=2");
    let first = get_ok(app, &uri).await;
    assert_eq!(
        names(first["refs"].as_array().unwrap()),
        ["branch:feature/a", "branch:feature/b"]
    );
    let token = first["next-page-token"].as_str().unwrap();
    let second = get_ok(app, &format!("{uri}&pageToken={token}")).await;
    assert_eq!(
        names(second["refs"].as_array().unwrap()),
        ["branch:feature/c", "branch:feature/d"]
    );
    let token = second["next-page-token"].as_str().unwrap();
    let third = get_ok(app, &format!("{uri}&pageToken={token}")).await;
    assert_eq!(
        names(third["refs"].as_array().unwrap()),
        ["branch:feature/e"]
    );
    assert!(third.get("next-page-token").is_none(), "{third}");

    // Filters.
    let branches = get_ok(app, &format!("{API}/refs?type=branch")).await;
    assert_eq!(branches["refs"].as_array().unwrap().len(), 7);
    assert!(
        branches["refs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["type"] == "branch"),
        "{branches}"
    );
    let tags = get_ok(app, &format!("{API}/refs?type=tag")).await;
    assert_eq!(
        names(tags["refs"].as_array().unwrap()),
        ["tag:v1", "tag:v2"]
    );
    let prefixed = get_ok(app, &format!("{API}/refs?prefix=v")).await;
    assert_eq!(
        names(prefixed["refs"].as_array().unwrap()),
        ["tag:v1", "tag:v2"]
    );
    let prefixed = get_ok(app, &format!("{API}/refs?prefix=feature%2Fd")).await;
    assert_eq!(
        names(prefixed["refs"].as_array().unwrap()),
        ["branch:feature/d"]
    );
    let none = get_ok(app, &format!("{API}/refs?prefix=nothing")).await;
    assert_eq!(none, json!({"refs": []}));
    let none = get_ok(app, &format!("{API}/refs?type=tag&prefix=feature")).await;
    assert_eq!(none, json!({"refs": []}));

    // Bad input.
    for query in [
        "type=commit",
        "type=",
        "pageSize=0",
        "pageSize=ten",
        "pageSize=-1",
        "pageToken=zz",
        "pageToken=abc",
        // Hex, but not of `b:<name>` or `t:<name>`.
        "pageToken=6d61696e",
        "pageToken=783a6d61696e",
        // `b:a..b`: not a ref name.
        "pageToken=623a612e2e62",
    ] {
        let (status, body) = get(app, &format!("{API}/refs?{query}")).await;
        assert_bad_request(status, &body);
    }
    // A page size above the limit is capped, not refused.
    let big = get_ok(app, &format!("{API}/refs?pageSize=100000")).await;
    assert_eq!(big["refs"].as_array().unwrap().len(), 9);
}

#[tokio::test]
async fn refs_say_how_far_each_branch_is_from_main() {
    let env = env().await;
    let app = &env.app;
    create_ref(app, "dev", "branch", None).await;
    create_ref(app, "idle", "branch", None).await;
    create_ref(app, "v1", "tag", None).await;
    create_table(app, "lake@dev", "t").await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    for value in ["a", "b", "c"] {
        set_namespace_property(app, "lake", "db", "k", value).await;
    }
    // A branch that only has main's older history: behind, not ahead.
    create_ref(app, "old", "branch", Some("main~2")).await;
    // A tag on dev: no divergence for tags.
    create_ref(app, "dev-tag", "tag", Some("dev")).await;

    let refs = get_ok(app, &format!("{API}/refs")).await;
    let divergence: Vec<(String, Value, Value)> = refs["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            // Both keys are always there, null for tags.
            let r = r.as_object().unwrap();
            (
                r["name"].as_str().unwrap().to_owned(),
                r["ahead"].clone(),
                r["behind"].clone(),
            )
        })
        .collect();
    let expected = [
        ("dev", json!(2), json!(3)),
        ("idle", json!(0), json!(3)),
        ("main", json!(0), json!(0)),
        ("old", json!(0), json!(2)),
        ("dev-tag", Value::Null, Value::Null),
        ("v1", Value::Null, Value::Null),
    ];
    let expected: Vec<(String, Value, Value)> = expected
        .into_iter()
        .map(|(n, a, b)| (n.to_owned(), a, b))
        .collect();
    assert_eq!(divergence, expected, "{refs}");

    // With main merged into dev, dev is not behind any more.
    post_ok(
        app,
        &format!("{API}/merge"),
        json!({"source": "main", "target": "dev"}),
    )
    .await;
    let dev = get_ok(app, &format!("{API}/refs?prefix=dev&type=branch")).await;
    assert_eq!(dev["refs"][0]["behind"], json!(0), "{dev}");
}

/// `ahead` and `behind` count first-parent commits since the merge base by subtracting
/// first-parent depths, which is only right when the merge base is on both first-parent chains.
/// After main is merged into dev (a merge commit on dev), the merge base of dev and main is
/// main's head, which is not on dev's first-parent chain.
#[tokio::test]
async fn ahead_and_behind_after_merging_main_into_a_branch() {
    let env = env().await;
    let app = &env.app;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "t").await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    for value in ["a", "b", "c"] {
        set_namespace_property(app, "lake", "db", "k", value).await;
    }
    post_ok(
        app,
        &format!("{API}/merge"),
        json!({"source": "main", "target": "dev"}),
    )
    .await;
    // dev has three first-parent commits main does not (two of its own and the merge); main
    // has none that dev does not.
    let dev = get_ok(app, &format!("{API}/refs?prefix=dev")).await;
    assert_eq!(
        (
            dev["refs"][0]["ahead"].clone(),
            dev["refs"][0]["behind"].clone()
        ),
        (json!(3), json!(0)),
        "{dev}"
    );
}

// ---------------------------------------------------------------------------------------------
// Refs: read

#[tokio::test]
async fn refs_are_read_by_any_expression() {
    let env = env().await;
    let app = &env.app;
    let first = ref_hash(app, "main").await;
    let time_at_first = pangolin_catalog::rfc3339(instant_between().await);
    set_namespace_property(app, "lake", "db", "k", "1").await;
    let second = ref_hash(app, "main").await;
    create_ref(app, "v1", "tag", Some(&first)).await;
    create_ref(app, "feature/x", "branch", None).await;
    create_ref(app, "dev", "branch", None).await;
    set_namespace_property(app, "lake@dev", "db", "k", "dev").await;
    let dev = ref_hash(app, "dev").await;

    let main = get_ok(app, &format!("{API}/refs/main")).await;
    let object = main.as_object().unwrap();
    assert_eq!(
        object.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        BTreeSet::from(["name", "type", "hash", "time", "message"]),
        "{main}"
    );
    assert_eq!(
        (&main["name"], &main["type"], &main["hash"]),
        (&json!("main"), &json!("branch"), &json!(second))
    );
    assert!(main["message"].as_str().unwrap().contains("db"), "{main}");
    let time = main["time"].as_str().unwrap();
    assert!(time.ends_with('Z') && time.contains('T'), "{time}");
    let root = format!(
        "{API}/refs/{}",
        get_ok(app, &format!("{API}/log")).await["commits"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["hash"]
            .as_str()
            .unwrap()
    );
    assert_eq!(get_ok(app, &root).await["message"], "create catalog lake");

    for (reference, name, kind, hash) in [
        ("v1".to_owned(), "v1", "tag", &first),
        ("feature%2Fx".to_owned(), "feature/x", "branch", &second),
        (second.clone(), second.as_str(), "commit", &second),
        (first[..8].to_owned(), &first[..8], "commit", &first),
        (dev[..16].to_owned(), &dev[..16], "commit", &dev),
        ("main~1".to_owned(), "main~1", "commit", &first),
        ("main~".to_owned(), "main~", "commit", &first),
        ("main~0".to_owned(), "main~0", "commit", &second),
        ("dev~1".to_owned(), "dev~1", "commit", &second),
        ("v1~0".to_owned(), "v1~0", "commit", &first),
        (format!("main%23{first}"), "", "commit", &first),
        (format!("main%23{}", &second[..8]), "", "commit", &second),
        (format!("main%23{time_at_first}"), "", "commit", &first),
        (
            "main%232099-01-01T00:00:00Z".to_owned(),
            "",
            "commit",
            &second,
        ),
    ] {
        let body = get_ok(app, &format!("{API}/refs/{reference}")).await;
        if !name.is_empty() {
            assert_eq!(body["name"], json!(name), "{reference}: {body}");
        }
        assert_eq!(
            (&body["type"], &body["hash"]),
            (&json!(kind), &json!(hash)),
            "{reference}: {body}"
        );
    }

    // Unknown refs, bad expressions, hashes not in the ref's history, times before it.
    for reference in [
        "nope".to_owned(),
        "a..b".to_owned(),
        "main~99".to_owned(),
        "main~x".to_owned(),
        // Too short to be a hash: a name, and no ref has it.
        first[..7].to_owned(),
        format!("main%23{}", &first[..7]),
        "main%23zzzzzzzz".to_owned(),
        format!("main%23{dev}"),
        format!("v1%23{second}"),
        "main%232001-01-01T00:00:00Z".to_owned(),
        "main%232026-13-40T00:00:00Z".to_owned(),
        "deadbeefdeadbeef".to_owned(),
    ] {
        let (status, body) = get(app, &format!("{API}/refs/{reference}")).await;
        assert_bad_request(status, &body);
    }

    // A prefix two objects share is ambiguous: plant an object whose id is the head's with its
    // 21st hex digit changed.
    let flipped = if second.as_bytes()[20] == b'0' {
        "1"
    } else {
        "0"
    };
    let twin = format!("{}{flipped}{}", &second[..20], &second[21..]);
    let raw = RawObject {
        id: twin.parse::<ObjectId>().unwrap(),
        kind: ObjectKind::Commit,
        data: Vec::<u8>::new().into(),
    };
    env.store
        .put_many(&RepoId::new("default.lake").unwrap(), &[raw])
        .await
        .unwrap();
    for reference in [second[..20].to_owned(), format!("main%23{}", &second[..20])] {
        let (status, body) = get(app, &format!("{API}/refs/{reference}")).await;
        assert_bad_request(status, &body);
        assert!(message(&body).contains("ambiguous"), "{reference}: {body}");
    }
    // A longer prefix tells them apart again.
    let body = get_ok(app, &format!("{API}/refs/main%23{}", &second[..21])).await;
    assert_eq!(body["hash"], json!(second));
    let body = get_ok(app, &format!("{API}/refs/{}", &second[..21])).await;
    assert_eq!(body["hash"], json!(second));
}

/// A well-formed hash that names no commit (a full hash of nothing, or a tree's hash) resolves
/// without a check and fails when the commit is read: 500 instead of 400.
#[tokio::test]
async fn hashes_that_are_not_commits_are_bad_requests() {
    let env = env().await;
    let app = &env.app;
    let head = ref_hash(app, "main").await;
    let catalog = Catalog::open(env.store.clone(), env.cache.clone(), "default", "lake").unwrap();
    let tree = catalog
        .odb()
        .commit(&head.parse().unwrap())
        .await
        .unwrap()
        .tree
        .to_hex();
    let nothing = "0".repeat(64);
    for reference in [nothing.clone(), tree.clone(), format!("main%23{nothing}")] {
        for uri in [
            format!("{API}/refs/{reference}"),
            format!("{API}/commits/{reference}"),
            format!("{API}/entries?ref={reference}"),
            format!("{API}/diff?from=main&to={reference}"),
            format!("{API}/refs/{reference}/log"),
        ] {
            let (status, body) = get(app, &uri).await;
            assert_bad_request(status, &body);
        }
        let reference = reference.replace("%23", "#");
        for (uri, body) in [
            (format!("{API}/merge"), json!({"source": reference})),
            (
                format!("{API}/cherry-pick"),
                json!({"commits": [reference]}),
            ),
            (format!("{API}/revert"), json!({"commit": reference})),
        ] {
            let (status, answer) = post(app, &uri, body).await;
            assert_bad_request(status, &answer);
        }
    }
}
