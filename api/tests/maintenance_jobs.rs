#![allow(clippy::unwrap_used)]
//! The orphan-file sweep and the object collection as jobs: started by one request (202),
//! followed by others until they end, their results and audit events; bad requests are
//! refused before anything starts.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use axum::http::{Method, StatusCode};
use common::{TestApp, call};
use pangolin_catalog::CommitMeta;
use pangolin_catalog::tenancy::{SecretKey, Tenancy};
use pangolin_records::{ExpectedVersion, RecordKey, RecordStore};
use pangolin_refs::{RefName, Reference};
use pangolin_store::ContentKey;
use serde_json::{Value, json};

const SWEEP: &str = "/api/v1/catalogs/lake/maintenance/remove-orphan-files";

/// Creates table `db.t`; its location on disk.
async fn table(app: &axum::Router) -> PathBuf {
    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let schema = json!({"type": "struct", "fields": [
        {"id": 1, "name": "id", "required": false, "type": "long"}]});
    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/namespaces/db/tables",
        Some(json!({"name": "t", "schema": schema})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let location = body["metadata"]["location"].as_str().unwrap();
    PathBuf::from(location.strip_prefix("file://").unwrap())
}

/// Sets every file under `dir` two hours back.
fn backdate(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            backdate(&path);
        } else {
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(7200))
                .unwrap();
        }
    }
}

/// Starts a sweep with `body`; the job as started.
async fn start(app: &axum::Router, body: Value) -> Value {
    let (status, job) = call(app, Method::POST, SWEEP, Some(body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    assert_eq!(job["state"], "running");
    assert_eq!(job["kind"], "remove-orphan-files");
    job
}

/// Follows job `id` until it ends.
async fn ended(app: &axum::Router, id: &str) -> Value {
    let uri = format!("/api/v1/catalogs/lake/maintenance/jobs/{id}");
    for _ in 0..500 {
        let (status, job) = call(app, Method::GET, &uri, None).await;
        assert_eq!(status, StatusCode::OK, "{job}");
        if job["state"] != "running" {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("job {id} did not end");
}

#[tokio::test]
async fn a_sweep_job_reports_then_deletes_the_orphans() {
    let test = TestApp::new().await;
    let app = &test.app;
    let location = table(app).await;
    let orphan = location.join("data/failed-write.parquet");
    std::fs::create_dir_all(orphan.parent().unwrap()).unwrap();
    std::fs::write(&orphan, b"orphan").unwrap();
    backdate(test.dir.path());

    let dry = start(app, json!({"dry-run": true, "grace-period-ms": 3_600_000})).await;
    assert_eq!(dry["dry-run"], true);
    let dry = ended(app, dry["id"].as_str().unwrap()).await;
    assert_eq!(dry["state"], "succeeded", "{dry}");
    let result = &dry["result"];
    assert_eq!(result["orphan-files"], 1, "{dry}");
    assert_eq!(result["orphan-bytes"], 6);
    assert_eq!(result["deleted"], 0);
    assert_eq!(result["directories-swept"], 1);
    assert!(
        result["orphans"][0]["location"]
            .as_str()
            .unwrap()
            .ends_with("/data/failed-write.parquet"),
        "{dry}"
    );
    assert_eq!(dry["progress"]["phase"], "done");
    assert!(dry["finished-at"].is_string());
    assert!(orphan.exists(), "a dry run deletes nothing");

    let job = start(app, json!({})).await;
    let job = ended(app, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded");
    assert_eq!(
        job["result"]["orphan-files"], 0,
        "3 days of grace by default: {job}"
    );
    assert!(orphan.exists());

    let job = start(app, json!({"grace-period-ms": 3_600_000})).await;
    let job = ended(app, job["id"].as_str().unwrap()).await;
    assert_eq!(job["result"]["deleted"], 1, "{job}");
    assert_eq!(job["progress"]["deleted"], 1);
    assert!(!orphan.exists());
    let (status, _) = call(app, Method::GET, "/v1/lake/namespaces/db/tables/t", None).await;
    assert_eq!(status, StatusCode::OK, "the table's own files are kept");

    let (status, list) = call(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/maintenance/jobs?pageSize=2",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let jobs = list["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["id"], dry["id"], "oldest first");
    let token = list["next-page-token"].as_str().unwrap();
    let (_, rest) = call(
        app,
        Method::GET,
        &format!("/api/v1/catalogs/lake/maintenance/jobs?pageToken={token}"),
        None,
    )
    .await;
    assert_eq!(rest["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(rest["jobs"][0]["id"], job["id"]);
    assert!(rest.get("next-page-token").is_none());

    let (_, audit) = call(app, Method::GET, "/api/v1/audit?page-size=1000", None).await;
    let finished: Vec<&Value> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "catalog.remove-orphan-files.finished")
        .collect();
    assert_eq!(finished.len(), 3, "{audit}");
    assert!(
        finished
            .iter()
            .any(|e| e["details"]["deleted"] == "1" && e["details"]["job"] == job["id"]),
        "{finished:?}"
    );
}

/// A catalog of another tenant whose warehouse is the same folder registered the table: the
/// sweep walks its history too and leaves the table's folder alone.
#[tokio::test]
async fn a_sweep_job_leaves_alone_what_another_catalog_on_the_warehouse_keeps() {
    let test = TestApp::new().await;
    let app = &test.app;
    let location = table(app).await;
    let stray = location.join("data/stray.parquet");
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, b"stray").unwrap();
    let (_, loaded) = call(app, Method::GET, "/v1/lake/namespaces/db/tables/t", None).await;
    let metadata = loaded["metadata-location"].as_str().unwrap().to_owned();

    let tenancy = Tenancy::new(
        test.store.clone(),
        test.cache.clone(),
        SecretKey::generate(),
    );
    common::add_catalog(&tenancy, "beta", "other", &test.root()).await;
    let other = tenancy.open_catalog("beta", "other").await.unwrap();
    let main = Reference::branch(RefName::new("main").unwrap());
    let meta = CommitMeta {
        principal: "bea".into(),
        message: "register".into(),
        properties: Default::default(),
    };
    let db = ContentKey::new(["db"]).unwrap();
    other
        .create_namespace(&main, &db, Default::default(), &meta)
        .await
        .unwrap();
    other
        .register_table(
            &main,
            &ContentKey::new(["db", "t"]).unwrap(),
            &metadata,
            false,
            &meta,
        )
        .await
        .unwrap();
    backdate(test.dir.path());

    let job = start(app, json!({"grace-period-ms": 3_600_000})).await;
    let job = ended(app, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let result = &job["result"];
    assert_eq!(result["other-catalogs"], 1, "{job}");
    assert_eq!(result["orphan-files"], 0, "{job}");
    assert_eq!(result["directories-swept"], 0, "{job}");
    let reason = result["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("beta/other"), "{reason}");
    assert!(stray.exists());
}

#[tokio::test]
async fn bad_sweep_requests_are_refused_before_anything_starts() {
    let test = TestApp::new().await;
    let app = &test.app;
    for (body, says) in [
        (json!({"grace-period-ms": 1000}), "at least"),
        (json!({"limit": 1_000_000}), "at most"),
        (json!({"dry-run": "yes"}), "dry-run"),
        (json!({"older-than": "2026-01-01T00:00:00Z"}), "older-than"),
    ] {
        let (status, error) = call(app, Method::POST, SWEEP, Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    let (status, _) = call(
        app,
        Method::POST,
        "/api/v1/catalogs/nope/maintenance/remove-orphan-files",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = call(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/maintenance/jobs",
        None,
    )
    .await;
    assert_eq!(list["jobs"], json!([]), "nothing started");
    for id in ["1700000000000-abcdef12", "..%2F..%2Fx", "not-a-job"] {
        let uri = format!("/api/v1/catalogs/lake/maintenance/jobs/{id}");
        let (status, error) = call(app, Method::GET, &uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{id}: {error}");
        assert_eq!(error["error"]["type"], "NoSuchJobException");
    }
    let (status, _) = call(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/maintenance/jobs?pageToken=bogus",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

const COLLECT: &str = "/api/v1/catalogs/lake/maintenance/collect-objects";

/// Starts an object collection with `body`; the job once it ended.
async fn collect(app: &axum::Router, body: Value) -> Value {
    let (status, job) = call(app, Method::POST, COLLECT, Some(body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    assert_eq!(job["kind"], "collect-objects");
    let job = ended(app, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    job
}

#[tokio::test]
async fn an_object_collection_job_keeps_what_history_may_read() {
    let test = TestApp::new().await;
    let app = &test.app;
    table(app).await;
    let (status, body) = call(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/refs",
        Some(json!({"name": "dev"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake@dev/namespaces",
        Some(json!({"namespace": ["scratch"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, dev) = call(app, Method::GET, "/api/v1/catalogs/lake/refs/dev", None).await;
    let dev = dev["hash"].as_str().unwrap().to_owned();
    let (status, body) = call(app, Method::DELETE, "/api/v1/catalogs/lake/refs/dev", None).await;
    assert!(status.is_success(), "{body}");

    // No retention policy: the deleted branch's commit is kept (its hash still reads).
    let dry = collect(app, json!({"dry-run": true})).await;
    let result = &dry["result"];
    assert_eq!(result["retained-commits"], 1, "{dry}");
    assert_eq!(result["unreachable-objects"], 0);
    assert!(result.get("history-cutoff").is_none());
    assert!(result["objects"].as_u64().unwrap() > 3, "{dry}");
    assert_eq!(dry["progress"]["phase"], "done");
    assert_eq!(
        dry["progress"]["objects-listed"], result["objects"],
        "{dry}"
    );
    // An hour's window: the commit is younger, so it stays too.
    let (status, body) = call(
        app,
        Method::PUT,
        "/api/v1/catalogs/lake/retention",
        Some(json!({"history-ms": 3_600_000})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let job = collect(app, json!({})).await;
    assert_eq!(job["result"]["deleted"], 0, "{job}");
    assert!(job["result"]["history-cutoff"].is_string(), "{job}");
    let (status, body) = call(
        app,
        Method::GET,
        &format!("/api/v1/catalogs/lake/log?ref={dev}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (status, error) = call(app, Method::POST, COLLECT, Some(json!({"grace": 1}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    let (_, audit) = call(app, Method::GET, "/api/v1/audit?page-size=1000", None).await;
    let finished = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "catalog.collect-objects.finished")
        .count();
    assert_eq!(finished, 2, "{audit}");
}

/// Writes job `id` as `job` was, but `state` and last heard of at `updated_ms`: a job whose
/// server stopped (a long time ago) or that still runs (now).
async fn fake_job(test: &TestApp, job: &Value, id: &str, state: &str, updated_ms: i64) {
    let mut faked = job.clone();
    faked["id"] = json!(id);
    faked["state"] = json!(state);
    faked["result"] = Value::Null;
    faked["updated-ms"] = json!(updated_ms);
    let key = RecordKey::new(format!("jobs/default/lake/{id}")).unwrap();
    test.store
        .put_record(
            &key,
            ExpectedVersion::Absent,
            serde_json::to_vec(&faked).unwrap().into(),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_sweep_that_stopped_is_resumed_and_nothing_else_is() {
    let test = TestApp::new().await;
    let app = &test.app;
    table(app).await;
    let done = start(app, json!({"dry-run": true})).await;
    let done = ended(app, done["id"].as_str().unwrap()).await;
    let resume = |id: &str| json!({"resume": id, "grace-period-ms": 3_600_000});

    let stopped = "1764770000000-0a1b2c3d";
    fake_job(&test, &done, stopped, "running", 1).await;
    let uri = format!("/api/v1/catalogs/lake/maintenance/jobs/{stopped}");
    let (_, shown) = call(app, Method::GET, &uri, None).await;
    assert_eq!(shown["state"], "abandoned", "{shown}");
    let job = start(app, resume(stopped)).await;
    assert_eq!(job["resumes"], stopped, "{job}");
    let job = ended(app, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["resumes"], stopped);
    assert!(done.get("resumes").is_none(), "{done}");

    // A failed job that resumed a run: resuming it continues that same run.
    let failed = "1764770000001-0a1b2c3d";
    let mut of_run = done.clone();
    of_run["resumes"] = json!(stopped);
    fake_job(&test, &of_run, failed, "failed", 1).await;
    let job = start(app, resume(failed)).await;
    assert_eq!(job["resumes"], stopped, "{job}");
    ended(app, job["id"].as_str().unwrap()).await;

    let running = "1764770000002-0a1b2c3d";
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    fake_job(&test, &done, running, "running", now).await;
    let collected = collect(app, json!({"dry-run": true})).await;
    for (id, status, says) in [
        (running, StatusCode::CONFLICT, "still running"),
        (
            done["id"].as_str().unwrap(),
            StatusCode::CONFLICT,
            "nothing to resume",
        ),
        (
            collected["id"].as_str().unwrap(),
            StatusCode::BAD_REQUEST,
            "only sweeps",
        ),
        ("1700000000000-abcdef12", StatusCode::NOT_FOUND, "no job"),
        ("../x", StatusCode::NOT_FOUND, "no job"),
    ] {
        let (got, error) = call(app, Method::POST, SWEEP, Some(resume(id))).await;
        assert_eq!(got, status, "{id}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{id}: {message}");
    }
}
