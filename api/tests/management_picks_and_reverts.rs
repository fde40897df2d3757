//! Cherry-picks and reverts through the management API: replaying commits on a branch and
//! undoing one with a new commit, with dry runs, conflicts, and what a resolution or the
//! strategy settled.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::StatusCode;
use common::management::{
    API, assert_bad_request, assert_error, assert_error_object, create_ref, create_table, env,
    get_ok, keys, metadata_location, post_ok, ref_hash, set_namespace_property, set_table_property,
    table_uri,
};
use common::rest::{get, post};
use serde_json::{Value, json};

async fn namespace_properties(app: &axum::Router, prefix: &str, namespace: &str) -> Value {
    get_ok(app, &format!("/v1/{prefix}/namespaces/{namespace}")).await["properties"].clone()
}

// ---------------------------------------------------------------------------------------------
// Cherry-pick

#[tokio::test]
async fn cherry_picks_replay_commits_on_a_branch() {
    let env = env().await;
    let app = &env.app;
    let pick = format!("{API}/cherry-pick");
    create_table(app, "lake", "t").await;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "a").await;
    let c1 = ref_hash(app, "dev").await;
    create_table(app, "lake@dev", "b").await;
    let c2 = ref_hash(app, "dev").await;
    set_table_property(app, "lake@dev", "a", "owner", "dev").await;
    let c3 = ref_hash(app, "dev").await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    let c4 = ref_hash(app, "dev").await;
    set_namespace_property(app, "lake", "db", "k", "main").await;
    let main = ref_hash(app, "main").await;

    // One commit: its change, and only its change, lands on main in a new commit.
    let body = post_ok(app, &pick, json!({"commits": [c2]})).await;
    assert_eq!(body["result"], "applied");
    assert_eq!(body["previous-head"], json!(main));
    let picked = body["target-head"].as_str().unwrap().to_owned();
    assert_eq!(body["commits"], json!([picked]));
    assert_eq!(keys(&body["changes"]), ["db.b"]);
    assert_eq!(ref_hash(app, "main").await, picked);
    let commit = get_ok(app, &format!("{API}/commits/{picked}")).await;
    assert_eq!(commit["parents"], json!([main]));
    assert_eq!(keys(&commit["changes"]), ["db.b"]);
    assert_eq!(commit["changes"][0]["kind"], "added");
    assert_eq!(commit["properties"]["cherry-picked-from"], json!(c2));
    let (status, _) = get(app, &table_uri("lake", "b")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(app, &table_uri("lake", "a")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        namespace_properties(app, "lake", "db").await,
        json!({"k": "main"})
    );

    // A dry run of two picks writes nothing.
    let body = post_ok(app, &pick, json!({"commits": [c1, c3], "dry-run": true})).await;
    assert_eq!(
        (&body["target-head"], &body["commits"]),
        (&Value::Null, &json!([]))
    );
    assert_eq!(keys(&body["changes"]), ["db.a"]);
    assert_eq!(ref_hash(app, "main").await, picked);

    // Squash of two: one commit with both changes, onto a branch named in the request.
    create_ref(app, "rel", "branch", Some(&main)).await;
    let body = post_ok(
        app,
        &pick,
        json!({"commits": [&c1[..12], "dev~1"], "onto": "rel", "squash": true,
               "message": "a, owned", "expected-target-head": main}),
    )
    .await;
    assert_eq!(body["commits"].as_array().unwrap().len(), 1, "{body}");
    let squashed = body["target-head"].as_str().unwrap().to_owned();
    assert_eq!(ref_hash(app, "rel").await, squashed);
    let commit = get_ok(app, &format!("{API}/commits/{squashed}")).await;
    assert_eq!(commit["parents"], json!([main]));
    assert_eq!(commit["message"], "a, owned");
    assert_eq!(keys(&commit["changes"]), ["db.a"]);
    let (_, a) = get(app, &table_uri("lake@rel", "a")).await;
    assert_eq!(a["metadata"]["properties"]["owner"], "dev");
    assert_eq!(
        metadata_location(app, "lake@rel", "a").await,
        metadata_location(app, "lake@dev", "a").await
    );

    // Two picks without squash: two commits, chained.
    create_ref(app, "rel2", "branch", Some(&main)).await;
    let body = post_ok(app, &pick, json!({"commits": [c1, c3], "onto": "rel2"})).await;
    let commits = body["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2, "{body}");
    let second = get_ok(
        app,
        &format!("{API}/commits/{}", commits[1].as_str().unwrap()),
    )
    .await;
    assert_eq!(second["parents"], json!([commits[0]]));
    let first = get_ok(
        app,
        &format!("{API}/commits/{}", commits[0].as_str().unwrap()),
    )
    .await;
    assert_eq!(first["parents"], json!([main]));

    // A pick that conflicts: 409, nothing moved.
    set_table_property(app, "lake", "t", "owner", "main").await;
    let head = ref_hash(app, "main").await;
    let (status, body) = post(app, &pick, json!({"commits": [c4]})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["result"], "conflicted");
    assert_eq!(keys(&body["conflicts"]), ["db.t"]);
    assert_eq!(body["conflicts"][0]["kind"], "both-modified");
    assert_eq!(body["target-head"], json!(head));
    assert_error_object(
        &body["error"],
        StatusCode::CONFLICT,
        "MergeConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
    // A conflict in a later pick writes none of the earlier ones either.
    let (status, _) = post(app, &pick, json!({"commits": [c1, c4]})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(ref_hash(app, "main").await, head);
    // Resolved, it lands.
    let body = post_ok(
        app,
        &pick,
        json!({"commits": [c4], "resolutions": [{"key": ["db", "t"], "take": "theirs"}]}),
    )
    .await;
    assert_eq!(body["result"], "applied");
    assert_eq!(body["target-head"], json!(ref_hash(app, "main").await));
    assert_eq!(
        metadata_location(app, "lake", "t").await,
        metadata_location(app, "lake@dev", "t").await
    );
    let head = ref_hash(app, "main").await;

    // Bad requests move nothing.
    for request in [
        json!({"commits": []}),
        json!({"commits": ["nope"]}),
        json!({"commits": [c1], "onto": "nope"}),
        json!({"commits": [c1], "onto": c1}),
        json!({"commits": [c1], "onto": "main~1"}),
        json!({"commits": [c2], "resolutions": [{"key": ["db", "b"], "take": "ours"}]}),
        json!({"commits": [c1], "expected-target-head": "nothex"}),
        json!({"commits": [c1], "strategy": "maybe"}),
        json!({"commits": c1}),
        json!({"commit": [c1]}),
        json!({}),
    ] {
        let (status, body) = post(app, &pick, request.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}: {body}");
        assert_bad_request(status, &body);
    }
    let (status, body) = post(
        app,
        &pick,
        json!({"commits": [c1], "expected-target-head": main}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
}

// ---------------------------------------------------------------------------------------------
// Revert

#[tokio::test]
async fn reverts_undo_a_commit_with_a_new_one() {
    let env = env().await;
    let app = &env.app;
    let revert = format!("{API}/revert");
    set_namespace_property(app, "lake", "db", "owner", "ana").await;
    let set = ref_hash(app, "main").await;
    create_table(app, "lake", "t").await;
    assert_eq!(
        namespace_properties(app, "lake", "db").await,
        json!({"owner": "ana"})
    );

    // Revert the property set: a new commit on top, the property gone, the table kept.
    let body = post_ok(app, &revert, json!({"commit": set})).await;
    assert_eq!(body["result"], "applied");
    let reverted = body["target-head"].as_str().unwrap().to_owned();
    assert_eq!(body["commits"], json!([reverted]));
    assert_eq!(keys(&body["changes"]), ["db"]);
    assert_eq!(namespace_properties(app, "lake", "db").await, json!({}));
    let (status, _) = get(app, &table_uri("lake", "t")).await;
    assert_eq!(status, StatusCode::OK);
    let commit = get_ok(app, &format!("{API}/commits/{reverted}")).await;
    assert_eq!(commit["parents"], json!([body["previous-head"]]));
    assert_eq!(commit["properties"]["operation"], "revert");
    assert_eq!(commit["properties"]["reverts"], json!(set));
    let change = &commit["changes"][0];
    assert_eq!(
        (
            &change["before"]["properties"],
            &change["after"]["properties"]
        ),
        (&json!({"owner": "ana"}), &json!({}))
    );

    // Reverting the revert brings it back, by any reference; a dry run moves nothing.
    let body = post_ok(app, &revert, json!({"commit": "main", "dry-run": true})).await;
    assert_eq!(
        (&body["target-head"], keys(&body["changes"])),
        (&Value::Null, vec!["db".to_owned()])
    );
    assert_eq!(ref_hash(app, "main").await, reverted);
    post_ok(app, &revert, json!({"commit": "main", "message": "again"})).await;
    assert_eq!(
        namespace_properties(app, "lake", "db").await,
        json!({"owner": "ana"})
    );
    assert_eq!(
        get_ok(app, &format!("{API}/commits/main")).await["message"],
        "again"
    );

    // A revert on another branch.
    create_ref(app, "dev", "branch", None).await;
    post_ok(app, &revert, json!({"commit": "main", "on": "dev"})).await;
    assert_eq!(namespace_properties(app, "lake@dev", "db").await, json!({}));
    assert_eq!(
        namespace_properties(app, "lake", "db").await,
        json!({"owner": "ana"})
    );

    // A revert whose key changed since: 409, nothing moved; a strategy settles it.
    set_table_property(app, "lake", "t", "owner", "a").await;
    let owner_a = ref_hash(app, "main").await;
    set_table_property(app, "lake", "t", "owner", "b").await;
    let head = ref_hash(app, "main").await;
    let location_b = metadata_location(app, "lake", "t").await;
    let (status, body) = post(app, &revert, json!({"commit": owner_a})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["result"], "conflicted");
    assert_eq!(keys(&body["conflicts"]), ["db.t"]);
    assert_error_object(
        &body["error"],
        StatusCode::CONFLICT,
        "MergeConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
    let body = post_ok(
        app,
        &revert,
        json!({"commit": owner_a, "strategy": "prefer-ours"}),
    )
    .await;
    assert_eq!(body["result"], "applied");
    assert_ne!(ref_hash(app, "main").await, head);
    assert_eq!(metadata_location(app, "lake", "t").await, location_b);
    let head = ref_hash(app, "main").await;

    // Bad requests move nothing.
    create_ref(app, "v1", "tag", None).await;
    for request in [
        json!({"commit": "nope"}),
        json!({"commit": set, "on": "v1"}),
        json!({"commit": set, "on": set}),
        json!({"commit": set, "on": "nope"}),
        json!({"commit": set, "strategy": "x"}),
        json!({"commit": set, "squash": true}),
        json!({"commit": set, "resolutions": [{"key": ["db", "t"], "take": "ours"}]}),
        json!({"commits": [set]}),
        json!({}),
    ] {
        let (status, body) = post(app, &revert, request.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}: {body}");
        assert_bad_request(status, &body);
    }
    let (status, body) = post(
        app,
        &revert,
        json!({"commit": set, "expected-target-head": reverted}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
}

/// Cherry-picks and reverts list the conflicts a resolution or the strategy settled in
/// `resolved`, as merges do.
#[tokio::test]
async fn picks_and_reverts_report_what_they_settled() {
    let env = env().await;
    let app = &env.app;
    create_table(app, "lake", "t").await;
    create_ref(app, "dev", "branch", None).await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    let dev = ref_hash(app, "dev").await;
    set_table_property(app, "lake", "t", "owner", "main").await;
    let main_change = ref_hash(app, "main").await;
    set_table_property(app, "lake", "t", "owner", "main2").await;
    let body = post_ok(
        app,
        &format!("{API}/cherry-pick"),
        json!({"commits": [dev], "strategy": "prefer-ours"}),
    )
    .await;
    assert_eq!(keys(&body["resolved"]), ["db.t"], "{body}");
    let body = post_ok(
        app,
        &format!("{API}/revert"),
        json!({"commit": main_change, "resolutions": [{"key": ["db", "t"], "take": "ours"}]}),
    )
    .await;
    assert_eq!(keys(&body["resolved"]), ["db.t"], "{body}");
}
