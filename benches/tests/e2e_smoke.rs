//! Smoke test of the end-to-end harness: one tiny run (SQLite, four workloads, a fraction of a
//! second each) against the debug server binary, which `cargo test --workspace` builds. Skipped,
//! saying so, when there is no server binary. Asserts only that the harness measured something
//! and that nothing failed or was lost, never timings.

use std::path::PathBuf;

use pangolin_benches::e2e::{self, Options};

/// `PANGOLIN_BIN`, else the `pangolin` next to this test's directory (`target/debug`).
fn server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PANGOLIN_BIN") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let debug = exe.parent()?.parent()?;
    Some(debug.join("pangolin")).filter(|p| p.is_file())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_run_measures_the_real_server() {
    let Some(binary) = server_binary() else {
        eprintln!("skipped: no pangolin binary (cargo build -p pangolin, or set PANGOLIN_BIN)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::smoke(&[
        "load-hot",
        "load-appended",
        "commit-8-one-table",
        "create-table",
    ]);
    options.pangolin_bin = Some(binary);
    options.out_dir = Some(dir.path().to_owned());

    let report = e2e::run(&options).await.unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let connections: Vec<usize> = report.baseline.iter().map(|b| b.connections).collect();
    assert_eq!(
        connections,
        [1, 8, 16, 32],
        "the baseline at every count used"
    );
    let workloads: Vec<(&str, usize)> = report
        .results
        .iter()
        .map(|m| (m.workload.as_str(), m.connections))
        .collect();
    assert_eq!(
        workloads,
        [
            ("load-hot", 16),
            ("load-hot", 32),
            ("load-appended", 16),
            ("commit-8-one-table", 8),
            ("create-table", 1),
            ("create-table", 8)
        ]
    );
    for m in &report.results {
        assert!(m.figures.ops > 0, "{m:?}");
        assert_eq!(m.figures.errors, 0, "{m:?}");
        assert!(m.figures.p50_ms <= m.figures.p99_ms, "{m:?}");
        assert!(m.vs_baseline.is_some(), "{m:?}");
    }
    let commits = &report.results[3];
    assert_eq!(commits.lost, Some(0), "no acknowledged commit lost");
    assert!(commits.figures.retries >= commits.figures.conflicts);
    for creates in &report.results[4..] {
        assert_eq!(
            creates.lost,
            Some(0),
            "no acknowledged create lost: {creates:?}"
        );
    }

    let json = report.write_json(dir.path()).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(written["results"].as_array().unwrap().len(), 6);
    assert_eq!(written["results"][0]["backend"], "sqlite");
}

/// The same against two servers sharing one PostgreSQL database, requests spread over both:
/// writers on one branch through both servers lose nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_run_spreads_over_replicas_on_postgres() {
    let Some(binary) = server_binary() else {
        eprintln!("skipped: no pangolin binary (cargo build -p pangolin, or set PANGOLIN_BIN)");
        return;
    };
    if std::env::var_os("PANGOLIN_SKIP_POSTGRES").is_some() {
        eprintln!("skipped: PANGOLIN_SKIP_POSTGRES is set");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::smoke(&["commit-8-tables", "commit-8-one-table"]);
    options.backends = vec![e2e::backend::BackendKind::Postgres];
    options.replicas = 2;
    options.pangolin_bin = Some(binary);
    options.out_dir = Some(dir.path().to_owned());
    if let Ok(url) = std::env::var("PANGOLIN_TEST_POSTGRES_URL") {
        options.postgres_url = url;
    }

    let report = e2e::run(&options).await.unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.results.len(), 2, "{:?}", report.results);
    for m in &report.results {
        assert_eq!(m.backend, "postgres-2-replicas");
        assert!(m.figures.ops > 0, "{m:?}");
        assert_eq!(m.figures.errors, 0, "{m:?}");
        assert_eq!(m.lost, Some(0), "no acknowledged commit lost: {m:?}");
    }
}
