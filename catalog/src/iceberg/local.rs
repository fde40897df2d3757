//! New files on a local disk written as a database writes its log: created only if absent
//! (`O_CREAT|O_EXCL`, so a file is never overwritten), written whole, and synced together with
//! every directory the write created before it returns. A catalog commit names a metadata file
//! only after that, so after a crash or power loss no commit names a file the disk lost.
//! (`object_store`'s local puts do not sync: fine for a cache, not for a catalog.)

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Creates `path` with `body`, durably; `AlreadyExists` when a file is there.
pub(crate) async fn create_durably(path: PathBuf, body: Vec<u8>) -> io::Result<()> {
    tokio::task::spawn_blocking(move || create_blocking(&path, &body))
        .await
        .map_err(io::Error::other)?
}

fn create_blocking(path: &Path, body: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file needs a directory"))?;
    let created = create_dirs(dir)?;
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    // The data and the size that makes it readable; the name is the directory's to sync.
    let written = file.write_all(body).and_then(|()| file.sync_data());
    if let Err(error) = written {
        // Nothing names the file yet: leave no half-written one behind.
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(error);
    }
    // The new entry lives in the directory: sync it, and each directory created above it.
    File::open(dir)?.sync_all()?;
    for parent in created.iter().filter_map(|d| d.parent()) {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
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
}
