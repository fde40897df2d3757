//! Table commits and table creation through the Iceberg REST API.
//!
//! A commit appends a snapshot as an engine does: `add-snapshot` and `set-snapshot-ref main`,
//! required to land on the snapshot the writer last saw (`assert-ref-snapshot-id`). Its
//! manifest list points at a file that does not exist (the server never reads it). Snapshots
//! older than the last [`KEEP_SNAPSHOTS`] are removed in the same commit, as snapshot
//! expiry would, so that the metadata stays the same size however long the run. A `409`
//! (another writer got there first) reloads the table and retries; the retries are counted.
//!
//! Nothing is lost: every acknowledged commit raised the table's `last-sequence-number` by
//! one, so after the run each table's number must be its starting number plus the commits
//! acknowledged on it.

use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::{Context, bail};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::super::api::{Api, ICEBERG, table_path};
use super::super::driver::{Op, Worker, drive};
use super::super::fixture::{self, BENCH, MADE};
use super::super::stats::Basis;
use super::{Env, Sample, unique};

/// Snapshots a table keeps (older ones are removed by the writer's next commit).
pub(super) const KEEP_SNAPSHOTS: usize = 10;

/// A writer that keeps losing gives up after this many attempts (the op fails).
const MAX_ATTEMPTS: u32 = 1_000;

/// Which tables the writers write.
#[derive(Debug, Clone, Copy)]
pub(super) enum Tables {
    /// Table `one`, whatever the number of writers.
    One,
    /// Writer `w` writes table `w<w>`.
    PerWriter,
    /// All writers write table `shared`.
    Shared,
}

/// Snapshot ids unique in this process, so in every table.
fn next_snapshot_id() -> i64 {
    static NEXT: AtomicI64 = AtomicI64::new(1_000_000);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What a writer needs to know of the table to commit on top of it.
#[derive(Debug, Clone)]
struct TableState {
    main: Option<i64>,
    last_sequence: i64,
    snapshots: Vec<i64>,
}

fn table_state(metadata: &Value) -> anyhow::Result<TableState> {
    if !metadata.is_object() {
        bail!("the answer has no table metadata");
    }
    let main = metadata["refs"]["main"]["snapshot-id"]
        .as_i64()
        .or_else(|| metadata["current-snapshot-id"].as_i64())
        .filter(|id| *id >= 0);
    let last_sequence = metadata["last-sequence-number"].as_i64().unwrap_or(0);
    let snapshots = metadata["snapshots"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|s| s["snapshot-id"].as_i64())
                .collect()
        })
        .unwrap_or_default();
    Ok(TableState {
        main,
        last_sequence,
        snapshots,
    })
}

async fn load(api: &Api, path: &str) -> anyhow::Result<TableState> {
    let answer = api
        .get(path)
        .await?
        .expect(StatusCode::OK, "loading a table")?;
    table_state(&answer.json()?["metadata"])
}

#[derive(Debug)]
struct Appender {
    api: Api,
    path: String,
    state: TableState,
    /// Commits the server acknowledged (warmup included).
    acked: u64,
}

impl Appender {
    fn body(&self) -> Value {
        let id = next_snapshot_id();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let mut snapshot = json!({
            "snapshot-id": id,
            "sequence-number": self.state.last_sequence + 1,
            "timestamp-ms": now_ms,
            "manifest-list": format!("file:///bench/metadata/snap-{id}.avro"),
            "summary": { "operation": "append", "added-records": "1" },
            "schema-id": 0,
        });
        if let Some(parent) = self.state.main {
            snapshot["parent-snapshot-id"] = json!(parent);
        }
        let mut updates = vec![
            json!({ "action": "add-snapshot", "snapshot": snapshot }),
            json!({
                "action": "set-snapshot-ref",
                "ref-name": "main",
                "type": "branch",
                "snapshot-id": id,
            }),
        ];
        let keep_from = self
            .state
            .snapshots
            .len()
            .saturating_sub(KEEP_SNAPSHOTS - 1);
        let expired = &self.state.snapshots[..keep_from];
        if !expired.is_empty() {
            updates.push(json!({ "action": "remove-snapshots", "snapshot-ids": expired }));
        }
        json!({
            "requirements": [{
                "type": "assert-ref-snapshot-id",
                "ref": "main",
                "snapshot-id": self.state.main,
            }],
            "updates": updates,
        })
    }
}

impl Worker for Appender {
    async fn op(&mut self) -> anyhow::Result<Op> {
        let mut op = Op::default();
        for _ in 0..MAX_ATTEMPTS {
            let answer = self.api.post(&self.path, &self.body()).await?;
            match answer.status {
                StatusCode::OK => {
                    self.state = table_state(&answer.json()?["metadata"])?;
                    self.acked += 1;
                    return Ok(op);
                }
                StatusCode::CONFLICT => {
                    op.conflicts += 1;
                    op.retries += 1;
                }
                // The server gave up on its own retries (heavy contention): try again.
                StatusCode::SERVICE_UNAVAILABLE => op.retries += 1,
                _ => bail!("commit: unexpected {}: {}", answer.status, answer.excerpt()),
            }
            self.state = load(&self.api, &self.path).await?;
        }
        bail!("commit: gave up after {MAX_ATTEMPTS} attempts")
    }
}

/// `connections` writers appending snapshots to `tables`.
pub(super) async fn commits(
    env: &Env,
    connections: usize,
    tables: Tables,
) -> anyhow::Result<Sample> {
    let api = Api::new(&env.bases, connections)?;
    let name = |writer: usize| match tables {
        Tables::One => fixture::ONE.to_owned(),
        Tables::PerWriter => fixture::writer_table(writer % fixture::WRITERS),
        Tables::Shared => fixture::SHARED.to_owned(),
    };
    let mut paths: Vec<String> = (0..connections)
        .map(|w| table_path(BENCH, &name(w)))
        .collect();
    let mut writers = Vec::with_capacity(connections);
    for path in &paths {
        writers.push(Appender {
            api: api.clone(),
            path: path.clone(),
            state: load(&api, path).await?,
            acked: 0,
        });
    }
    paths.sort();
    paths.dedup();
    let mut before = Vec::with_capacity(paths.len());
    for path in &paths {
        before.push(load(&api, path).await?.last_sequence);
    }
    let (figures, writers) = drive(writers, env.timing, Basis::Wall).await?;
    let mut lost = 0;
    for (path, start) in paths.iter().zip(before) {
        let acked: u64 = writers
            .iter()
            .filter(|w| &w.path == path)
            .map(|w| w.acked)
            .sum();
        let now = load(&api, path).await?.last_sequence;
        lost += start + i64::try_from(acked).context("commit count")? - now;
    }
    Ok(Sample {
        figures,
        lost: Some(lost),
    })
}

/// Creates table `name` in the bench namespace and appends `commits` snapshots to it one after
/// another, as one writer of `commit-1` would; returns its path.
pub(super) async fn appended_table(
    api: &Api,
    name: &str,
    commits: usize,
) -> anyhow::Result<String> {
    let body = json!({ "name": name, "schema": fixture::schema() });
    api.post(&format!("{ICEBERG}/namespaces/{BENCH}/tables"), &body)
        .await?
        .expect(StatusCode::OK, "creating a table")?;
    let path = table_path(BENCH, name);
    let mut writer = Appender {
        api: api.clone(),
        path: path.clone(),
        state: load(api, &path).await?,
        acked: 0,
    };
    for _ in 0..commits {
        writer.op().await?;
    }
    Ok(path)
}

#[derive(Debug)]
struct Creator {
    api: Api,
    /// Creates the server acknowledged (warmup included).
    acked: u64,
}

impl Worker for Creator {
    async fn op(&mut self) -> anyhow::Result<Op> {
        let body = json!({ "name": format!("c{}", unique()), "schema": fixture::schema() });
        self.api
            .post(&format!("{ICEBERG}/namespaces/{MADE}/tables"), &body)
            .await?
            .expect(StatusCode::OK, "creating a table")?;
        self.acked += 1;
        Ok(Op::default())
    }
}

/// The tables of the namespace creates go to, counted page by page.
async fn made_tables(api: &Api) -> anyhow::Result<i64> {
    let mut count = 0;
    let mut token: Option<String> = None;
    loop {
        let mut path = format!("{ICEBERG}/namespaces/{MADE}/tables?pageSize=1000");
        if let Some(token) = &token {
            path.push_str("&pageToken=");
            path.push_str(token);
        }
        let page = api
            .get(&path)
            .await?
            .expect(StatusCode::OK, "listing the created tables")?
            .json()?;
        let listed = page["identifiers"].as_array().map_or(0, Vec::len);
        count += i64::try_from(listed).context("table count")?;
        match page["next-page-token"].as_str() {
            Some(next) if !next.is_empty() => token = Some(next.to_owned()),
            _ => return Ok(count),
        }
    }
}

/// Creates tables (each: its first metadata file, then a catalog commit), all in one
/// namespace, so concurrent creators commit to one branch and rewrite the same tree nodes.
/// Nothing is lost: after the run the namespace lists one more table per acknowledged create.
pub(super) async fn create_tables(env: &Env, connections: usize) -> anyhow::Result<Sample> {
    let api = Api::new(&env.bases, connections)?;
    let workers = (0..connections)
        .map(|_| Creator {
            api: api.clone(),
            acked: 0,
        })
        .collect();
    let before = made_tables(&api).await?;
    let (figures, creators) = drive(workers, env.timing, Basis::Wall).await?;
    let acked: u64 = creators.iter().map(|c| c.acked).sum();
    let lost = before + i64::try_from(acked).context("create count")? - made_tables(&api).await?;
    Ok(Sample {
        figures,
        lost: Some(lost),
    })
}
