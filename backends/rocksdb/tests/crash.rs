//! Crash safety: a writer killed with SIGKILL mid-commit loses no acknowledged commit and
//! leaves every ref on a readable commit (see `pangolin_testkit::crash`).
#![cfg(feature = "rocksdb")]
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use pangolin_backend_rocksdb::RocksBackend;
use pangolin_testkit::crash::{WRITER_ENV, kill_writer_repeatedly, write_forever};

#[tokio::test]
#[ignore = "helper process started by the crash test"]
async fn crash_writer() {
    let path = std::env::var_os(WRITER_ENV).expect("run by the crash test");
    write_forever(Arc::new(RocksBackend::open(path).unwrap())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_writer_loses_no_acknowledged_commit() {
    let path = std::env::temp_dir().join(format!(
        "pangolin-rocksdb-crash-{}",
        uuid::Uuid::new_v4().simple()
    ));
    kill_writer_repeatedly("crash_writer", &path, || async {
        RocksBackend::open(&path).unwrap()
    })
    .await;
}
