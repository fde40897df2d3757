//! Iceberg table and view metadata: the `metadata.json` models, the commit updates and
//! requirements that change them, creation, and the files in the warehouse that hold them.

pub mod create;
pub mod default_value;
pub mod describe;
pub mod expire;
pub mod io;
pub mod json_io;
mod local;
pub mod manifest;
pub mod manifest_list;
pub mod metadata;
pub mod metadata_cache;
pub mod partition;
pub mod requirement;
pub mod schema;
pub mod sort;
pub mod storage;
pub mod table_merge;
pub mod transform;
pub mod types;
pub mod update;
pub mod view;

pub use create::{NewTable, new_table_metadata};
pub use io::{FileIo, IoError, MetadataJson};
pub use metadata::TableMetadata;
pub use metadata_cache::MetadataCache;
pub use requirement::{RequirementFailed, TableRequirement};
pub use storage::{
    AzureSettings, DEFAULT_S3_REGION, GcsSettings, S3Settings, Secret, StorageOptions,
};
pub use update::{MetadataBuilder, TableUpdate, UpdateError};
pub use view::{
    NewView, ViewMetadata, ViewMetadataBuilder, ViewRequirement, ViewUpdate, ViewUpdateError,
    ViewVersion, new_view_metadata,
};
