//! JSON files in a warehouse (table and view metadata), through the [`FileIo`] stores: read
//! whole, written once and never overwritten (on local disks durably, see [`super::local`]). Caching is the caller's: table metadata is cached
//! by [`FileIo`]; view metadata, read far less often, is not.

use object_store::{PutMode, PutOptions, PutPayload};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::io::{FileIo, IoError};

/// The JSON document at `location`. A file that does not parse as `T` is
/// [`IoError::Parse`].
pub async fn read_json<T: DeserializeOwned>(io: &FileIo, location: &str) -> Result<T, IoError> {
    parse(location, &io.read_bytes(location).await?)
}

/// `bytes`, read from `location`, as `T`; [`IoError::Parse`] when they are not.
pub(crate) fn parse<T: DeserializeOwned>(location: &str, bytes: &[u8]) -> Result<T, IoError> {
    serde_json::from_slice(bytes).map_err(|e| IoError::Parse {
        location: location.to_owned(),
        reason: e.to_string(),
    })
}

/// Writes `value` as a new JSON file at `location`; fails rather than overwrite a file.
pub async fn write_json<T: Serialize>(
    io: &FileIo,
    location: &str,
    value: &T,
) -> Result<(), IoError> {
    let body = serde_json::to_vec(value).map_err(|e| IoError::Parse {
        location: location.to_owned(),
        reason: e.to_string(),
    })?;
    write_new(io, location, body).await
}

/// Writes `body` as a new file at `location` (durably on a local disk); fails rather than
/// overwrite a file.
pub async fn write_new(io: &FileIo, location: &str, body: Vec<u8>) -> Result<(), IoError> {
    let (store, path) = io.resolve(location)?;
    let store_error = |source| IoError::Store {
        location: location.to_owned(),
        source,
    };
    if let Some(local) = super::io::local_path(location) {
        return super::local::create_durably(local, body)
            .await
            .map_err(|e| {
                store_error(match e.kind() {
                    std::io::ErrorKind::AlreadyExists => object_store::Error::AlreadyExists {
                        path: path.to_string(),
                        source: Box::new(e),
                    },
                    _ => object_store::Error::Generic {
                        store: "LocalFileSystem",
                        source: Box::new(e),
                    },
                })
            });
    }
    // Object stores: a conditional put (`If-None-Match: *` on S3), never an overwrite.
    let options = PutOptions {
        mode: PutMode::Create,
        ..PutOptions::default()
    };
    store
        .put_opts(&path, PutPayload::from(body), options)
        .await
        .map_err(store_error)?;
    Ok(())
}
