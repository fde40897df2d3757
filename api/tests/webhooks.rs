//! Webhooks against a local HTTP receiver: deliveries are signed CloudEvents in commit order,
//! retried on failure, dead-lettered after the last attempt, never holding commits back, once
//! per event with two servers delivering; and the subscription API's checks.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::receiver::{Mode, Receiver, quick, until};
use common::{TestApp, call, create_namespace};
use pangolin_api::webhooks::Deliverer;
use pangolin_catalog::webhooks::SigningSecret;
use serde_json::{Value, json};

const HOOKS: &str = "/api/v1/catalogs/lake/webhooks";

async fn subscribe(app: &axum::Router, body: Value) -> Value {
    let (status, answer) = call(app, Method::POST, HOOKS, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer
}

async fn webhook(app: &axum::Router, id: &str) -> Value {
    let (status, body) = call(app, Method::GET, &format!("{HOOKS}/{id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// Waits until the webhook's state satisfies `done`.
async fn until_state(app: &axum::Router, id: &str, what: &str, done: impl Fn(&Value) -> bool) {
    for _ in 0..1200 {
        if done(&webhook(app, id).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("gave up waiting until {what}: {}", webhook(app, id).await);
}

fn namespace_of(received: &common::receiver::Received) -> String {
    received.json()["data"]["identifier"][0]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn deliveries_are_signed_cloudevents_in_commit_order() {
    let app = TestApp::new().await;
    let receiver = Receiver::start(Mode::Accept).await;
    create_namespace(&app.app, "lake", "before").await;
    let created = subscribe(
        &app.app,
        json!({"url": receiver.url, "description": "lake changes"}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let secret = SigningSecret::parse(created["secret"].as_str().unwrap()).unwrap();
    assert_eq!(created["enabled"], true);
    assert_eq!(created["max-attempts"], 10);
    Deliverer::new(app.state.clone(), quick()).spawn();
    let names: Vec<String> = (0..5).map(|i| format!("n{i}")).collect();
    for name in &names {
        create_namespace(&app.app, "lake", name).await;
    }
    until("five deliveries", || receiver.delivered().len() >= 5).await;
    let delivered = receiver.delivered();
    assert_eq!(delivered.len(), 5, "only events after the subscription");
    let mut cursors = Vec::new();
    for (received, name) in delivered.iter().zip(&names) {
        assert_eq!(received.content_type, "application/cloudevents+json");
        assert!(
            secret.verify(
                &received.id,
                received.timestamp,
                &received.body,
                &received.signature
            ),
            "the signature verifies with the secret the subscription answered"
        );
        assert!(!SigningSecret::generate().verify(
            &received.id,
            received.timestamp,
            &received.body,
            &received.signature
        ));
        let event = received.json();
        assert_eq!(event["specversion"], "1.0");
        assert_eq!(event["id"], received.id.as_str());
        assert_eq!(event["data"]["cursor"], received.id.as_str());
        assert_eq!(event["type"], "pangolin.catalog.create-namespace");
        assert_eq!(event["source"], "/tenants/default/catalogs/lake");
        assert_eq!(event["subject"], format!("main/{name}"));
        assert_eq!(event["pangolinwebhook"], id.as_str());
        assert_eq!(namespace_of(received), *name);
        cursors.push(received.id.clone());
    }
    // The cursor ends after the last event's whole ref-log entry.
    let entry = cursors[4].split('.').next().unwrap().to_owned();
    until_state(&app.app, &id, "the cursor is saved", |w| {
        w["delivery"]["after"] == entry.as_str()
    })
    .await;
    let state = webhook(&app.app, &id).await;
    assert_eq!(state["delivery"]["delivered"], 5);
    assert_eq!(state["delivery"]["attempts"], 5);
    let (status, log) = call(
        &app.app,
        Method::GET,
        &format!("{HOOKS}/{id}/attempts?page-size=2"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    assert_eq!(
        log["attempts"][0]["event"],
        cursors[4].as_str(),
        "newest first"
    );
    assert_eq!(log["attempts"][0]["outcome"], "delivered");
    assert_eq!(log["attempts"][0]["status"], 200);
    let token = log["next-page-token"].as_str().unwrap();
    let (_, rest) = call(
        &app.app,
        Method::GET,
        &format!("{HOOKS}/{id}/attempts?page-token={token}"),
        None,
    )
    .await;
    let rest: Vec<_> = rest["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        rest,
        [cursors[2].clone(), cursors[1].clone(), cursors[0].clone()]
    );
}

#[tokio::test]
async fn failed_deliveries_are_retried_with_the_same_id() {
    let app = TestApp::new().await;
    let receiver = Receiver::start(Mode::Fail(2)).await;
    let id = subscribe(&app.app, json!({"url": receiver.url})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    Deliverer::new(app.state.clone(), quick()).spawn();
    create_namespace(&app.app, "lake", "a").await;
    create_namespace(&app.app, "lake", "b").await;
    until("both delivered", || receiver.delivered().len() == 2).await;
    let received = receiver.received();
    let statuses: Vec<u16> = received.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [500, 500, 200, 200]);
    assert_eq!(received[0].id, received[1].id);
    assert_eq!(received[1].id, received[2].id);
    assert_eq!(
        namespace_of(&received[2]),
        "a",
        "in order: `b` waits for `a`"
    );
    assert_eq!(namespace_of(&received[3]), "b");
    until_state(&app.app, &id, "both saved", |w| {
        w["delivery"]["delivered"] == 2
    })
    .await;
    let (_, log) = call(
        &app.app,
        Method::GET,
        &format!("{HOOKS}/{id}/attempts"),
        None,
    )
    .await;
    let outcomes: Vec<_> = log["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|a| {
            (
                a["attempt"].as_u64().unwrap(),
                a["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            (1, "retrying".to_owned()),
            (2, "retrying".to_owned()),
            (3, "delivered".to_owned()),
            (1, "delivered".to_owned())
        ]
    );
    assert!(
        log["attempts"][3]["error"]
            .as_str()
            .unwrap()
            .contains("500"),
        "{log}"
    );
}

#[tokio::test]
async fn events_past_the_last_attempt_become_dead_letters() {
    let app = TestApp::new().await;
    let receiver = Receiver::start(Mode::AlwaysFail).await;
    let id = subscribe(&app.app, json!({"url": receiver.url, "max-attempts": 3})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    Deliverer::new(app.state.clone(), quick()).spawn();
    create_namespace(&app.app, "lake", "lost").await;
    until_state(&app.app, &id, "a dead letter", |w| {
        w["delivery"]["dead-letters"] == 1
    })
    .await;
    assert_eq!(receiver.received().len(), 3, "three attempts");
    receiver.set(Mode::Accept);
    create_namespace(&app.app, "lake", "kept").await;
    until("the next event delivered", || {
        !receiver.delivered().is_empty()
    })
    .await;
    assert_eq!(namespace_of(&receiver.delivered()[0]), "kept");
    let (status, dead) = call(
        &app.app,
        Method::GET,
        &format!("{HOOKS}/{id}/dead-letters"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{dead}");
    let letters = dead["dead-letters"].as_array().unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0]["event"], receiver.received()[0].id.as_str());
    assert_eq!(letters[0]["attempts"], 3);
    assert_eq!(letters[0]["event-type"], "create-namespace");
    assert!(letters[0]["last-error"].as_str().unwrap().contains("500"));
    assert_eq!(letters[0]["body"]["data"]["identifier"], json!(["lost"]));
    until_state(&app.app, &id, "the delivery saved", |w| {
        w["delivery"]["delivered"] == 1
    })
    .await;

    // Sent again by hand: the same body and id, signed afresh; delivered, it is gone.
    let event = letters[0]["event"].as_str().unwrap().to_owned();
    let redeliver = format!("{HOOKS}/{id}/dead-letters/{event}/redeliver");
    receiver.set(Mode::AlwaysFail);
    let (status, failed) = call(&app.app, Method::POST, &redeliver, None).await;
    assert_eq!(status, StatusCode::OK, "{failed}");
    assert_eq!(failed["delivered"], false);
    assert_eq!(failed["status"], 500);
    receiver.set(Mode::Accept);
    let (status, sent) = call(&app.app, Method::POST, &redeliver, None).await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(sent["delivered"], true, "{sent}");
    let again = receiver.delivered().last().cloned().unwrap();
    assert_eq!(again.id, event);
    assert_eq!(namespace_of(&again), "lost");
    let (_, dead) = call(
        &app.app,
        Method::GET,
        &format!("{HOOKS}/{id}/dead-letters"),
        None,
    )
    .await;
    assert_eq!(dead["dead-letters"], json!([]));
    let (status, _) = call(&app.app, Method::POST, &redeliver, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let discard = format!("{HOOKS}/{id}/dead-letters/{event}");
    let (status, _) = call(&app.app, Method::DELETE, &discard, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(
        &app.app,
        Method::DELETE,
        &format!("{HOOKS}/{id}/dead-letters/not-a-cursor"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_hanging_endpoint_holds_back_no_commit() {
    let app = TestApp::new().await;
    let receiver = Receiver::start(Mode::Hang).await;
    subscribe(&app.app, json!({"url": receiver.url})).await;
    let mut settings = quick();
    settings.timeout = Duration::from_secs(120);
    Deliverer::new(app.state.clone(), settings).spawn();
    create_namespace(&app.app, "lake", "first").await;
    until("the first delivery hangs", || receiver.hanging() == 1).await;
    for i in 0..20 {
        create_namespace(&app.app, "lake", &format!("n{i}")).await;
    }
    assert_eq!(
        receiver.hanging(),
        1,
        "the delivery still hangs after 20 commits"
    );
    assert!(receiver.received().is_empty());
    receiver.release();
    until("every event delivered", || receiver.delivered().len() == 21).await;
    let order: Vec<String> = receiver.delivered().iter().map(namespace_of).collect();
    let mut expected = vec!["first".to_owned()];
    expected.extend((0..20).map(|i| format!("n{i}")));
    assert_eq!(order, expected);
}

#[tokio::test]
async fn two_servers_deliver_each_event_once() {
    let app = TestApp::new().await;
    let receiver = Receiver::start(Mode::Accept).await;
    subscribe(&app.app, json!({"url": receiver.url})).await;
    Deliverer::new(app.state.clone(), quick()).spawn();
    Deliverer::new(app.state.clone(), quick()).spawn();
    for i in 0..30 {
        create_namespace(&app.app, "lake", &format!("n{i}")).await;
    }
    until("thirty deliveries", || receiver.delivered().len() >= 30).await;
    // Give a second deliverer time to send anything twice.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut seen: HashMap<String, usize> = HashMap::new();
    for received in receiver.received() {
        *seen.entry(received.id).or_default() += 1;
    }
    assert_eq!(seen.len(), 30);
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
}

#[tokio::test]
async fn filters_pick_the_events_delivered() {
    let app = TestApp::new().await;
    let receiver = Receiver::start(Mode::Accept).await;
    create_namespace(&app.app, "lake", "sales").await;
    create_namespace(&app.app, "lake", "hr").await;
    subscribe(
        &app.app,
        json!({"url": receiver.url, "filter": {"types": ["create-namespace"], "prefix": ["sales"]}}),
    )
    .await;
    Deliverer::new(app.state.clone(), quick()).spawn();
    let (status, body) = call(
        &app.app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["sales", "eu"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    call(
        &app.app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["hr", "eu"]})),
    )
    .await;
    call(
        &app.app,
        Method::POST,
        "/v1/lake/namespaces/sales/properties",
        Some(json!({"updates": {"owner": "ana"}})),
    )
    .await;
    call(
        &app.app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["sales", "us"]})),
    )
    .await;
    until("two deliveries", || receiver.delivered().len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got: Vec<Value> = receiver
        .delivered()
        .iter()
        .map(|r| r.json()["data"]["identifier"].clone())
        .collect();
    assert_eq!(got, [json!(["sales", "eu"]), json!(["sales", "us"])]);
}

#[tokio::test]
async fn from_the_start_disabled_and_enabled_again() {
    let app = TestApp::new().await;
    let receiver = Receiver::start(Mode::Accept).await;
    create_namespace(&app.app, "lake", "old").await;
    let id = subscribe(&app.app, json!({"url": receiver.url, "after": "0"})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = call(
        &app.app,
        Method::PATCH,
        &format!("{HOOKS}/{id}"),
        Some(json!({"enabled": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["enabled"], false);
    assert!(body.get("secret").is_none());
    Deliverer::new(app.state.clone(), quick()).spawn();
    create_namespace(&app.app, "lake", "while-off").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        receiver.received().is_empty(),
        "a disabled webhook receives nothing"
    );
    let (_, body) = call(
        &app.app,
        Method::PATCH,
        &format!("{HOOKS}/{id}"),
        Some(json!({"enabled": true, "secret": "generate"})),
    )
    .await;
    let secret = SigningSecret::parse(body["secret"].as_str().unwrap()).unwrap();
    until("both delivered", || receiver.delivered().len() >= 2).await;
    let delivered = receiver.delivered();
    assert_eq!(
        delivered.iter().map(namespace_of).collect::<Vec<_>>(),
        ["old", "while-off"],
        "from the start, nothing skipped while disabled"
    );
    assert!(
        delivered
            .iter()
            .all(|r| secret.verify(&r.id, r.timestamp, &r.body, &r.signature))
    );
}

#[tokio::test]
async fn the_api_checks_what_it_is_given() {
    let app = TestApp::new().await;
    for (body, says) in [
        (json!({"url": "ftp://x/"}), "scheme `ftp`"),
        (json!({"url": "https://u:p@x/"}), "credentials"),
        (json!({"url": "not a url"}), "invalid url"),
        (
            json!({"url": "https://x/", "filter": {"types": ["table-updated"]}}),
            "unknown event type",
        ),
        (
            json!({"url": "https://x/", "filter": {"ref": "a..b"}}),
            "invalid ref",
        ),
        (
            json!({"url": "https://x/", "max-attempts": 0}),
            "max-attempts",
        ),
        (json!({"url": "https://x/", "secret": "hunter2"}), "whsec_"),
        (
            json!({"url": "https://x/", "after": "soon"}),
            "invalid after",
        ),
        (
            json!({"url": "https://x/", "colour": "red"}),
            "unknown field",
        ),
        (json!({"url": 7}), "invalid type"),
    ] {
        let (status, answer) = call(&app.app, Method::POST, HOOKS, Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    let (status, listed) = call(&app.app, Method::GET, HOOKS, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["webhooks"], json!([]), "nothing was created");

    let ids: Vec<String> = futures::future::join_all((0..3).map(|i| {
        let app = app.app.clone();
        async move {
            subscribe(
                &app,
                json!({"url": format!("https://hooks.example.com/{i}")}),
            )
            .await["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    }))
    .await;
    let (_, page) = call(&app.app, Method::GET, &format!("{HOOKS}?page-size=2"), None).await;
    assert_eq!(page["webhooks"].as_array().unwrap().len(), 2);
    assert!(page["webhooks"][0].get("secret").is_none(), "never listed");
    let token = page["next-page-token"].as_str().unwrap();
    let (_, rest) = call(
        &app.app,
        Method::GET,
        &format!("{HOOKS}?page-token={token}"),
        None,
    )
    .await;
    assert_eq!(rest["webhooks"].as_array().unwrap().len(), 1);
    assert!(rest.get("next-page-token").is_none());

    let (status, answer) = call(
        &app.app,
        Method::PATCH,
        &format!("{HOOKS}/{}", ids[0]),
        Some(json!({"url": "gopher://x/"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let (status, _) = call(
        &app.app,
        Method::DELETE,
        &format!("{HOOKS}/{}", ids[0]),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for (method, path) in [
        (Method::GET, format!("{HOOKS}/{}", ids[0])),
        (Method::DELETE, format!("{HOOKS}/{}", ids[0])),
        (Method::GET, format!("{HOOKS}/{}/attempts", ids[0])),
        (Method::GET, format!("{HOOKS}/{}/dead-letters", ids[0])),
        (Method::GET, format!("{HOOKS}/no-such-id")),
    ] {
        let (status, answer) = call(&app.app, method.clone(), &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["type"], "NoSuchWebhookException");
    }
    let (status, _) = call(
        &app.app,
        Method::GET,
        "/api/v1/catalogs/nope/webhooks",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
