//! Changing branches and tags through the management API: creating them from any reference,
//! moving and deleting them only from the expected hash, and never pointing one at what is not
//! a commit.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::call;
use common::management::{
    API, assert_bad_request, assert_error, call_raw, create_ref, create_table, delete, env, get_ok,
    instant_between, ref_hash, set_namespace_property, table_uri,
};
use common::rest::{get, message, post};
use pangolin_catalog::Catalog;
use serde_json::{Value, json};

async fn put(app: &axum::Router, uri: &str, body: Value) -> (StatusCode, Value) {
    call(app, Method::PUT, uri, Some(body)).await
}

// ---------------------------------------------------------------------------------------------
// Refs: create

#[tokio::test]
async fn refs_are_created_from_any_reference() {
    let env = env().await;
    let app = &env.app;
    let first = ref_hash(app, "main").await;
    let time_at_first = pangolin_catalog::rfc3339(instant_between().await);
    set_namespace_property(app, "lake", "db", "k", "1").await;
    let second = ref_hash(app, "main").await;
    assert_ne!(first, second);

    // `from` defaults to main; `type` to branch.
    let (status, body) = post(app, &format!("{API}/refs"), json!({"name": "plain"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body,
        json!({"name": "plain", "type": "branch", "hash": second})
    );

    for (name, kind, from, expected) in [
        ("from-ref", "branch", "main".to_owned(), &second),
        ("from-tag-source", "tag", "plain".to_owned(), &second),
        ("from-hash", "branch", first.clone(), &first),
        ("from-short-hash", "tag", first[..10].to_owned(), &first),
        ("from-ancestor", "branch", "main~1".to_owned(), &first),
        (
            "from-at-hash",
            "branch",
            format!("main#{}", &first[..12]),
            &first,
        ),
        ("from-time", "tag", format!("main#{time_at_first}"), &first),
        (
            "from-a-tag",
            "branch",
            "from-tag-source".to_owned(),
            &second,
        ),
        ("nested/name.x", "branch", "from-hash".to_owned(), &first),
    ] {
        let hash = create_ref(app, name, kind, Some(&from)).await;
        assert_eq!(&hash, expected, "{name} from {from}");
        let body = get_ok(app, &format!("{API}/refs/{}", name.replace('/', "%2F"))).await;
        assert_eq!(
            (body["type"].as_str().unwrap(), &body["hash"]),
            (kind, &json!(expected))
        );
    }

    // Bad names, sources and types are 400 and create nothing.
    let before = get_ok(app, &format!("{API}/refs")).await;
    for request in [
        json!({"name": "a..b"}),
        json!({"name": "has space"}),
        json!({"name": ""}),
        json!({"name": "x@y"}),
        json!({"name": "x#y"}),
        json!({"name": "x~1"}),
        json!({"name": "/lead"}),
        json!({"name": "end.lock"}),
        json!({"name": "ok", "type": "commit"}),
        json!({"name": "ok", "from": "nope"}),
        json!({"name": "ok", "from": "main~99"}),
        json!({"name": "ok", "from": "main#abc"}),
        json!({"name": "ok", "from": "main#2001-01-01T00:00:00Z"}),
        json!({"name": "ok", "from": "deadbeefdeadbeef"}),
        json!({"name": "ok", "from": "a..b"}),
    ] {
        let (status, body) = post(app, &format!("{API}/refs"), request.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}: {body}");
        assert_bad_request(status, &body);
    }
    assert_eq!(get_ok(app, &format!("{API}/refs")).await, before);

    // A name taken by a branch or a tag, whatever the new ref's type: 409, nothing changes.
    for (name, kind) in [
        ("main", "branch"),
        ("main", "tag"),
        ("from-tag-source", "tag"),
        ("from-tag-source", "branch"),
        ("plain", "tag"),
    ] {
        let (status, body) = post(
            app,
            &format!("{API}/refs"),
            json!({"name": name, "type": kind, "from": first}),
        )
        .await;
        assert_error(
            status,
            &body,
            StatusCode::CONFLICT,
            "AlreadyExistsException",
        );
    }
    assert_eq!(get_ok(app, &format!("{API}/refs")).await, before);
    assert_eq!(ref_hash(app, "main").await, second);
    assert_eq!(ref_hash(app, "plain").await, second);
}

/// A well-formed hash is not looked up when it resolves, so without a check of its own a ref
/// could be created at, or moved to, something that is not a commit (nothing at all, or a
/// tree), which breaks every later read of it; and a log could be asked to start there.
#[tokio::test]
async fn refs_are_never_pointed_at_what_is_not_a_commit() {
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
    let refs = get_ok(app, &format!("{API}/refs")).await;
    for target in [nothing.clone(), tree.clone(), tree[..12].to_owned()] {
        for kind in ["branch", "tag"] {
            let (status, body) = post(
                app,
                &format!("{API}/refs"),
                json!({"name": "x", "type": kind, "from": target}),
            )
            .await;
            assert_bad_request(status, &body);
            assert!(message(&body).contains("not a commit"), "{body}");
        }
        let (status, body) = put(
            app,
            &format!("{API}/refs/main"),
            json!({"to": target, "expected-hash": head}),
        )
        .await;
        assert_bad_request(status, &body);
        let token: String = target.bytes().map(|b| format!("{b:02x}")).collect();
        let (status, body) = get(app, &format!("{API}/log?pageToken={token}")).await;
        assert_bad_request(status, &body);
    }
    assert_eq!(get_ok(app, &format!("{API}/refs")).await, refs);
    get_ok(app, &format!("{API}/entries")).await;
    get_ok(app, "/v1/lake/namespaces/db").await;
}

// ---------------------------------------------------------------------------------------------
// Refs: move

#[tokio::test]
async fn branches_move_only_from_the_expected_hash() {
    let env = env().await;
    let app = &env.app;
    let main = ref_hash(app, "main").await;
    create_ref(app, "b", "branch", None).await;
    create_ref(app, "dev", "branch", None).await;
    create_ref(app, "v1", "tag", None).await;
    create_table(app, "lake@dev", "t").await;
    let dev = ref_hash(app, "dev").await;

    let (status, body) = put(
        app,
        &format!("{API}/refs/b"),
        json!({"to": "dev", "expected-hash": main}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"name": "b", "type": "branch", "hash": dev, "previous-hash": main})
    );
    assert_eq!(ref_hash(app, "b").await, dev);
    let (status, _) = get(app, &table_uri("lake@b", "t")).await;
    assert_eq!(status, StatusCode::OK);

    // Stale: b is at dev now.
    let (status, body) = put(
        app,
        &format!("{API}/refs/b"),
        json!({"to": "main", "expected-hash": main}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "b").await, dev);

    // A hash prefix works as the expected hash; `to` is any expression.
    let body = {
        let (status, body) = put(
            app,
            &format!("{API}/refs/b"),
            json!({"to": "dev~1", "expected-hash": &dev[..12]}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    };
    assert_eq!(
        (&body["hash"], &body["previous-hash"]),
        (&json!(main), &json!(dev))
    );
    assert_eq!(ref_hash(app, "b").await, main);

    // Tags do not move; unknown branches are 404; bad input is 400. Nothing moves.
    let (status, body) = put(
        app,
        &format!("{API}/refs/v1"),
        json!({"to": "dev", "expected-hash": main}),
    )
    .await;
    assert_bad_request(status, &body);
    assert!(message(&body).contains("tag"), "{body}");
    assert_eq!(ref_hash(app, "v1").await, main);
    let (status, body) = put(
        app,
        &format!("{API}/refs/nope"),
        json!({"to": "dev", "expected-hash": main}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchReferenceException",
    );
    let (status, _) = get(app, &format!("{API}/refs/nope")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for (name, request) in [
        ("b", json!({"to": "nope", "expected-hash": main})),
        ("b", json!({"to": "main~99", "expected-hash": main})),
        ("b", json!({"to": "dev", "expected-hash": "xyz"})),
        ("b", json!({"to": "dev", "expected-hash": &main[..6]})),
        (
            "b",
            json!({"to": "dev", "expected-hash": "deadbeefdeadbeef"}),
        ),
        ("b", json!({"to": "dev"})),
        ("b", json!({"expected-hash": main})),
        (
            "b",
            json!({"to": "dev", "expected-hash": main, "force": true}),
        ),
        ("a..b", json!({"to": "dev", "expected-hash": main})),
    ] {
        let (status, body) = put(app, &format!("{API}/refs/{name}"), request).await;
        assert_bad_request(status, &body);
    }
    let (status, body) = call_raw(
        app,
        Method::PUT,
        &format!("{API}/refs/b"),
        Some("{\"to\": ".to_owned()),
    )
    .await;
    assert_bad_request(status, &body);
    assert_eq!(ref_hash(app, "b").await, main);
    assert_eq!(ref_hash(app, "dev").await, dev);
}

// ---------------------------------------------------------------------------------------------
// Refs: delete

#[tokio::test]
async fn refs_are_deleted_only_from_the_expected_hash() {
    let env = env().await;
    let app = &env.app;
    let main = ref_hash(app, "main").await;
    create_ref(app, "dev", "branch", None).await;
    create_ref(app, "gone", "branch", None).await;
    create_ref(app, "v1", "tag", None).await;
    set_namespace_property(app, "lake@dev", "db", "k", "v").await;
    let dev = ref_hash(app, "dev").await;

    // Stale: dev moved since `main` was read.
    let (status, body) = delete(app, &format!("{API}/refs/dev?expected-hash={main}")).await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "dev").await, dev);
    // Right: gone.
    let (status, body) = delete(app, &format!("{API}/refs/dev?expected-hash={dev}")).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, body) = get(app, &format!("{API}/refs/dev")).await;
    assert_bad_request(status, &body);
    // Without an expected hash, and a prefix as the expected hash.
    let (status, _) = delete(app, &format!("{API}/refs/gone")).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = delete(app, &format!("{API}/refs/v1?expected-hash={}", &main[..8])).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let refs = get_ok(app, &format!("{API}/refs")).await;
    assert_eq!(
        refs["refs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["name"])
            .collect::<Vec<_>>(),
        [&json!("main")]
    );

    // The default branch stays, with or without an expected hash.
    for uri in [
        format!("{API}/refs/main"),
        format!("{API}/refs/main?expected-hash={main}"),
    ] {
        let (status, body) = delete(app, &uri).await;
        assert_bad_request(status, &body);
        assert!(message(&body).contains("main"), "{body}");
    }
    assert_eq!(ref_hash(app, "main").await, main);

    // Unknown refs (also one just deleted) are 404; bad input is 400.
    for name in ["nope", "dev", "v1"] {
        let (status, body) = delete(app, &format!("{API}/refs/{name}")).await;
        assert_error(
            status,
            &body,
            StatusCode::NOT_FOUND,
            "NoSuchReferenceException",
        );
    }
    create_ref(app, "keep", "branch", None).await;
    for uri in [
        format!("{API}/refs/keep?expected-hash=xyz"),
        format!("{API}/refs/keep?expected-hash=abc"),
        format!("{API}/refs/a..b"),
    ] {
        let (status, body) = delete(app, &uri).await;
        assert_bad_request(status, &body);
    }
    assert_eq!(ref_hash(app, "keep").await, main);
}
