//! Every case of the shared corpus of Iceberg metadata (`tests/reference/corpus`) through the
//! router: each refused case answers 400 `BadRequestException` with a message naming the field
//! and the rule, and leaves the catalog's commit log and the warehouse as they were; each
//! accepted case is accepted. The same corpus runs against the Java reference implementation
//! and the real binary in the Spark suite.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use axum::http::{Method, StatusCode};
use common::{TestApp, call};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    kind: String,
    base: Option<Value>,
    request: Value,
    expect: Expect,
}

#[derive(Debug, Deserialize)]
struct Expect {
    outcome: String,
    message: Option<String>,
    /// For refusals that are not a 400 `BadRequestException` (a failed requirement is 409).
    code: Option<u16>,
    #[serde(rename = "type")]
    error_type: Option<String>,
}

fn corpus() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/reference/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            serde_json::from_str::<Vec<Case>>(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        })
        .collect()
}

/// Every file under the warehouse, so a refusal can be shown to have written nothing.
fn files(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.insert(path);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, &mut out);
    out
}

async fn head(app: &axum::Router) -> Value {
    let (status, body) = call(app, Method::GET, "/api/v1/catalogs/lake/refs/main", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["hash"].clone()
}

/// Writes metadata as a file of the warehouse at `dir`, with its location moved there, and
/// returns the file's location.
fn write_metadata(app: &TestApp, dir: &str, mut metadata: Value) -> String {
    let location = format!("{}/{dir}", app.root());
    if let Some(map) = metadata.as_object_mut() {
        map.insert("location".into(), location.clone().into());
    }
    let folder = app.dir.path().join(dir).join("metadata");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("00000-base.metadata.json"),
        serde_json::to_vec(&metadata).unwrap(),
    )
    .unwrap();
    format!("{location}/metadata/00000-base.metadata.json")
}

/// Runs one case; `Err` says how its outcome differs from what the corpus expects.
async fn run(app: &TestApp, index: usize, case: &Case) -> Result<(), String> {
    let ns = format!("c{index}");
    let base_uri = format!("/v1/lake/namespaces/{ns}");
    let (status, body) = call(
        &app.app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": [ns]})),
    )
    .await;
    if status != StatusCode::OK {
        return Err(format!("creating the namespace: {status} {body}"));
    }
    let (register, commit) = match case.kind.as_str() {
        "update-table" | "register-table" => ("register", "tables"),
        _ => ("register-view", "views"),
    };
    if let Some(base) = &case.base {
        let location = write_metadata(app, &format!("{ns}/t"), base.clone());
        let (status, body) = call(
            &app.app,
            Method::POST,
            &format!("{base_uri}/{register}"),
            Some(json!({"name": "t", "metadata-location": location})),
        )
        .await;
        if status != StatusCode::OK {
            return Err(format!("registering the base: {status} {body}"));
        }
    }
    let register_location = (case.kind == "register-table")
        .then(|| write_metadata(app, &format!("{ns}/r"), case.request.clone()));
    let (head_before, files_before) = (head(&app.app).await, files(app.dir.path()));
    let (uri, body) = match case.kind.as_str() {
        "create-table" => (format!("{base_uri}/tables"), case.request.clone()),
        "create-view" => (format!("{base_uri}/views"), case.request.clone()),
        "update-table" | "update-view" => (format!("{base_uri}/{commit}/t"), case.request.clone()),
        "register-table" => (
            format!("{base_uri}/register"),
            json!({"name": "r", "metadata-location": register_location}),
        ),
        other => return Err(format!("unknown kind `{other}`")),
    };
    let (status, answer) = call(&app.app, Method::POST, &uri, Some(body)).await;
    match case.expect.outcome.as_str() {
        "accepted" if status == StatusCode::OK => Ok(()),
        "accepted" => Err(format!("expected acceptance, got {status} {answer}")),
        "refused" => {
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            let expected = case.expect.message.as_deref().unwrap_or_default();
            let code = case.expect.code.unwrap_or(400);
            let error_type = case
                .expect
                .error_type
                .as_deref()
                .unwrap_or("BadRequestException");
            if status.as_u16() != code
                || answer["error"]["type"] != error_type
                || answer["error"]["code"] != code
            {
                return Err(format!(
                    "expected a {code} {error_type}, got {status} {answer}"
                ));
            }
            if !message.contains(expected) {
                return Err(format!("message `{message}` does not contain `{expected}`"));
            }
            if head(&app.app).await != head_before {
                return Err("a refused request moved `main`".to_owned());
            }
            if files(app.dir.path()) != files_before {
                return Err("a refused request wrote to the warehouse".to_owned());
            }
            Ok(())
        }
        other => Err(format!("unknown outcome `{other}`")),
    }
}

#[tokio::test]
async fn every_corpus_case_has_the_expected_outcome_and_a_refusal_changes_nothing() {
    let cases = corpus();
    let refused = cases
        .iter()
        .filter(|c| c.expect.outcome == "refused")
        .count();
    assert!(
        refused >= 80,
        "the corpus holds only {refused} invalid inputs"
    );
    let kinds: BTreeSet<&str> = cases.iter().map(|c| c.kind.as_str()).collect();
    for kind in [
        "create-table",
        "update-table",
        "register-table",
        "create-view",
        "update-view",
    ] {
        assert!(kinds.contains(kind), "no case of kind {kind}");
    }
    let app = TestApp::new().await;
    let mut failures = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        if let Err(why) = run(&app, index, case).await {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
