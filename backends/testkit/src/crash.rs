//! The crash-safety check for persistent backends: a writer process commits as fast as it
//! can and is killed with SIGKILL at varying moments; after each kill the store reopens with
//! every acknowledged commit reachable and every commit's tree readable.
//!
//! A backend's test file provides the writer as an ignored test (so the test binary can run
//! it as a child process) and calls [`kill_writer_repeatedly`].

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use pangolin_refs::{Expected, RefName, RefUpdate, Reference, Target, Transaction};
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{
    Content, ContentId, ContentKey, Entry, ObjectCache, ObjectId, Odb, RepoId, Staging, Timestamp,
    history,
};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::Backend;

/// The environment variable that tells the writer test which database to write.
pub const WRITER_ENV: &str = "PANGOLIN_CRASH_WRITER_PATH";

fn main_branch() -> Reference {
    Reference::branch(RefName::new("main").expect("valid"))
}

fn odb_on<B: Backend>(backend: Arc<B>) -> Odb {
    Odb::new(
        RepoId::new("crash").expect("valid"),
        backend,
        Arc::new(ObjectCache::new(16 << 20)),
    )
}

/// The writer: commits one table per commit on `main`, forever, printing `acked <id>` once
/// the ref move that published each commit has returned. Each commit's objects are staged and
/// published with the ref move, as a catalog commits.
pub async fn write_forever<B: Backend>(backend: Arc<B>) {
    let staging = Arc::new(Staging::new(backend.clone()));
    let odb = Odb::new(
        RepoId::new("crash").expect("valid"),
        staging.clone(),
        Arc::new(ObjectCache::new(16 << 20)),
    );
    let repo = odb.repo().clone();
    let mut head = backend
        .get_ref(&repo, &main_branch())
        .await
        .expect("read main");
    let mut n = match head {
        Some(id) => odb.commit(&id).await.expect("head commit").depth + 1,
        None => 0,
    };
    loop {
        let tree = match head {
            Some(id) => odb.commit(&id).await.expect("head commit").tree,
            None => tree::empty(&odb).await.expect("empty tree"),
        };
        let key = ContentKey::new([format!("t{n:08}")]).expect("valid key");
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
            .expect("edit")
            .root;
        let draft = pangolin_store::CommitDraft {
            parents: head.into_iter().collect(),
            tree,
            author: "writer".into(),
            committer: "writer".into(),
            message: format!("commit {n}"),
            properties: BTreeMap::new(),
        };
        let (id, _) = history::create(&odb, draft, Timestamp::now())
            .await
            .expect("commit");
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
        let audited = crate::audit::event("crash", "writer", "table.commit", &id.to_hex(), 0);
        backend
            .publish(&repo, staging.take(), tx, vec![audited])
            .await
            .expect("move main");
        println!("acked {}", id.to_hex());
        head = Some(id);
        n += 1;
    }
}

/// Starts this test binary's `writer_test` on `path`, lets it acknowledge `commits` commits,
/// kills it with SIGKILL and returns the last acknowledged commit.
async fn run_and_kill(writer_test: &str, path: &Path, commits: usize) -> ObjectId {
    let exe = std::env::current_exe().expect("test binary path");
    let mut child = tokio::process::Command::new(exe)
        .args([
            "--exact",
            writer_test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WRITER_ENV, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the writer");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut last = None;
    let mut seen = 0;
    while seen < commits {
        let line = lines
            .next_line()
            .await
            .expect("read")
            .expect("the writer stopped on its own");
        if let Some(hex) = line.strip_prefix("acked ") {
            last = Some(hex.parse::<ObjectId>().expect("an id"));
            seen += 1;
        }
    }
    // SIGKILL: no destructors, no flush, no chance to finish the commit in flight.
    child.start_kill().expect("kill");
    child.wait().await.expect("reap");
    last.expect("at least one commit")
}

/// Kills the writer five times at different points on one database, reopening it with
/// `open` after each kill and checking it.
pub async fn kill_writer_repeatedly<B, F, Fut>(writer_test: &str, path: &Path, open: F)
where
    B: Backend,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = B>,
{
    let mut total = 0;
    for (round, commits) in [37usize, 5, 61, 1, 23].into_iter().enumerate() {
        let acked = run_and_kill(writer_test, path, commits).await;
        total += commits;
        let backend = Arc::new(open().await);
        let odb = odb_on(backend.clone());
        let head = backend
            .get_ref(odb.repo(), &main_branch())
            .await
            .expect("read main")
            .expect("main exists");
        assert!(
            history::is_ancestor(&odb, acked, head)
                .await
                .expect("walk history"),
            "round {round}: an acknowledged commit was lost"
        );
        let mut commit = Some(head);
        let mut depth = 0;
        let mut reachable = std::collections::BTreeSet::new();
        while let Some(id) = commit {
            reachable.insert(id.to_hex());
            let c = odb.commit(&id).await.expect("every commit is readable");
            let listed = tree::list(&odb, &c.tree, &KeyRange::all(), usize::MAX)
                .await
                .expect("every tree is readable");
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
        // Each commit's audit event was written with its ref move: every reachable commit
        // has exactly one, and no event names a commit the crash lost.
        let records = backend
            .range(1, u64::MAX)
            .await
            .expect("read the audit log");
        let audited: Vec<String> = records
            .iter()
            .map(|r| r.event.resource_id.clone())
            .collect();
        let distinct: std::collections::BTreeSet<String> = audited.iter().cloned().collect();
        assert_eq!(
            distinct.len(),
            audited.len(),
            "round {round}: an event twice"
        );
        assert_eq!(
            distinct, reachable,
            "round {round}: commits and events differ"
        );
        let last = records.last().map_or(0, |r| r.sequence);
        pangolin_records::verify(backend.as_ref(), 1, last)
            .await
            .expect("the audit chain survives the kill");
    }
}
