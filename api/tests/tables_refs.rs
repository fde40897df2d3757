//! Tables seen through references: addressed at branches, tags, commits, times and
//! ancestors, read-only where the reference cannot move, what the management API says a
//! reference is, and merges that report conflicts or only pretend to move.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::call;
use common::rest::{error_type, get, message, post, schema};
use common::tables::{assert_error, commit, create_ref, create_table, env, ref_hash, table_uri};
use pangolin_store::Timestamp;
use serde_json::{Value, json};

/// Milliseconds since the epoch as RFC 3339 (UTC).
fn rfc3339(millis: i64) -> String {
    let (secs, milli) = (millis.div_euclid(1000), millis.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to civil date (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A time strictly after everything done so far and strictly before anything done next
/// (waits for the millisecond clock to tick on both sides).
async fn instant_between() -> Timestamp {
    async fn tick_past(t: Timestamp) -> Timestamp {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let now = Timestamp::now();
            if now > t {
                return now;
            }
        }
    }
    let between = tick_past(Timestamp::now()).await;
    tick_past(between).await;
    between
}

#[tokio::test]
async fn tables_are_addressed_at_branches_tags_commits_and_times() {
    let env = env().await;
    let app = &env.app;
    assert_eq!(rfc3339(1_796_040_000_250), "2026-11-30T12:00:00.250Z");
    assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");

    create_ref(app, "dev", "branch").await;
    let (status, created) = post(
        app,
        "/v1/lake/namespaces/db/tables",
        json!({"name": "t@dev", "schema": schema()}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let (status, _) = get(app, &table_uri("t@dev")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(app, "/v1/lake@dev/namespaces/db/tables/t").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = get(app, &table_uri("t")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    let (_, body) = get(app, "/v1/lake/namespaces/db/tables").await;
    assert_eq!(body, json!({"identifiers": []}));
    let (_, body) = get(app, "/v1/lake@dev/namespaces/db/tables").await;
    assert_eq!(
        body,
        json!({"identifiers": [{"namespace": ["db"], "name": "t"}]})
    );

    let before_merge = ref_hash(app, "main").await;
    let time_before_merge = rfc3339(instant_between().await.as_millis());
    let (status, merged) = post(app, "/api/v1/catalogs/lake/merge", json!({"source": "dev"})).await;
    assert_eq!(status, StatusCode::OK, "{merged}");
    let after_merge = ref_hash(app, "main").await;
    assert_ne!(after_merge, before_merge);
    assert_eq!(merged["target-head"], json!(after_merge));
    assert_eq!(merged["previous-head"], json!(before_merge));

    for visible in ["t", "t@main", "t@dev"] {
        let (status, body) = get(app, &table_uri(visible)).await;
        assert_eq!(status, StatusCode::OK, "{visible}: {body}");
        assert_eq!(body["metadata-location"], created["metadata-location"]);
    }
    // The `#` of a commit or a time is percent-encoded in the path, as clients send it.
    for (name, expected) in [
        (format!("t@main%23{before_merge}"), StatusCode::NOT_FOUND),
        (
            format!("t@main%23{}", &before_merge[..12]),
            StatusCode::NOT_FOUND,
        ),
        (format!("t@main%23{after_merge}"), StatusCode::OK),
        (
            format!("t@main%23{time_before_merge}"),
            StatusCode::NOT_FOUND,
        ),
        ("t@main%232099-01-01T00:00:00Z".to_owned(), StatusCode::OK),
        ("t@main~1".to_owned(), StatusCode::NOT_FOUND),
    ] {
        let (status, body) = get(app, &table_uri(&name)).await;
        assert_eq!(status, expected, "{name}: {body}");
        if status == StatusCode::NOT_FOUND {
            assert_eq!(error_type(&body), "NoSuchTableException", "{name}");
        }
        let (status, _) = call(app, Method::HEAD, &table_uri(&name), None).await;
        assert_eq!(
            status,
            if expected == StatusCode::OK {
                StatusCode::NO_CONTENT
            } else {
                expected
            },
            "HEAD {name}"
        );
    }
    // A time before the branch existed, a ref that does not exist, a hash not in main.
    for name in [
        "t@main%232001-01-01T00:00:00Z".to_owned(),
        "t@nope".to_owned(),
        "t@main%23deadbeefdeadbeef".to_owned(),
    ] {
        let (status, body) = get(app, &table_uri(&name)).await;
        assert_error(
            status,
            &body,
            StatusCode::BAD_REQUEST,
            "BadRequestException",
        );
    }

    // Writes through a commit, a time, an ancestor or a tag are refused as read-only.
    create_ref(app, "v1", "tag").await;
    let (status, _) = get(app, &table_uri("t@v1")).await;
    assert_eq!(status, StatusCode::OK);
    let tag_head = ref_hash(app, "v1").await;
    let read_only = [
        format!("main#{after_merge}"),
        "main#2099-01-01T00:00:00Z".to_owned(),
        "main~0".to_owned(),
        "v1".to_owned(),
    ];
    for reference in &read_only {
        let uri = table_uri(&format!("t@{}", reference.replace('#', "%23")));
        let attempts = [
            (
                Method::POST,
                uri.clone(),
                Some(json!({"requirements": [],
                            "updates": [{"action": "set-properties", "updates": {"a": "b"}}]})),
            ),
            (Method::DELETE, uri.clone(), None),
            (
                Method::POST,
                "/v1/lake/namespaces/db/tables".to_owned(),
                Some(json!({"name": format!("u@{reference}"), "schema": schema()})),
            ),
            (
                Method::POST,
                "/v1/lake/namespaces/db/tables".to_owned(),
                Some(json!({"name": format!("u@{reference}"), "schema": schema(),
                            "stage-create": true})),
            ),
            (
                Method::POST,
                "/v1/lake/tables/rename".to_owned(),
                Some(
                    json!({"source": {"namespace": ["db"], "name": format!("t@{reference}")},
                            "destination": {"namespace": ["db"], "name": "t9"}}),
                ),
            ),
            (
                Method::POST,
                "/v1/lake/namespaces/db/register".to_owned(),
                Some(json!({"name": format!("u@{reference}"),
                            "metadata-location": created["metadata-location"]})),
            ),
        ];
        for (method, uri, body) in attempts {
            let label = format!("{method} {uri} {body:?}");
            let (status, response) = call(app, method, &uri, body).await;
            assert_error(
                status,
                &response,
                StatusCode::BAD_REQUEST,
                "BadRequestException",
            );
            assert!(
                message(&response).contains("read-only"),
                "{label}: {response}"
            );
        }
    }
    assert_eq!(ref_hash(app, "main").await, after_merge);
    assert_eq!(ref_hash(app, "v1").await, tag_head);
    let (_, body) = get(app, &table_uri("t")).await;
    assert_eq!(body["metadata"]["properties"], json!({}));

    // `~n` counts first-parent commits back from the branch head.
    create_table(app, "lake", "u").await;
    for (name, expected) in [
        ("t@main~1", StatusCode::OK),
        ("u@main~1", StatusCode::NOT_FOUND),
        ("u@main~0", StatusCode::OK),
        ("u@main", StatusCode::OK),
        ("t@main~2", StatusCode::NOT_FOUND),
    ] {
        let (status, body) = get(app, &table_uri(name)).await;
        assert_eq!(status, expected, "{name}: {body}");
    }
}

#[tokio::test]
async fn the_management_api_names_what_a_reference_is() {
    let env = env().await;
    let app = &env.app;
    create_ref(app, "v1", "tag").await;
    let head = ref_hash(app, "main").await;
    let (_, body) = get(app, "/api/v1/catalogs/lake/refs/main").await;
    assert_eq!(body["type"], "branch");
    let (_, body) = get(app, "/api/v1/catalogs/lake/refs/v1").await;
    assert_eq!(body["type"], "tag");
    let (_, body) = get(app, &format!("/api/v1/catalogs/lake/refs/main%23{head}")).await;
    assert_eq!(
        (body["type"].clone(), body["hash"].clone()),
        (json!("commit"), json!(head))
    );
    // A bare hash names a commit, not a tag.
    let (status, body) = get(app, &format!("/api/v1/catalogs/lake/refs/{head}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["type"].clone(), body["hash"].clone()),
        (json!("commit"), json!(head))
    );

    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": "main", "type": "branch"}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "AlreadyExistsException",
    );
    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": "v1", "type": "branch"}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "AlreadyExistsException",
    );
    let (status, body) = get(app, "/api/v1/catalogs/lake/refs/nope").await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    let (status, body) = get(app, "/api/v1/catalogs/nope/refs/main").await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchCatalogException",
    );
    assert_eq!(ref_hash(app, "main").await, head);

    // The time of a ref is RFC 3339, and pasted back into `main#<time>` it names the same commit.
    let (_, body) = get(app, "/api/v1/catalogs/lake/refs/main").await;
    let time = body["time"].as_str().unwrap().to_owned();
    assert!(time.ends_with('Z') && time.contains('T'), "{time}");
    let (status, body) = get(app, &format!("/api/v1/catalogs/lake/refs/main%23{time}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["hash"], json!(head));
}

#[tokio::test]
async fn merges_report_conflicts_and_dry_runs_without_moving() {
    let env = env().await;
    let app = &env.app;
    create_table(app, "lake", "t").await;
    create_ref(app, "dev", "branch").await;
    let set = |value: &str| json!([{"action": "set-properties", "updates": {"owner": value}}]);
    let (status, body) = commit(app, &table_uri("t"), json!([]), set("main")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = commit(app, &table_uri("t@dev"), json!([]), set("dev")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);

    for dry_run in [true, false] {
        let (status, body) = post(
            app,
            "/api/v1/catalogs/lake/merge",
            json!({"source": "dev", "dry-run": dry_run}),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["result"], "conflicted");
        assert_eq!(body["error"]["type"], "MergeConflictException");
        let conflicts = body["conflicts"].as_array().unwrap();
        assert_eq!(conflicts.len(), 1, "{body}");
        assert_eq!(conflicts[0]["key"], json!(["db", "t"]));
        assert_eq!(conflicts[0]["kind"], "both-modified");
        assert_eq!(body["target-head"], json!(main));
        assert_eq!(ref_hash(app, "main").await, main, "dry-run {dry_run}");
        assert_eq!(ref_hash(app, "dev").await, dev, "dry-run {dry_run}");
        let (_, t) = get(app, &table_uri("t")).await;
        assert_eq!(t["metadata"]["properties"], json!({"owner": "main"}));
    }

    // A clean merge as a dry run reports the change and moves nothing; then for real.
    create_ref(app, "feature", "branch").await;
    create_table(app, "lake", "x@feature").await;
    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/merge",
        json!({"source": "feature", "dry-run": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["dry-run"], true);
    let keys: Vec<&Value> = body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["key"])
        .collect();
    assert_eq!(keys, [&json!(["db", "x"])], "{body}");
    assert_eq!(body["changes"][0]["before"], Value::Null);
    assert!(
        body["changes"][0]["after"]["metadata-location"].is_string(),
        "{body}"
    );
    assert_eq!(ref_hash(app, "main").await, main);
    let (status, _) = get(app, &table_uri("x")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/merge",
        json!({"source": "feature"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["dry-run"], false);
    let moved = ref_hash(app, "main").await;
    assert_ne!(moved, main);
    assert_eq!(body["target-head"], json!(moved));
    let (status, _) = get(app, &table_uri("x")).await;
    assert_eq!(status, StatusCode::OK);
    let (_, t) = get(app, &table_uri("t")).await;
    assert_eq!(t["metadata"]["properties"], json!({"owner": "main"}));
}
