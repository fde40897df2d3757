//! Iceberg table metadata: the `metadata.json` model, the commit updates and requirements that
//! change it, new-table creation, and the files in the warehouse that hold it.

pub mod create;
pub mod describe;
pub mod io;
pub mod metadata;
pub mod requirement;
pub mod update;

pub use create::{NewTable, new_table_metadata};
pub use io::{FileIo, IoError};
pub use metadata::TableMetadata;
pub use requirement::{RequirementFailed, TableRequirement};
pub use update::{MetadataBuilder, TableUpdate, UpdateError};
