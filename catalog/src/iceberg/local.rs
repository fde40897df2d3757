//! New files on a local disk written as a database writes its log: created only if absent
//! (`O_CREAT|O_EXCL`, so a file is never overwritten), written whole, and synced together with
//! every directory the write created before it returns. A catalog commit names a metadata file
//! only after that, so after a crash or power loss no commit names a file the disk lost.
//! (`object_store`'s local puts do not sync: fine for a cache, not for a catalog.)

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// Creates `path` with `body`, durably; `AlreadyExists` when a file is there.
pub(crate) async fn create_durably(path: PathBuf, body: Vec<u8>) -> io::Result<()> {
    let runtime = Handle::current();
    let file = path.clone();
    let pending = tokio::task::spawn_blocking(move || create_blocking(&file, &body, &runtime))
        .await
        .map_err(io::Error::other)??;
    // A new table's directory syncs are awaited here rather than on the thread that wrote the
    // file: pool threads waiting for tasks queued behind them would wait forever once the
    // pool was full of them.
    let mut synced = Ok(());
    for sync in pending {
        let result = sync.await.map_err(io::Error::other).and_then(|r| r);
        synced = synced.and(result);
    }
    if synced.is_err() {
        // Nothing names the file yet: leave no unsynced one behind.
        let _ = tokio::fs::remove_file(&path).await;
    }
    synced
}

/// A directory's sync still running when the file's own sync is done.
type PendingSync = JoinHandle<io::Result<()>>;

/// Creates, writes and syncs the file. A commit's file, in a directory that was there, has
/// its directory synced here too, after it, on this thread: handing that sync to another
/// thread gained a lone writer little and cost concurrent writers, whose syncs already
/// overlap each other's. A new table's file also needs the entries of the directories made for
/// it on disk; they are synced at once on other threads while this one syncs the data, and
/// returned to be awaited: each sync waits for its own writes and a flush of the disk's
/// cache, and waits asked for together overlap (one after another, a new table's four syncs
/// took about twice as long).
fn create_blocking(path: &Path, body: &[u8], runtime: &Handle) -> io::Result<Vec<PendingSync>> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file needs a directory"))?;
    let created = create_dirs(dir)?;
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    let mut pending = Vec::new();
    let synced = file.write_all(body).and_then(|()| {
        if !created.is_empty() {
            pending = dirs_to_sync(dir, &created)
                .into_iter()
                .map(|dir| runtime.spawn_blocking(move || File::open(dir)?.sync_all()))
                .collect();
        }
        // The data and the size that makes it readable.
        file.sync_data()?;
        if created.is_empty() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    });
    if let Err(error) = synced {
        // Nothing names the file yet: leave no half-written one behind.
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(error);
    }
    Ok(pending)
}

/// The directories whose entries a new file in `dir` made: `dir` itself, and the parent of
/// each directory the write created (`created`, deepest first).
fn dirs_to_sync(dir: &Path, created: &[PathBuf]) -> Vec<PathBuf> {
    std::iter::once(dir)
        .chain(created.iter().filter_map(|d| d.parent()))
        .map(Path::to_path_buf)
        .collect()
}

/// Creates `dir` and its missing ancestors; returns the ones it created.
fn create_dirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    if !missing.is_empty() {
        std::fs::create_dir_all(dir)?;
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn creates_once_in_new_directories_and_never_overwrites() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("a/b/metadata/00001.metadata.json");
        create_durably(path.clone(), b"first".to_vec())
            .await
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        let again = create_durably(path.clone(), b"second".to_vec())
            .await
            .unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"first", "not overwritten");
        let sibling = root.path().join("a/b/metadata/00002.metadata.json");
        create_durably(sibling.clone(), Vec::new()).await.unwrap();
        assert_eq!(std::fs::read(&sibling).unwrap(), b"");
    }

    #[test]
    fn every_new_entry_is_synced_once() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("ns/t/metadata");
        let created = create_dirs(&dir).unwrap();
        assert_eq!(
            created,
            [
                dir.clone(),
                root.path().join("ns/t"),
                root.path().join("ns")
            ]
        );
        let expected = [
            dir.clone(),
            root.path().join("ns/t"),
            root.path().join("ns"),
            root.path().to_path_buf(),
        ];
        assert_eq!(dirs_to_sync(&dir, &created), expected);
        // A file in a directory that exists: only its own entry is new.
        assert!(create_dirs(&dir).unwrap().is_empty());
        assert_eq!(dirs_to_sync(&dir, &[]), [dir]);
    }

    /// With one blocking thread, a new table's directory syncs can run only once the thread
    /// that wrote the file is free again.
    #[test]
    fn a_new_table_needs_no_more_than_one_blocking_thread() {
        let root = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..4)
            .map(|i| {
                root.path()
                    .join(format!("ns/t{i}/metadata/00000.metadata.json"))
            })
            .collect();
        let (done, finished) = std::sync::mpsc::channel();
        let creating = paths.clone();
        // On a thread of its own: a deadlocked pool also hangs its runtime's shutdown.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let creates = creating
                .into_iter()
                .map(|path| create_durably(path, b"{}".to_vec()));
            let created = runtime.block_on(futures::future::try_join_all(creates));
            let _ = done.send(created.map(|_| ()));
        });
        // Not a timing check: without it a deadlock would hang the suite instead of failing.
        finished
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the creates finished")
            .unwrap();
        for path in &paths {
            assert_eq!(std::fs::read(path).unwrap(), b"{}");
        }
    }

    #[tokio::test]
    async fn a_file_in_a_missing_root_is_refused_and_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let blocker = root.path().join("file");
        std::fs::write(&blocker, b"not a directory").unwrap();
        let path = blocker.join("metadata/00000.metadata.json");
        assert!(create_durably(path.clone(), b"x".to_vec()).await.is_err());
        assert!(!path.exists());
    }
}
