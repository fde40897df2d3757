//! Crash safety: a writer process committing as fast as it can is killed with SIGKILL at
//! random moments; after each kill the database reopens with every ref pointing at a commit
//! whose whole history and tree are readable, and with no acknowledged commit lost.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use pangolin_backend_sqlite::SqliteBackend;
use pangolin_refs::{Expected, RefName, RefStore, RefUpdate, Reference, Target, Transaction};
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{
    CommitDraft, Content, ContentId, ContentKey, Entry, ObjectCache, ObjectId, Odb, RepoId,
    Timestamp, history,
};
use tokio::io::{AsyncBufReadExt, BufReader};

const WRITER_ENV: &str = "PANGOLIN_CRASH_WRITER_DB";

fn main_branch() -> Reference {
    Reference::branch(RefName::new("main").unwrap())
}

fn odb_on(backend: Arc<SqliteBackend>) -> Odb {
    Odb::new(
        RepoId::new("crash").unwrap(),
        backend,
        Arc::new(ObjectCache::new(16 << 20)),
    )
}

/// The writer process: commits one table per commit on `main`, forever, printing each
/// commit id once the ref move that published it has returned.
#[tokio::test]
#[ignore = "helper process started by the crash test"]
async fn crash_writer() {
    let path = std::env::var_os(WRITER_ENV).expect("run by the crash test");
    let backend = Arc::new(SqliteBackend::open(Path::new(&path)).await.unwrap());
    let odb = odb_on(backend.clone());
    let repo = odb.repo().clone();
    let mut head = backend.get_ref(&repo, &main_branch()).await.unwrap();
    let mut n = match head {
        Some(id) => odb.commit(&id).await.unwrap().depth + 1,
        None => 0,
    };
    loop {
        let tree = match head {
            Some(id) => odb.commit(&id).await.unwrap().tree,
            None => tree::empty(&odb).await.unwrap(),
        };
        let key = ContentKey::new([format!("t{n:08}")]).unwrap();
        let entry = Entry {
            content_id: ContentId::new_random(),
            content: Content::Generic {
                kind: "file".into(),
                location: format!("s3://w/{n}"),
                properties: BTreeMap::new(),
            },
        };
        let tree = tree::edit(&odb, &tree, BTreeMap::from([(key, Some(entry))]))
            .await
            .unwrap()
            .root;
        let draft = CommitDraft {
            parents: head.into_iter().collect(),
            tree,
            author: "writer".into(),
            committer: "writer".into(),
            message: format!("commit {n}"),
            properties: BTreeMap::new(),
        };
        let (id, _) = history::create(&odb, draft, Timestamp::now())
            .await
            .unwrap();
        let expected = head.map_or(Expected::Absent, Expected::Equals);
        let tx = Transaction {
            updates: vec![RefUpdate {
                reference: main_branch(),
                expected,
                target: Target::Set(id),
            }],
            principal: "writer".into(),
            message: format!("commit {n}"),
            time: Timestamp::now(),
        };
        backend.transact(&repo, tx).await.unwrap();
        println!("acked {}", id.to_hex());
        head = Some(id);
        n += 1;
    }
}

/// Starts the writer on `path`, lets it acknowledge `commits` commits, kills it with SIGKILL
/// and returns the last acknowledged commit.
async fn run_and_kill(path: &Path, commits: usize) -> ObjectId {
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_writer",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WRITER_ENV, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut last = None;
    let mut seen = 0;
    while seen < commits {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the writer stopped on its own");
        if let Some(hex) = line.strip_prefix("acked ") {
            last = Some(hex.parse::<ObjectId>().unwrap());
            seen += 1;
        }
    }
    // SIGKILL: no destructors, no flush, no chance to finish the commit in flight.
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    last.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_writer_loses_no_acknowledged_commit() {
    let path = std::env::temp_dir().join(format!(
        "pangolin-sqlite-crash-{}.db",
        uuid::Uuid::new_v4().simple()
    ));
    let mut total = 0;
    for (round, commits) in [37usize, 5, 61, 1, 23].into_iter().enumerate() {
        let acked = run_and_kill(&path, commits).await;
        total += commits;

        let backend = Arc::new(SqliteBackend::open(&path).await.unwrap());
        let odb = odb_on(backend.clone());
        let head = backend
            .get_ref(odb.repo(), &main_branch())
            .await
            .unwrap()
            .expect("main exists");
        assert!(
            history::is_ancestor(&odb, acked, head).await.unwrap(),
            "round {round}: an acknowledged commit was lost"
        );
        // Every commit of the history and its whole tree are readable.
        let mut commit = Some(head);
        let mut depth = 0;
        while let Some(id) = commit {
            let c = odb.commit(&id).await.unwrap();
            let listed = tree::list(&odb, &c.tree, &KeyRange::all(), usize::MAX)
                .await
                .unwrap();
            assert_eq!(
                listed.entries.len() as u64,
                c.depth + 1,
                "commit {id} holds one table per commit"
            );
            commit = c.first_parent();
            depth += 1;
        }
        assert!(
            depth >= total,
            "round {round}: {depth} commits reachable, {total} acknowledged"
        );
        backend.pool().close().await;
    }
}
