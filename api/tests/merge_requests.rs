//! Merge requests over HTTP: a protected branch refuses direct writes and merges, a request
//! lands once its checks passed on the merge commit it lands, a failing check blocks it until
//! an audited override, a moved target makes the checks run again, webhook checks are signed
//! and decide, and bad input is refused.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::receiver::{Mode, Receiver};
use common::{TestApp, call, create_namespace};
use pangolin_catalog::webhooks::SigningSecret;
use serde_json::{Value, json};

const REQUESTS: &str = "/api/v1/catalogs/lake/merge-requests";
const PROTECTION: &str = "/api/v1/catalogs/lake/protection";

async fn ok(app: &axum::Router, method: Method, uri: &str, body: Option<Value>) -> Value {
    let (status, answer) = call(app, method, uri, body).await;
    assert!(status.is_success(), "{uri}: {status} {answer}");
    answer
}

async fn branch(app: &axum::Router, name: &str) {
    ok(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/refs",
        Some(json!({"name": name, "type": "branch", "from": "main"})),
    )
    .await;
}

async fn head(app: &axum::Router, branch: &str) -> String {
    let answer = ok(
        app,
        Method::GET,
        &format!("/api/v1/catalogs/lake/refs/{branch}"),
        None,
    )
    .await;
    answer["hash"].as_str().unwrap().to_owned()
}

async fn protect(app: &axum::Router, checks: Value) {
    ok(
        app,
        Method::PUT,
        PROTECTION,
        Some(json!({"rules": [{"branch": "main", "checks": checks}]})),
    )
    .await;
}

async fn open_request(app: &axum::Router, source: &str, title: &str) -> u64 {
    let (status, answer) = call(
        app,
        Method::POST,
        REQUESTS,
        Some(json!({"source": source, "title": title})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["state"], "open");
    assert_eq!(answer["target"], "main");
    answer["number"].as_u64().unwrap()
}

#[tokio::test]
async fn a_protected_branch_changes_only_through_requests_whose_checks_passed() {
    let test = TestApp::new().await;
    let app = &test.app;
    branch(app, "dev").await;
    create_namespace(app, "lake%40dev", "sales").await;
    protect(
        app,
        json!([{"kind": "forbid", "types": ["drop-namespace"]}]),
    )
    .await;
    let shown = ok(app, Method::GET, PROTECTION, None).await;
    assert_eq!(shown["protection"]["rules"][0]["branch"], "main");

    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["direct"]})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protected")
    );
    let (status, body) = call(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/merge",
        Some(json!({"source": "dev"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let main_before = head(app, "main").await;
    let number = open_request(app, "dev", "add sales").await;
    let checked = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/checks"),
        None,
    )
    .await;
    let checks = &checked["checks"];
    assert_eq!(checks["verdict"], "passed", "{checked}");
    assert_eq!(checks["target-head"], main_before.as_str());
    assert_eq!(checks["checks"][0]["check"]["kind"], "forbid");
    assert_eq!(head(app, "main").await, main_before, "checks land nothing");

    let merged = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/merge"),
        None,
    )
    .await;
    assert_eq!(merged["state"], "merged");
    assert_eq!(merged["merged"]["commit"], checks["merge-commit"]);
    assert_eq!(
        head(app, "main").await,
        checks["merge-commit"].as_str().unwrap()
    );
    ok(app, Method::GET, "/v1/lake/namespaces/sales", None).await;

    let listed = ok(app, Method::GET, &format!("{REQUESTS}?state=merged"), None).await;
    assert_eq!(listed["merge-requests"][0]["number"], number);
    let open = ok(app, Method::GET, &format!("{REQUESTS}?state=open"), None).await;
    assert_eq!(open["merge-requests"], json!([]));
}

#[tokio::test]
async fn a_failing_check_blocks_the_merge_until_an_audited_override() {
    let test = TestApp::new().await;
    let app = &test.app;
    create_namespace(app, "lake", "legacy").await;
    branch(app, "dev").await;
    ok(
        app,
        Method::DELETE,
        "/v1/lake%40dev/namespaces/legacy",
        None,
    )
    .await;
    protect(
        app,
        json!([{"kind": "forbid", "types": ["drop-namespace"]}]),
    )
    .await;
    let number = open_request(app, "dev", "retire legacy").await;
    let main_before = head(app, "main").await;

    let (status, body) = call(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/merge"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["type"], "ChecksFailedException");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("drop-namespace legacy"), "{message}");
    assert_eq!(head(app, "main").await, main_before);
    let shown = ok(app, Method::GET, &format!("{REQUESTS}/{number}"), None).await;
    assert_eq!(shown["checks"]["verdict"], "failed");
    assert_eq!(shown["checks"]["checks"][0]["passed"], false);

    let merged = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/merge"),
        Some(json!({"override-reason": "legacy is archived elsewhere"})),
    )
    .await;
    assert_eq!(
        merged["merged"]["overridden"],
        "legacy is archived elsewhere"
    );
    assert_ne!(head(app, "main").await, main_before);
    let audit = ok(
        app,
        Method::GET,
        "/api/v1/audit?action=merge-request.override",
        None,
    )
    .await;
    let event = &audit["events"][0];
    assert_eq!(event["details"]["reason"], "legacy is archived elsewhere");
    assert_eq!(event["details"]["merge-request"], number.to_string());
    assert!(
        event["details"]["failed-checks"]
            .as_str()
            .unwrap()
            .contains("drop-namespace")
    );
}

#[tokio::test]
async fn a_target_that_moved_makes_the_merge_run_the_checks_again() {
    let test = TestApp::new().await;
    let app = &test.app;
    branch(app, "one").await;
    branch(app, "two").await;
    create_namespace(app, "lake%40one", "a").await;
    create_namespace(app, "lake%40two", "b").await;
    protect(app, json!([])).await;
    let first = open_request(app, "one", "a").await;
    let second = open_request(app, "two", "b").await;
    let before = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{second}/checks"),
        None,
    )
    .await;
    ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{first}/merge"),
        None,
    )
    .await;
    let moved = head(app, "main").await;
    assert_ne!(before["checks"]["target-head"], moved.as_str());

    let merged = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{second}/merge"),
        None,
    )
    .await;
    assert_eq!(merged["checks"]["target-head"], moved.as_str());
    assert_ne!(
        merged["checks"]["merge-commit"],
        before["checks"]["merge-commit"]
    );
    assert_eq!(
        head(app, "main").await,
        merged["merged"]["commit"].as_str().unwrap()
    );
    ok(app, Method::GET, "/v1/lake/namespaces/a", None).await;
    ok(app, Method::GET, "/v1/lake/namespaces/b", None).await;
}

#[tokio::test]
async fn webhook_checks_are_signed_and_decide() {
    let test = TestApp::new().await;
    let app = &test.app;
    let receiver = Receiver::start(Mode::Accept).await;
    receiver.answer(r#"{"passed": false, "messages": ["row counts look wrong"]}"#);
    let hook = ok(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/webhooks",
        Some(json!({"url": receiver.url, "filter": {"types": ["merge"]}})),
    )
    .await;
    let id = hook["id"].as_str().unwrap();
    let secret = SigningSecret::parse(hook["secret"].as_str().unwrap()).unwrap();
    let (status, body) = call(
        app,
        Method::PUT,
        PROTECTION,
        Some(json!({"rules": [{"branch": "main", "checks": [{"kind": "webhook", "webhook": "nope"}]}]})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    protect(app, json!([{"kind": "webhook", "webhook": id}])).await;
    branch(app, "dev").await;
    create_namespace(app, "lake%40dev", "sales").await;
    let number = open_request(app, "dev", "add sales").await;

    let failed = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/checks"),
        None,
    )
    .await;
    assert_eq!(failed["checks"]["verdict"], "failed");
    assert_eq!(
        failed["checks"]["checks"][0]["messages"],
        json!(["row counts look wrong"])
    );
    let asked = receiver.received();
    assert_eq!(asked.len(), 1);
    let request = &asked[0];
    assert!(secret.verify(
        &request.id,
        request.timestamp,
        &request.body,
        &request.signature
    ));
    let event = request.json();
    assert_eq!(event["type"], "pangolin.merge-request.check");
    assert_eq!(event["subject"], format!("merge-requests/{number}"));
    assert_eq!(
        event["data"]["merge-commit"],
        failed["checks"]["merge-commit"]
    );
    assert_eq!(event["data"]["merge-request"]["source"], "dev");
    assert_eq!(
        event["data"]["changes"],
        json!([{"operation-type": "create-namespace", "identifier": ["sales"]}])
    );

    // An answer that does not say fails the check; a passing one lets the merge through.
    receiver.answer("ok");
    let unclear = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/checks"),
        None,
    )
    .await;
    assert_eq!(unclear["checks"]["verdict"], "failed");
    receiver.set(Mode::AlwaysFail);
    let down = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/checks"),
        None,
    )
    .await;
    assert!(
        down["checks"]["checks"][0]["messages"][0]
            .as_str()
            .unwrap()
            .contains("500")
    );
    receiver.set(Mode::Accept);
    receiver.answer(r#"{"passed": true}"#);
    // A merge on the heads the last (failed) run judged does not ask again: run the checks.
    let (status, _) = call(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/merge"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let passed = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/checks"),
        None,
    )
    .await;
    assert_eq!(passed["checks"]["verdict"], "passed");
    let merged = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/merge"),
        None,
    )
    .await;
    assert_eq!(merged["state"], "merged");
    assert_eq!(merged["checks"]["verdict"], "passed");
}

#[tokio::test]
async fn bad_requests_are_refused_with_reasons() {
    let test = TestApp::new().await;
    let app = &test.app;
    branch(app, "dev").await;
    ok(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/refs",
        Some(json!({"name": "v1", "type": "tag", "from": "main"})),
    )
    .await;
    for (body, expected) in [
        (
            json!({"source": "dev", "title": "x", "extra": 1}),
            "unknown field",
        ),
        (json!({"source": "dev", "title": " "}), "title"),
        (json!({"source": "main", "title": "x"}), "both `main`"),
        (json!({"source": "v1", "title": "x"}), "tag"),
        (json!({"source": "nope", "title": "x"}), "nope"),
        (json!({"source": "a..b", "title": "x"}), "invalid source"),
    ] {
        let (status, answer) = call(app, Method::POST, REQUESTS, Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{body}: {message}");
    }
    let (status, _) = call(app, Method::GET, &format!("{REQUESTS}/42"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(app, Method::GET, &format!("{REQUESTS}?state=done"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(app, Method::GET, &format!("{REQUESTS}?pageToken=zz"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for rules in [
        json!([{"branch": "ma*n"}]),
        json!([{"branch": "main", "checks": [{"kind": "no-lost-rows", "extra": 1}]}]),
        json!([{"branch": "main", "checks": [{"kind": "forbid", "types": ["drop-tables"]}]}]),
    ] {
        let (status, answer) =
            call(app, Method::PUT, PROTECTION, Some(json!({"rules": rules}))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{rules}: {answer}");
    }

    let number = open_request(app, "dev", "nothing yet").await;
    let up_to_date = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/checks"),
        None,
    )
    .await;
    assert_eq!(up_to_date["checks"]["verdict"], "up-to-date");
    let closed = ok(
        app,
        Method::POST,
        &format!("{REQUESTS}/{number}/close"),
        None,
    )
    .await;
    assert_eq!(closed["state"], "closed");
    for action in ["merge", "checks", "close"] {
        let (status, answer) = call(
            app,
            Method::POST,
            &format!("{REQUESTS}/{number}/{action}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "{action}: {answer}");
    }
}
