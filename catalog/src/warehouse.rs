//! Where a catalog's table files live.

use std::sync::Arc;

use crate::iceberg::FileIo;

/// A storage location for table data and metadata, and the file access to reach it.
#[derive(Debug, Clone)]
pub struct Warehouse {
    /// Base location (`file:///...`, `s3://bucket/prefix`); new tables go below it.
    pub root: String,
    pub io: Arc<FileIo>,
}

impl Warehouse {
    pub fn new(root: impl Into<String>, io: Arc<FileIo>) -> Self {
        let root: String = root.into();
        Self {
            root: root.trim_end_matches('/').to_owned(),
            io,
        }
    }
}
