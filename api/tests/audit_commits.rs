#![allow(clippy::unwrap_used)]
//! A change's audit event is written by the commit that makes the change: one event per
//! request, naming the commit, dated by it, in the same durable write; requests that change
//! nothing, or fail, are audited by the route layer with their status.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::{TestApp, call};
use pangolin_backend_memory::MemoryBackend;
use pangolin_records::{AuditEvent, AuditLog, AuditQuery, AuditRecord};
use pangolin_store::BackendError;
use serde_json::{Value, json};
use tokio::sync::watch;

async fn audit_events(app: &axum::Router) -> Vec<Value> {
    let (status, page) = call(app, Method::GET, "/api/v1/audit?page-size=1000", None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.get("next-page-token").is_none(), "one page is enough");
    page["events"].as_array().unwrap().clone()
}

async fn head(app: &axum::Router) -> String {
    let (status, body) = call(app, Method::GET, "/api/v1/catalogs/lake/refs/main", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["hash"].as_str().unwrap().to_owned()
}

async fn main_log(app: &axum::Router) -> Vec<String> {
    let uri = "/api/v1/catalogs/lake/log?page-size=1000";
    let (status, body) = call(app, Method::GET, uri, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["hash"].as_str().unwrap().to_owned())
        .collect()
}

/// The audit events of refused namespace creations.
fn failed_creates(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["action"] == "namespace.create" && e["outcome"] == "failed")
        .collect()
}

/// Creates namespace `db`; the answer's status.
async fn create_namespace(app: &axum::Router) -> StatusCode {
    let body = json!({"namespace": ["db"]});
    call(app, Method::POST, "/v1/lake/namespaces", Some(body))
        .await
        .0
}

fn schema() -> Value {
    json!({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": true, "type": "long"}
    ]})
}

#[tokio::test]
async fn a_change_is_audited_once_by_its_own_commit() {
    let env = TestApp::new().await;
    assert_eq!(create_namespace(&env.app).await, StatusCode::OK);
    let events = audit_events(&env.app).await;
    let created: Vec<&Value> = events
        .iter()
        .filter(|e| e["action"] == "namespace.create")
        .collect();
    assert_eq!(created.len(), 1, "{events:?}");
    let event = created[0];
    assert_eq!(event["outcome"], "success");
    assert_eq!(event["details"]["commit"], head(&env.app).await.as_str());
    assert_eq!(event["details"]["path"], "/v1/lake/namespaces");
    assert!(
        event["details"].get("status").is_none(),
        "written before the answer, it does not guess its status: {event}"
    );
}

#[tokio::test]
async fn a_refused_change_is_audited_by_the_route_with_its_status() {
    let env = TestApp::new().await;
    assert_eq!(create_namespace(&env.app).await, StatusCode::OK);
    let before = head(&env.app).await;
    // The same namespace again: refused, nothing committed.
    assert_eq!(create_namespace(&env.app).await, StatusCode::CONFLICT);
    assert_eq!(head(&env.app).await, before);
    let events = audit_events(&env.app).await;
    let failed = failed_creates(&events);
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_eq!(failed[0]["details"]["status"], "409");
    assert!(failed[0]["details"].get("commit").is_none());
}

/// An audit log whose appends wait while the test holds its gate shut, and which notes a
/// query made while an append waits.
struct Gated {
    inner: Arc<MemoryBackend>,
    open: watch::Receiver<bool>,
    waiting: AtomicUsize,
    read_too_early: AtomicBool,
}

impl Gated {
    async fn pass(&self) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        self.open.clone().wait_for(|open| *open).await.unwrap();
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl AuditLog for Gated {
    async fn append(&self, event: AuditEvent) -> Result<AuditRecord, BackendError> {
        self.pass().await;
        self.inner.append(event).await
    }

    async fn append_many(&self, events: Vec<AuditEvent>) -> Result<Vec<AuditRecord>, BackendError> {
        self.pass().await;
        self.inner.append_many(events).await
    }

    async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, BackendError> {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.read_too_early.store(true, Ordering::SeqCst);
        }
        self.inner.query(query).await
    }

    async fn range(&self, from: u64, to: u64) -> Result<Vec<AuditRecord>, BackendError> {
        self.inner.range(from, to).await
    }
}

/// A refused request changed nothing: its answer does not wait for its event to be stored
/// (a writer refused under contention must not answer later than the one that beat it), yet
/// a reader of the log finds the event.
#[tokio::test]
async fn a_refusal_is_answered_before_its_event_is_stored_and_read_after() {
    let store = Arc::new(MemoryBackend::new());
    let (gate, open) = watch::channel(true);
    let audit = Arc::new(Gated {
        inner: store.clone(),
        open,
        waiting: AtomicUsize::new(0),
        read_too_early: AtomicBool::new(false),
    });
    let env = TestApp::with_audit(store, audit.clone()).await;
    assert_eq!(create_namespace(&env.app).await, StatusCode::OK);
    gate.send_replace(false);
    // Only guards against a hang: no audit append can finish while the gate is shut.
    let refused = tokio::time::timeout(Duration::from_secs(60), create_namespace(&env.app))
        .await
        .expect("the refusal waited for its audit event to be stored");
    assert_eq!(refused, StatusCode::CONFLICT);
    let app = env.app.clone();
    let reader = tokio::spawn(async move { audit_events(&app).await });
    // Lets the reader go as far as it can while the event still waits at the gate.
    tokio::time::sleep(Duration::from_millis(50)).await;
    gate.send_replace(true);
    let events = reader.await.unwrap();
    assert!(
        !audit.read_too_early.load(Ordering::SeqCst),
        "the log was read while an answered refusal's event was still queued"
    );
    let failed = failed_creates(&events);
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_eq!(failed[0]["details"]["status"], "409");
}

/// Writers racing on one branch are grouped into shared publishes; each landed commit still
/// carries exactly the event of the request that made it, and the chain stays whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_commits_each_write_their_own_event() {
    let env = TestApp::new().await;
    assert_eq!(create_namespace(&env.app).await, StatusCode::OK);
    let mut writers = Vec::new();
    for i in 0..24 {
        let app = env.app.clone();
        writers.push(tokio::spawn(async move {
            let (status, body) = call(
                &app,
                Method::POST,
                "/v1/lake/namespaces/db/tables",
                Some(json!({"name": format!("t{i}"), "schema": schema()})),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let events = audit_events(&env.app).await;
    let created: Vec<&Value> = events
        .iter()
        .filter(|e| e["action"] == "table.create")
        .collect();
    assert_eq!(created.len(), 24, "{events:?}");
    let audited: BTreeSet<&str> = created
        .iter()
        .map(|e| e["details"]["commit"].as_str().unwrap())
        .collect();
    assert_eq!(audited.len(), 24, "one commit per request");
    let log: BTreeSet<String> = main_log(&env.app).await.into_iter().collect();
    for commit in &audited {
        assert!(log.contains(*commit), "{commit} is not in main's history");
    }
    let tables: BTreeSet<&str> = created
        .iter()
        .map(|e| e["details"]["path"].as_str().unwrap())
        .collect();
    assert_eq!(tables.len(), 1, "all through one route: {tables:?}");
    let (status, report) = call(&env.app, Method::GET, "/api/v1/audit/verify", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(report["intact"], true, "{report}");
}
