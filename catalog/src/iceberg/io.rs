//! Reading and writing metadata files in a warehouse, through `object_store`.
//!
//! Metadata files are immutable once written (each commit writes a new one), so parsed
//! metadata is cached by location with no invalidation, together with its JSON: a file the
//! server writes is serialized once for the file and every answer naming it, and one it reads
//! is serialized at most once however often it is loaded.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parking_lot::Mutex;
use serde_json::value::RawValue;
use url::Url;

use super::metadata::TableMetadata;
use super::metadata_cache::{Cached, MetadataCache};
use super::storage::StorageOptions;

#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("`{location}` is not a usable location: {reason}")]
    InvalidLocation { location: String, reason: String },
    #[error("file `{0}` does not exist")]
    NotFound(String),
    #[error("metadata file `{location}` is not valid table metadata: {reason}")]
    Parse { location: String, reason: String },
    #[error("storage error at `{location}`: {source}")]
    Store {
        location: String,
        #[source]
        source: object_store::Error,
    },
}

/// A file found by [`FileIo::list_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    pub location: String,
    pub size: u64,
    pub modified_ms: i64,
}

/// Table metadata as JSON, ready to be written or embedded in an answer as it is.
pub type MetadataJson = Arc<RawValue>;

/// `metadata` as JSON.
pub fn to_json(metadata: &TableMetadata) -> Result<MetadataJson, serde_json::Error> {
    serde_json::value::to_raw_value(metadata).map(Arc::from)
}

/// Files of one warehouse: object stores by scheme and authority (built with the warehouse's
/// [`StorageOptions`]), and its parsed metadata files in a cache it may share with others.
pub struct FileIo {
    options: StorageOptions,
    stores: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
    cache: Arc<MetadataCache>,
    /// This store's key space in `cache`.
    cached_as: u64,
}

impl std::fmt::Debug for FileIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `StorageOptions` redacts its secrets.
        f.debug_struct("FileIo")
            .field("options", &self.options)
            .field("cache", &self.cache)
            .finish()
    }
}

/// Parses a location: a URL, or an absolute local path (taken as `file://`).
pub fn location_url(location: &str) -> Result<Url, IoError> {
    let invalid = |reason: String| IoError::InvalidLocation {
        location: location.to_owned(),
        reason,
    };
    if location.contains("://") {
        Url::parse(location).map_err(|e| invalid(e.to_string()))
    } else if location.starts_with('/') {
        Url::from_file_path(location).map_err(|()| invalid("not an absolute path".to_owned()))
    } else {
        Err(invalid(
            "use a URL (file://, s3://, ...) or an absolute path".to_owned(),
        ))
    }
}

/// The path of a location as written: what follows `scheme://authority`, or the whole of an
/// absolute path.
fn literal_path(location: &str) -> &str {
    match location.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("", |start| &rest[start..]),
        None => location,
    }
}

/// The file a `file:` location (or an absolute path) names on this machine's disk; `None`
/// for other schemes and for `file://host/...`.
pub(crate) fn local_path(location: &str) -> Option<std::path::PathBuf> {
    let url = location_url(location).ok()?;
    (url.scheme() == "file" && url.authority().is_empty())
        .then(|| std::path::PathBuf::from(literal_path(location)))
}

impl FileIo {
    /// With a metadata cache of its own, of `cache_bytes` (see [`MetadataCache::new`]).
    /// Stores get no settings: enough for `file://`; see [`with_options`](Self::with_options).
    pub fn new(cache_bytes: u64) -> Self {
        Self::with_options(cache_bytes, StorageOptions::default())
    }

    /// As [`new`](Self::new), with the settings stores are built with (S3 endpoint, region,
    /// credentials).
    pub fn with_options(cache_bytes: u64, options: StorageOptions) -> Self {
        Self::sharing(Arc::new(MetadataCache::new(cache_bytes)), options)
    }

    /// Keeping parsed metadata in `cache`, shared with other warehouses' stores (each keyed
    /// apart), so that one budget bounds them all.
    pub fn sharing(cache: Arc<MetadataCache>, options: StorageOptions) -> Self {
        Self {
            options,
            stores: Mutex::new(HashMap::new()),
            cached_as: cache.new_io(),
            cache,
        }
    }

    /// The settings stores are built with.
    pub fn options(&self) -> &StorageOptions {
        &self.options
    }

    /// Fails when no store can be built for `location` (an unknown scheme, an S3 setting
    /// `object_store` refuses). Local only: reaches no server.
    pub fn check_location(&self, location: &str) -> Result<(), IoError> {
        self.resolve(location).map(|_| ())
    }

    /// The object store and path of a location. Crate-visible so that files other than table
    /// metadata (view metadata, see `json_io.rs`) go through the same stores.
    pub(crate) fn resolve(&self, location: &str) -> Result<(Arc<dyn ObjectStore>, Path), IoError> {
        let (url, root, path) = parse(location)?;
        if let Some(store) = self.stores.lock().get(&root) {
            return Ok((store.clone(), path));
        }
        let options = self.options.object_store_options(url.scheme());
        let (store, _) =
            object_store::parse_url_opts(&url, options).map_err(|e| IoError::InvalidLocation {
                location: location.to_owned(),
                reason: e.to_string(),
            })?;
        let store: Arc<dyn ObjectStore> = Arc::from(store);
        self.stores.lock().insert(root, store.clone());
        Ok((store, path))
    }

    /// The metadata at `location`, from the cache or the warehouse.
    pub async fn read_metadata(&self, location: &str) -> Result<Arc<TableMetadata>, IoError> {
        if let Some(hit) = self.cache.get(self.cached_as, location) {
            return Ok(hit.metadata);
        }
        // Read whole here rather than through `read_json`: the cache weighs the file's size.
        let bytes = self.read_bytes(location).await?;
        let mut metadata: TableMetadata = super::json_io::parse(location, &bytes)?;
        metadata.ensure_main_ref();
        // Files in the catalog were checked whole when written or registered; this guards
        // against a file changed under the catalog without re-checking every schema.
        metadata.validate().map_err(|reason| IoError::Parse {
            location: location.to_owned(),
            reason,
        })?;
        let metadata = Arc::new(metadata);
        let cached = Cached {
            metadata: metadata.clone(),
            json: Arc::default(),
            file_bytes: bytes.len() as u64,
        };
        self.cache.insert(self.cached_as, location, cached);
        Ok(metadata)
    }

    /// Writes a new metadata file; never overwrites one.
    pub async fn write_metadata(
        &self,
        location: &str,
        metadata: Arc<TableMetadata>,
    ) -> Result<(), IoError> {
        let json = to_json(&metadata).map_err(|e| IoError::Parse {
            location: location.to_owned(),
            reason: e.to_string(),
        })?;
        super::json_io::write_new(self, location, json.get().as_bytes().to_vec()).await?;
        let cached = Cached {
            metadata,
            file_bytes: json.get().len() as u64,
            json: Arc::new(OnceLock::from(json)),
        };
        self.cache.insert(self.cached_as, location, cached);
        Ok(())
    }

    /// `metadata` as JSON. When it is the cached metadata of the file at `location` (as
    /// [`read_metadata`](Self::read_metadata) and [`write_metadata`](Self::write_metadata)
    /// return it), its JSON is kept with it, so a file is serialized once however often it is
    /// answered.
    pub fn metadata_json(
        &self,
        location: Option<&str>,
        metadata: &Arc<TableMetadata>,
    ) -> Result<MetadataJson, serde_json::Error> {
        let cached = location
            .and_then(|location| self.cache.get(self.cached_as, location))
            .filter(|hit| Arc::ptr_eq(&hit.metadata, metadata));
        let Some(cached) = cached else {
            return to_json(metadata);
        };
        if let Some(json) = cached.json.get() {
            return Ok(json.clone());
        }
        // Two first loads at once may both serialize; either result is the same JSON.
        let json = to_json(metadata)?;
        Ok(cached.json.get_or_init(|| json).clone())
    }

    /// The whole file at `location`.
    pub async fn read_bytes(&self, location: &str) -> Result<bytes::Bytes, IoError> {
        let (store, path) = self.resolve(location)?;
        match store.get(&path).await {
            Ok(result) => result.bytes().await,
            Err(e) => Err(e),
        }
        .map_err(|e| match e {
            object_store::Error::NotFound { .. } => IoError::NotFound(location.to_owned()),
            source => IoError::Store {
                location: location.to_owned(),
                source,
            },
        })
    }

    /// The one spelling of a file's location that listing gives too
    /// (`scheme://authority/path`), so that locations written by different clients compare
    /// equal: `/w/f` and `file:///w/f` are the same file.
    pub fn file_key(&self, location: &str) -> Result<String, IoError> {
        let (_, root, path) = parse(location)?;
        Ok(format!("{root}/{path}"))
    }

    /// Every file under `location` (a directory), as [`file_key`](Self::file_key)s.
    pub async fn list_files(&self, location: &str) -> Result<Vec<StoredFile>, IoError> {
        let (store, path) = self.resolve(location)?;
        let (_, root, _) = parse(location)?;
        store
            .list(Some(&path))
            .map_ok(|meta| StoredFile {
                location: format!("{root}/{}", meta.location),
                size: meta.size,
                modified_ms: meta.last_modified.timestamp_millis(),
            })
            .try_collect()
            .await
            .map_err(|source| IoError::Store {
                location: location.to_owned(),
                source,
            })
    }

    /// Deletes the files at `locations` (all in one store); a file already gone is no error.
    pub async fn delete_files(&self, locations: &[String]) -> Result<(), IoError> {
        let Some(first) = locations.first() else {
            return Ok(());
        };
        let (store, _) = self.resolve(first)?;
        let mut paths = Vec::with_capacity(locations.len());
        for location in locations {
            let (_, path) = self.resolve(location)?;
            self.cache.remove(self.cached_as, location);
            paths.push(path);
        }
        // In batches where the store has them (S3: a thousand keys a request).
        let mut deleted =
            store.delete_stream(futures::stream::iter(paths.into_iter().map(Ok)).boxed());
        while let Some(result) = deleted.next().await {
            match result {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(source) => {
                    return Err(IoError::Store {
                        location: first.clone(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// Deletes every file under `location` (a table's directory); returns how many.
    pub async fn delete_under(&self, location: &str) -> Result<usize, IoError> {
        let files: Vec<String> = self
            .list_files(location)
            .await?
            .into_iter()
            .map(|file| file.location)
            .collect();
        self.delete_files(&files).await?;
        Ok(files.len())
    }
}

/// A location's URL, its `scheme://authority` (which names its store) and its path in that
/// store.
fn parse(location: &str) -> Result<(Url, String, Path), IoError> {
    let url = location_url(location)?;
    // The path as written, not decoded as a URL path: clients read and write a location's
    // files by its literal path, where `#`, `?` and `%` are parts of names.
    let path = Path::parse(literal_path(location)).map_err(|e| IoError::InvalidLocation {
        location: location.to_owned(),
        reason: e.to_string(),
    })?;
    let root = format!("{}://{}", url.scheme(), url.authority());
    Ok((url, root, path))
}

/// The table property naming the folder of a table's metadata files instead of
/// `<location>/metadata` (`TableProperties.WRITE_METADATA_LOCATION` of the reference
/// implementation; PyIceberg's location provider reads it too).
pub const WRITE_METADATA_PATH: &str = "write.metadata.path";

/// Where the next metadata file of a table goes: `<location>/metadata/<NNNNN>-<uuid>.metadata.json`,
/// numbered one above the file it replaces.
pub fn next_metadata_location(table_location: &str, previous: Option<&str>) -> String {
    next_metadata_file(
        &format!("{}/metadata", table_location.trim_end_matches('/')),
        previous,
    )
}

/// As [`next_metadata_location`] for the table `metadata` describes, in the folder its
/// [`WRITE_METADATA_PATH`] property names when set (as the reference implementation does).
pub fn next_table_metadata_location(metadata: &TableMetadata, previous: Option<&str>) -> String {
    match metadata
        .properties
        .get(WRITE_METADATA_PATH)
        .map(|folder| folder.trim_end_matches('/'))
        .filter(|folder| !folder.is_empty())
    {
        Some(folder) => next_metadata_file(folder, previous),
        None => next_metadata_location(&metadata.location, previous),
    }
}

/// `<folder>/<NNNNN>-<uuid>.metadata.json`, numbered one above `previous`.
fn next_metadata_file(folder: &str, previous: Option<&str>) -> String {
    let version = previous
        .and_then(|p| p.rsplit('/').next())
        .and_then(|file| file.split('-').next())
        .and_then(|n| n.parse::<u64>().ok())
        .map_or(0, |n| n + 1);
    format!(
        "{folder}/{version:05}-{}.metadata.json",
        uuid::Uuid::new_v4()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_files_are_numbered_after_the_previous_one() {
        let first = next_metadata_location("file:///w/t/", None);
        assert!(first.starts_with("file:///w/t/metadata/00000-"), "{first}");
        assert!(first.ends_with(".metadata.json"));
        let second = next_metadata_location("file:///w/t", Some(&first));
        assert!(
            second.starts_with("file:///w/t/metadata/00001-"),
            "{second}"
        );
        let odd = next_metadata_location("s3://b/t", Some("s3://b/t/metadata/v3.metadata.json"));
        assert!(odd.starts_with("s3://b/t/metadata/00000-"), "{odd}");
    }

    fn table(location: &str) -> TableMetadata {
        let schema = serde_json::from_value(serde_json::json!({
            "type": "struct", "schema-id": 0,
            "fields": [{ "id": 1, "name": "id", "type": "long", "required": true }],
        }))
        .unwrap();
        let table = super::super::NewTable {
            location: location.to_owned(),
            schema,
            partition_spec: None,
            sort_order: None,
            properties: Default::default(),
        };
        super::super::new_table_metadata(table, 1_700_000_000_000).unwrap()
    }

    #[tokio::test]
    async fn a_file_is_serialized_once_for_the_disk_and_every_answer() {
        let dir = tempfile::tempdir().unwrap();
        let root = format!("file://{}", dir.path().display());
        let io = FileIo::new(16 << 20);
        let written = Arc::new(table(&format!("{root}/t")));
        let location = next_metadata_location(&written.location, None);
        io.write_metadata(&location, written.clone()).await.unwrap();

        let answered = io.metadata_json(Some(&location), &written).unwrap();
        let on_disk = io.read_bytes(&location).await.unwrap();
        assert_eq!(answered.get().as_bytes(), &on_disk[..]);
        let again = io.metadata_json(Some(&location), &written).unwrap();
        assert!(Arc::ptr_eq(&answered, &again), "kept, not serialized again");

        // A file read (not written) here: serialized on the first answer, then kept.
        let reader = FileIo::new(16 << 20);
        let read = reader.read_metadata(&location).await.unwrap();
        let first = reader.metadata_json(Some(&location), &read).unwrap();
        let second = reader.metadata_json(Some(&location), &read).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(first.get(), answered.get());
    }

    #[tokio::test]
    async fn other_metadata_never_gets_a_files_json() {
        let dir = tempfile::tempdir().unwrap();
        let root = format!("file://{}", dir.path().display());
        let io = FileIo::new(16 << 20);
        let written = Arc::new(table(&format!("{root}/t")));
        let location = next_metadata_location(&written.location, None);
        io.write_metadata(&location, written.clone()).await.unwrap();

        // Same location, other metadata (changed in memory, or a stale copy): its own JSON.
        let mut changed = TableMetadata::clone(&written);
        changed.properties.insert("k".to_owned(), "v".to_owned());
        let changed = Arc::new(changed);
        let json = io.metadata_json(Some(&location), &changed).unwrap();
        let value: serde_json::Value = serde_json::from_str(json.get()).unwrap();
        assert_eq!(value["properties"]["k"], "v");
        // Without a location, or once evicted, the metadata is serialized as it is.
        let plain = io.metadata_json(None, &written).unwrap();
        assert_eq!(plain.get(), to_json(&written).unwrap().get());
        let elsewhere = io.metadata_json(Some("file:///nowhere"), &written).unwrap();
        assert_eq!(elsewhere.get(), plain.get());
    }

    #[test]
    fn locations_are_urls_or_absolute_paths() {
        assert_eq!(location_url("/tmp/w").unwrap().as_str(), "file:///tmp/w");
        assert_eq!(location_url("s3://b/k").unwrap().scheme(), "s3");
        assert!(location_url("relative/path").is_err());
    }
}
