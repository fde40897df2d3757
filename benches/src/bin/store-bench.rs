//! Store throughput per backend, same workload, one run: commits per second (one writer; 8
//! writers on one branch; 8 writers on 8 branches), ref reads per second, and object reads per
//! second cold (from the backend) and warm (through the cache), on a catalog of 10^5 tables.
//!
//! `cargo run --release -p pangolin-benches --features rocksdb --bin store-bench`
//!
//! The memory backend runs first as the baseline. PostgreSQL is used when
//! `PANGOLIN_BENCH_POSTGRES_URL` (default: the local test database) answers; each run works in
//! a fresh schema.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pangolin_backend_memory::MemoryBackend;
use pangolin_backend_postgres::{PoolSettings, PostgresBackend};
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_benches::{entry, key, spread};
use pangolin_records::{AuditLog, RecordStore};
use pangolin_refs::{
    Expected, Publish, RefName, RefStore, RefUpdate, Reference, Target, TransactError, Transaction,
};
use pangolin_store::tree::{self, NodeView};
use pangolin_store::{
    CommitDraft, ObjectCache, ObjectId, ObjectStore, Odb, RepoId, Staging, Timestamp, history,
};

/// Tables in the catalog.
const ENTRIES: u64 = 100_000;
/// How long each workload runs.
const RUN: Duration = Duration::from_secs(3);
const WRITERS: usize = 8;

trait Store: ObjectStore + RefStore + Publish + RecordStore + AuditLog {}
impl<T: ObjectStore + RefStore + Publish + RecordStore + AuditLog> Store for T {}

/// Operations per second and latency percentiles of one workload.
struct Figures {
    per_second: f64,
    p50: Duration,
    p99: Duration,
    /// Compare-and-swap races lost and retried (commit workloads).
    retries: u64,
}

fn figures(mut latencies: Vec<Duration>, elapsed: Duration, retries: u64) -> Figures {
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q) as usize)
            .copied()
            .unwrap_or_default()
    };
    Figures {
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.5),
        p99: at(0.99),
        retries,
    }
}

fn branch(name: &str) -> Reference {
    Reference::branch(RefName::new(name).expect("valid"))
}

struct Fixture<S> {
    store: Arc<S>,
    repo: RepoId,
    cache: Arc<ObjectCache>,
    nodes: Vec<ObjectId>,
}

impl<S: Store> Fixture<S> {
    fn odb(&self) -> Odb {
        Odb::new(self.repo.clone(), self.store.clone(), self.cache.clone())
    }

    async fn new(store: Arc<S>) -> Self {
        let repo = RepoId::new("bench").expect("valid");
        let cache = Arc::new(ObjectCache::new(512 << 20));
        let mut fixture = Self {
            store,
            repo,
            cache,
            nodes: Vec::new(),
        };
        let odb = fixture.odb();
        let entries: BTreeMap<_, _> = (0..ENTRIES).map(|i| (key(i), entry(i, 0))).collect();
        let root = tree::build(&odb, entries).await.expect("build");
        let draft = CommitDraft {
            parents: vec![],
            tree: root,
            author: "bench".into(),
            committer: "bench".into(),
            message: "load".into(),
            properties: BTreeMap::new(),
        };
        let (commit, _) = history::create(&odb, draft, Timestamp::now())
            .await
            .expect("commit");
        let updates = std::iter::once("main".to_owned())
            .chain((0..WRITERS).map(|w| format!("writer-{w}")))
            .map(|name| RefUpdate {
                reference: branch(&name),
                expected: Expected::Absent,
                target: Target::Set(commit),
            })
            .collect();
        let tx = Transaction {
            updates,
            principal: "bench".into(),
            message: "load".into(),
            time: Timestamp::now(),
        };
        fixture
            .store
            .transact(&fixture.repo, tx)
            .await
            .expect("create branches");
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            fixture.nodes.push(id);
            if let NodeView::Inner { children, .. } = odb.node(&id).await.expect("node").view() {
                stack.extend(children.iter().map(|c| c.id));
            }
        }
        fixture
    }
}

/// One commit changing one table on `name`, as a catalog commits: read the head, edit the
/// tree and write the commit into a stage, then publish the staged objects with the branch
/// swap; a lost race re-reads and redoes the edit on the new head. Returns the retries.
async fn commit_once<S: Store>(
    store: &Arc<S>,
    repo: &RepoId,
    cache: &Arc<ObjectCache>,
    name: &Reference,
    table: u64,
    version: u64,
) -> u64 {
    let staging = Arc::new(Staging::new(store.clone()));
    let odb = &Odb::new(repo.clone(), staging.clone(), cache.clone());
    let mut retries = 0;
    loop {
        let head = store
            .get_ref(odb.repo(), name)
            .await
            .expect("head")
            .expect("branch exists");
        let tree = odb.commit(&head).await.expect("commit").tree;
        let edits = BTreeMap::from([(key(table), Some(entry(table, version)))]);
        let tree = tree::edit(odb, &tree, edits).await.expect("edit").root;
        let draft = CommitDraft {
            parents: vec![head],
            tree,
            author: "bench".into(),
            committer: "bench".into(),
            message: "append".into(),
            properties: BTreeMap::new(),
        };
        let (commit, _) = history::create(odb, draft, Timestamp::now())
            .await
            .expect("commit");
        let update = RefUpdate {
            reference: name.clone(),
            expected: Expected::Equals(head),
            target: Target::Set(commit),
        };
        let tx = Transaction {
            updates: vec![update],
            principal: "bench".into(),
            message: "append".into(),
            time: Timestamp::now(),
        };
        match store
            .publish(odb.repo(), staging.take(), tx, Vec::new())
            .await
        {
            Ok(_) => return retries,
            Err(TransactError::OutOfDate { .. }) => retries += 1,
            Err(TransactError::Backend(e)) if e.is_retryable() => retries += 1,
            Err(e) => panic!("commit failed: {e}"),
        }
    }
}

/// Runs `writers` tasks committing for `RUN`, each on the branch `branch_of(writer)`.
async fn commits<S: Store>(
    fixture: &Fixture<S>,
    writers: usize,
    branch_of: fn(usize) -> String,
) -> Figures {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..writers {
        let (store, repo, cache) = (
            fixture.store.clone(),
            fixture.repo.clone(),
            fixture.cache.clone(),
        );
        let name = branch(&branch_of(writer));
        let tables = spread(ENTRIES, 10_000);
        tasks.spawn(async move {
            let (mut latencies, mut retries, mut n) = (Vec::new(), 0, 0usize);
            while started.elapsed() < RUN {
                let op = Instant::now();
                let table = tables[(n * 7 + writer) % tables.len()];
                retries += commit_once(&store, &repo, &cache, &name, table, n as u64 + 1).await;
                latencies.push(op.elapsed());
                n += 1;
            }
            (latencies, retries)
        });
    }
    let (mut all, mut retries) = (Vec::new(), 0);
    while let Some(result) = tasks.join_next().await {
        let (latencies, r) = result.expect("writer");
        all.extend(latencies);
        retries += r;
    }
    figures(all, started.elapsed(), retries)
}

async fn ref_reads<S: Store>(fixture: &Fixture<S>) -> Figures {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..WRITERS {
        let (store, repo) = (fixture.store.clone(), fixture.repo.clone());
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            while started.elapsed() < RUN {
                let op = Instant::now();
                store.get_ref(&repo, &branch("main")).await.expect("get");
                latencies.push(op.elapsed());
            }
            latencies
        });
    }
    let mut all = Vec::new();
    while let Some(result) = tasks.join_next().await {
        all.extend(result.expect("reader"));
    }
    figures(all, started.elapsed(), 0)
}

/// Cold: each read goes to the backend. Warm: through the object cache, after one pass.
async fn object_reads<S: Store>(fixture: &Fixture<S>, warm: bool) -> Figures {
    let odb = fixture.odb();
    if warm {
        for id in &fixture.nodes {
            odb.node(id).await.expect("node");
        }
    }
    let started = Instant::now();
    let mut latencies = Vec::new();
    let picks = spread(fixture.nodes.len() as u64, 4_096);
    let mut n = 0;
    while started.elapsed() < RUN {
        let id = fixture.nodes[picks[n % picks.len()] as usize];
        let op = Instant::now();
        if warm {
            odb.node(&id).await.expect("node");
        } else {
            fixture
                .store
                .get(&fixture.repo, &id)
                .await
                .expect("get")
                .expect("present");
        }
        latencies.push(op.elapsed());
        n += 1;
    }
    figures(latencies, started.elapsed(), 0)
}

fn row(backend: &str, workload: &str, f: &Figures, baseline: Option<&Figures>) {
    let ratio = baseline.map_or("1.00".to_owned(), |b| {
        format!("{:.3}", f.per_second / b.per_second)
    });
    println!(
        "| {backend} | {workload} | {:.0} | {:.1} | {:.1} | {} | {ratio} |",
        f.per_second,
        f.p50.as_secs_f64() * 1e6,
        f.p99.as_secs_f64() * 1e6,
        f.retries
    );
}

type Results = Vec<(&'static str, Figures)>;

async fn run<S: Store>(name: &str, store: Arc<S>, baseline: Option<&Results>) -> Results {
    let fixture = Fixture::new(store).await;
    let mut results: Results = Vec::new();
    results.push((
        "commit, 1 writer",
        commits(&fixture, 1, |_| "main".to_owned()).await,
    ));
    results.push((
        "commit, 8 writers, 1 branch",
        commits(&fixture, WRITERS, |_| "main".to_owned()).await,
    ));
    results.push((
        "commit, 8 writers, 8 branches",
        commits(&fixture, WRITERS, |w| format!("writer-{w}")).await,
    ));
    results.push(("ref read (8 readers)", ref_reads(&fixture).await));
    results.push(("object read, cold", object_reads(&fixture, false).await));
    results.push(("object read, warm", object_reads(&fixture, true).await));
    for (i, (workload, f)) in results.iter().enumerate() {
        row(name, workload, f, baseline.map(|b| &b[i].1));
    }
    results
}

/// Whether `backend` is among those named in `PANGOLIN_BENCH_BACKENDS` (all when unset).
fn selected(backend: &str) -> bool {
    std::env::var("PANGOLIN_BENCH_BACKENDS")
        .map_or(true, |list| list.split(',').any(|b| b == backend))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    println!("| backend | workload | ops/s | p50 (µs) | p99 (µs) | retries | vs memory |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    let memory = run("memory", Arc::new(MemoryBackend::new()), None).await;

    let dir = std::env::temp_dir().join(format!("pangolin-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench directory");
    if selected("sqlite") {
        let sqlite = SqliteBackend::open(dir.join("bench.db"))
            .await
            .expect("open SQLite");
        run("sqlite", Arc::new(sqlite), Some(&memory)).await;
    }

    let url = std::env::var("PANGOLIN_BENCH_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("bench_{}", std::process::id());
    let settings = PoolSettings {
        schema: Some(schema.clone()),
        ..PoolSettings::default()
    };
    match PostgresBackend::connect(&url, &settings).await {
        _ if !selected("postgres") => {}
        Ok(postgres) => {
            let postgres = Arc::new(postgres);
            run("postgres", postgres.clone(), Some(&memory)).await;
            let drop = format!("DROP SCHEMA {schema} CASCADE");
            if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(drop))
                .execute(postgres.pool())
                .await
            {
                eprintln!("could not drop the benchmark schema {schema}: {e}");
            }
        }
        Err(e) => eprintln!("PostgreSQL not measured: {e}"),
    }

    #[cfg(feature = "rocksdb")]
    if selected("rocksdb") {
        let rocks =
            pangolin_backend_rocksdb::RocksBackend::open(dir.join("rocks")).expect("open RocksDB");
        run("rocksdb", Arc::new(rocks), Some(&memory)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
