//! New files on a local disk written as a database writes its log: created only if absent
//! (`O_CREAT|O_EXCL`, so a file is never overwritten), written whole, and synced together with
//! every directory the write created before it returns. A catalog commit names a metadata file
//! only after that, so after a crash or power loss no commit names a file the disk lost.
//! (`object_store`'s local puts do not sync: fine for a cache, not for a catalog.)

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use tokio::runtime::Handle;

/// Creates `path` with `body`, durably; `AlreadyExists` when a file is there.
pub(crate) async fn create_durably(path: PathBuf, body: Vec<u8>) -> io::Result<()> {
    let runtime = Handle::current();
    tokio::task::spawn_blocking(move || create_blocking(&path, &body, &runtime))
        .await
        .map_err(io::Error::other)?
}

fn create_blocking(path: &Path, body: &[u8], runtime: &Handle) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file needs a directory"))?;
    let created = create_dirs(dir)?;
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    let synced = file.write_all(body).and_then(|()| {
        if created.is_empty() {
            // A commit's file, in a directory that was there: its data, then its name, on this
            // thread. Handing the directory's sync to another thread gained a lone writer
            // little and cost concurrent writers, whose syncs already overlap each other's.
            file.sync_data()?;
            File::open(dir)?.sync_all()
        } else {
            sync_together(file, &dirs_to_sync(dir, &created), runtime)
        }
    });
    if synced.is_err() {
        // Nothing names the file yet: leave no half-written or unsynced one behind.
        let _ = std::fs::remove_file(path);
    }
    synced
}

/// Syncs a new table's first file (its data, and the size that makes it readable) and the
/// directories that hold the new entries: the file's own, and the parent of each directory
/// created for it. The file may be named only once all of them are on disk, in whatever order
/// they get there, so they are issued at once: each waits for its own writes and a flush of
/// the disk's cache, and waits asked for together overlap (one after another, a new table's
/// four syncs took about twice as long).
fn sync_together(file: File, dirs: &[PathBuf], runtime: &Handle) -> io::Result<()> {
    let (done, results) = mpsc::channel();
    for dir in dirs {
        let (dir, done) = (dir.clone(), done.clone());
        runtime.spawn_blocking(move || {
            // The receiver is gone only once another sync failed: nothing waits for this one.
            let _ = done.send(File::open(&dir).and_then(|d| d.sync_all()));
        });
    }
    // Only the syncs hold a sender now: one that never ran ends the wait with an error.
    drop(done);
    let data = file.sync_data();
    let synced = (0..dirs.len()).try_for_each(|_| results.recv().map_err(io::Error::other)?);
    data.and(synced)
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
