//! Merges through the management API: fast-forwards, merge and squash commits, dry runs and
//! expected heads, and conflicts reported, then settled by resolutions or a strategy.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::StatusCode;
use common::management::{
    API, assert_bad_request, assert_error, assert_error_object, create_ref, create_table, env,
    get_ok, keys, metadata_location, post_ok, ref_hash, set_table_property, table_uri,
};
use common::rest::{get, message, post};
use serde_json::{Value, json};

#[tokio::test]
async fn merges_fast_forward_or_write_merge_commits() {
    let env = env().await;
    let app = &env.app;
    let merge = format!("{API}/merge");
    let start = ref_hash(app, "main").await;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "a").await;
    let dev = ref_hash(app, "dev").await;

    // A dry run reports the fast-forward and moves nothing.
    let body = post_ok(app, &merge, json!({"source": "dev", "dry-run": true})).await;
    assert_eq!(body["result"], "fast-forward");
    assert_eq!(body["dry-run"], true);
    assert_eq!(
        (&body["previous-head"], &body["target-head"]),
        (&json!(start), &json!(dev))
    );
    assert_eq!(ref_hash(app, "main").await, start);

    // Fast-forward: main is dev now; no commit written.
    let body = post_ok(app, &merge, json!({"source": "dev", "target": "main"})).await;
    assert_eq!(
        body,
        json!({
            "result": "fast-forward", "dry-run": false, "previous-head": start,
            "target-head": dev, "commits": [], "changes": body["changes"].clone(),
            "resolved": [], "conflicts": []
        })
    );
    assert_eq!(keys(&body["changes"]), ["db.a"]);
    assert_eq!(body["changes"][0]["kind"], "added");
    assert_eq!(ref_hash(app, "main").await, dev);

    // Merging again: up to date, so a resolution names a key that is not in conflict.
    let body = post_ok(app, &merge, json!({"source": "dev"})).await;
    assert_eq!(body["result"], "up-to-date");
    assert_eq!(
        (&body["previous-head"], &body["target-head"]),
        (&json!(dev), &json!(dev))
    );
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "dev", "resolutions": [{"key": ["db", "a"], "take": "theirs"}]}),
    )
    .await;
    assert_bad_request(status, &body);
    assert!(message(&body).contains("db.a"), "{body}");
    // So does one on a fast-forward.
    create_ref(app, "ahead", "branch", Some("main")).await;
    create_table(app, "lake@ahead", "z").await;
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "ahead", "target": "dev",
               "resolutions": [{"key": ["db", "z"], "take": "theirs"}]}),
    )
    .await;
    assert_bad_request(status, &body);
    assert_eq!(ref_hash(app, "dev").await, dev);

    // `only` fast-forwards when it can; `never` writes a merge commit with both parents even
    // when it could fast-forward.
    create_table(app, "lake@dev", "b").await;
    let dev = ref_hash(app, "dev").await;
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "fast-forward": "only"}),
    )
    .await;
    assert_eq!(
        (&body["result"], &body["target-head"]),
        (&json!("fast-forward"), &json!(dev))
    );
    assert_eq!(ref_hash(app, "main").await, dev);
    create_table(app, "lake@dev", "c").await;
    let dev = ref_hash(app, "dev").await;
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "fast-forward": "never", "message": "bring c"}),
    )
    .await;
    assert_eq!(body["result"], "merged");
    let merged = body["target-head"].as_str().unwrap().to_owned();
    assert_eq!(body["commits"], json!([merged]));
    assert_eq!(keys(&body["changes"]), ["db.c"]);
    assert_eq!(ref_hash(app, "main").await, merged);
    let commit = get_ok(app, &format!("{API}/commits/{merged}")).await;
    assert_eq!(commit["parents"], json!([body["previous-head"], dev]));
    assert_eq!(commit["message"], "bring c");
    assert_eq!(commit["properties"]["operation"], "merge");
    assert_eq!(commit["properties"]["merge.source"], json!(dev));
    assert_eq!(keys(&commit["changes"]), ["db.c"]);

    // Diverged: `only` is refused and nothing moves.
    create_table(app, "lake", "m").await;
    create_table(app, "lake@dev", "d").await;
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "dev", "fast-forward": "only"}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "MergeConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, main);

    // A dry-run merge commit: no commit, no target head, nothing moved.
    let body = post_ok(app, &merge, json!({"source": "dev", "dry-run": true})).await;
    assert_eq!(body["result"], "merged");
    assert_eq!(
        (&body["target-head"], &body["commits"]),
        (&Value::Null, &json!([]))
    );
    assert_eq!(keys(&body["changes"]), ["db.d"]);
    assert_eq!(ref_hash(app, "main").await, main);

    // A stale expected head is refused; the right one (or a prefix of it) lands.
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "dev", "expected-target-head": dev}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, main);

    // Squash: one parent, dev's changes.
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "squash": true, "expected-target-head": &main[..12]}),
    )
    .await;
    assert_eq!(body["result"], "merged");
    let squashed = body["target-head"].as_str().unwrap().to_owned();
    let commit = get_ok(app, &format!("{API}/commits/{squashed}")).await;
    assert_eq!(commit["parents"], json!([main]));
    assert_eq!(commit["properties"]["operation"], "squash-merge");
    assert_eq!(keys(&commit["changes"]), ["db.d"]);
    let (status, _) = get(app, &table_uri("lake", "d")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ref_hash(app, "dev").await, dev);

    // Any reference is a source: a tag, a hash, an ancestor.
    create_ref(app, "side", "branch", None).await;
    create_table(app, "lake@side", "s1").await;
    create_table(app, "lake@side", "s2").await;
    let side = ref_hash(app, "side").await;
    create_ref(app, "side-tag", "tag", Some("side~1")).await;
    let body = post_ok(app, &merge, json!({"source": "side-tag"})).await;
    assert_eq!(
        (&body["result"], keys(&body["changes"])),
        (&json!("fast-forward"), vec!["db.s1".to_owned()])
    );
    let body = post_ok(app, &merge, json!({"source": &side[..10]})).await;
    assert_eq!(
        (&body["result"], &body["target-head"]),
        (&json!("fast-forward"), &json!(side))
    );

    // Targets must be branches; references must resolve; options must be known.
    let head = ref_hash(app, "main").await;
    for request in [
        json!({"source": "dev", "target": "side-tag"}),
        json!({"source": "dev", "target": head}),
        json!({"source": "dev", "target": "main~1"}),
        json!({"source": "dev", "target": format!("main#{head}")}),
        json!({"source": "dev", "target": "nope"}),
        json!({"source": "nope"}),
        json!({"source": "main~99"}),
        json!({"source": "dev", "fast-forward": "sometimes"}),
        json!({"source": "dev", "strategy": "coin-toss"}),
        json!({"source": "dev", "expected-target-head": "xyz"}),
        json!({"source": "dev", "dry-run": "yes"}),
        json!({"target": "main"}),
        json!({"source": "dev", "force": true}),
    ] {
        let (status, body) = post(app, &merge, request.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}: {body}");
        assert_bad_request(status, &body);
    }
    assert_eq!(ref_hash(app, "main").await, head);
    assert_eq!(
        ref_hash(app, "side-tag").await,
        ref_hash(app, "side~1").await
    );
}

#[tokio::test]
async fn merge_conflicts_are_reported_and_resolved() {
    let env = env().await;
    let app = &env.app;
    let merge = format!("{API}/merge");
    create_table(app, "lake", "t").await;
    create_table(app, "lake", "u").await;
    create_ref(app, "dev", "branch", None).await;
    set_table_property(app, "lake", "t", "owner", "main").await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    set_table_property(app, "lake", "u", "owner", "main").await;
    set_table_property(app, "lake@dev", "u", "owner", "dev").await;
    create_table(app, "lake@dev", "clean").await;
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);
    let main_t = metadata_location(app, "lake", "t").await;
    let dev_t = metadata_location(app, "lake@dev", "t").await;
    let main_u = metadata_location(app, "lake", "u").await;
    let dev_u = metadata_location(app, "lake@dev", "u").await;

    for dry_run in [false, true] {
        let (status, body) = post(app, &merge, json!({"source": "dev", "dry-run": dry_run})).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["result"], "conflicted");
        assert_eq!(body["dry-run"], dry_run);
        assert_eq!(
            (&body["previous-head"], &body["target-head"]),
            (&json!(main), &json!(main))
        );
        assert_eq!(body["commits"], json!([]));
        assert_error_object(
            &body["error"],
            StatusCode::CONFLICT,
            "MergeConflictException",
        );
        assert_eq!(keys(&body["conflicts"]), ["db.t", "db.u"]);
        let conflict = &body["conflicts"][0];
        assert_eq!(conflict["kind"], "both-modified");
        assert_eq!(conflict["ours"]["metadata-location"], json!(main_t));
        assert_eq!(conflict["theirs"]["metadata-location"], json!(dev_t));
        assert_ne!(
            conflict["base"]["metadata-location"],
            conflict["ours"]["metadata-location"]
        );
        assert_eq!(ref_hash(app, "main").await, main);
        assert_eq!(ref_hash(app, "dev").await, dev);
    }

    // A resolution for a key that is not in conflict is refused, alone or with good ones.
    for resolutions in [
        json!([{"key": ["db", "clean"], "take": "theirs"}]),
        json!([{"key": ["db", "t"], "take": "theirs"}, {"key": ["db", "u"], "take": "ours"},
               {"key": ["db"], "take": "ours"}]),
        json!([{"key": ["db", "nope"], "take": "ours"}]),
    ] {
        let (status, body) = post(
            app,
            &merge,
            json!({"source": "dev", "resolutions": resolutions}),
        )
        .await;
        assert_bad_request(status, &body);
    }
    // Bad resolutions.
    for resolutions in [
        json!([{"key": ["db", "t"], "take": "both"}]),
        json!([{"key": [], "take": "ours"}]),
        json!([{"key": ["db", ""], "take": "ours"}]),
        json!([{"key": ["db", "t"]}]),
        json!([{"key": ["db", "t"], "take": "ours", "why": "x"}]),
        json!([{"key": "db.t", "take": "ours"}]),
    ] {
        let (status, body) = post(
            app,
            &merge,
            json!({"source": "dev", "resolutions": resolutions}),
        )
        .await;
        assert_bad_request(status, &body);
    }
    // Resolving only some keys leaves the others in conflict.
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "dev", "resolutions": [{"key": ["db", "t"], "take": "theirs"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(keys(&body["conflicts"]), ["db.u"]);
    assert_eq!(ref_hash(app, "main").await, main);

    // A dry run with every key resolved reports the merge and moves nothing.
    let resolutions = json!([{"key": ["db", "t"], "take": "theirs"},
                             {"key": ["db", "u"], "take": "ours"}]);
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "resolutions": resolutions, "dry-run": true}),
    )
    .await;
    assert_eq!(
        (&body["result"], &body["target-head"]),
        (&json!("merged"), &Value::Null)
    );
    assert_eq!(ref_hash(app, "main").await, main);

    // For real: t takes dev's metadata, u keeps main's, the clean table comes along.
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "resolutions": resolutions}),
    )
    .await;
    assert_eq!(body["result"], "merged");
    assert_eq!(keys(&body["resolved"]), ["db.t", "db.u"]);
    assert_eq!(body["conflicts"], json!([]));
    assert_eq!(keys(&body["changes"]), ["db.clean", "db.t"]);
    let t_change = &body["changes"][1];
    assert_eq!(
        (
            &t_change["before"]["metadata-location"],
            &t_change["after"]["metadata-location"]
        ),
        (&json!(main_t), &json!(dev_t))
    );
    assert_eq!(metadata_location(app, "lake", "t").await, dev_t);
    assert_eq!(metadata_location(app, "lake", "u").await, main_u);
    let (_, t) = get(app, &table_uri("lake", "t")).await;
    assert_eq!(t["metadata"]["properties"]["owner"], "dev");
    let merged = ref_hash(app, "main").await;
    assert_eq!(body["target-head"], json!(merged));
    let commit = get_ok(app, &format!("{API}/commits/{merged}")).await;
    assert_eq!(commit["parents"], json!([main, dev]));

    // Strategies settle every conflict: prefer-ours keeps main's, prefer-theirs takes dev's.
    set_table_property(app, "lake", "u", "owner", "main2").await;
    set_table_property(app, "lake@dev", "u", "owner", "dev2").await;
    let main_u = metadata_location(app, "lake", "u").await;
    let dev_u2 = metadata_location(app, "lake@dev", "u").await;
    assert_ne!(dev_u2, dev_u);
    let before = ref_hash(app, "main").await;
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "strategy": "prefer-ours"}),
    )
    .await;
    assert_eq!(body["result"], "merged");
    assert_eq!(keys(&body["resolved"]), ["db.u"]);
    assert_eq!(body["changes"], json!([]));
    assert_eq!(metadata_location(app, "lake", "u").await, main_u);
    assert_ne!(ref_hash(app, "main").await, before);

    set_table_property(app, "lake", "u", "owner", "main3").await;
    set_table_property(app, "lake@dev", "u", "owner", "dev3").await;
    let dev_u3 = metadata_location(app, "lake@dev", "u").await;
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "strategy": "prefer-theirs"}),
    )
    .await;
    assert_eq!(keys(&body["resolved"]), ["db.u"]);
    assert_eq!(keys(&body["changes"]), ["db.u"]);
    assert_eq!(metadata_location(app, "lake", "u").await, dev_u3);

    // A resolution beats the strategy.
    set_table_property(app, "lake", "u", "owner", "main4").await;
    set_table_property(app, "lake@dev", "u", "owner", "dev4").await;
    let main_u4 = metadata_location(app, "lake", "u").await;
    post_ok(
        app,
        &merge,
        json!({"source": "dev", "strategy": "prefer-theirs",
               "resolutions": [{"key": ["db", "u"], "take": "ours"}]}),
    )
    .await;
    assert_eq!(metadata_location(app, "lake", "u").await, main_u4);
}
