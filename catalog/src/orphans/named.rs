//! The files a table's metadata file names, read without the rest of it.
//!
//! The mark phase reads every metadata file of the retained history, and a table's files grow
//! with its history (each lists every snapshot it keeps). Building the whole
//! [`TableMetadata`](crate::iceberg::TableMetadata) of each (schemas, specs, checks) costs far
//! more than picking out the few locations the mark needs, so only those are parsed.

use serde::Deserialize;

/// What a table's metadata file names.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TableFiles {
    pub location: String,
    /// Optional in format version 1.
    #[serde(default = "uuid::Uuid::nil")]
    pub table_uuid: uuid::Uuid,
    #[serde(default)]
    pub snapshots: Vec<SnapshotFiles>,
    #[serde(default)]
    pub metadata_log: Vec<LoggedFile>,
    #[serde(default)]
    pub statistics: Vec<StatisticsFile>,
    #[serde(default)]
    pub partition_statistics: Vec<StatisticsFile>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SnapshotFiles {
    pub manifest_list: Option<String>,
    /// v1's inline list of manifests, when there is no manifest list.
    #[serde(default)]
    pub manifests: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LoggedFile {
    pub metadata_file: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StatisticsFile {
    pub statistics_path: Option<String>,
}

impl TableFiles {
    /// The files the metadata names itself: earlier metadata files and statistics files.
    pub fn referenced(&self) -> impl Iterator<Item = &str> {
        self.metadata_log
            .iter()
            .map(|e| e.metadata_file.as_str())
            .chain(
                self.statistics
                    .iter()
                    .chain(&self.partition_statistics)
                    .filter_map(|s| s.statistics_path.as_deref()),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_files_are_read_and_the_rest_is_skipped() {
        let json = r#"{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "s3://b/t", "schemas": [{"type": "struct", "fields": []}],
            "snapshots": [{"snapshot-id": 1, "manifest-list": "s3://b/t/metadata/snap-1.avro"},
                          {"snapshot-id": 2, "manifests": ["s3://b/t/metadata/m-2.avro"]}],
            "metadata-log": [{"metadata-file": "s3://b/t/metadata/00000.metadata.json",
                              "timestamp-ms": 1}],
            "statistics": [{"snapshot-id": 1, "statistics-path": "s3://b/t/stats.puffin"}],
            "partition-statistics": [{"snapshot-id": 1, "statistics-path": "s3://b/t/p.parquet"}]}"#;
        let files: TableFiles = serde_json::from_str(json).unwrap();
        assert_eq!(files.location, "s3://b/t");
        assert_eq!(
            files.snapshots[0].manifest_list.as_deref(),
            Some("s3://b/t/metadata/snap-1.avro")
        );
        assert_eq!(files.snapshots[1].manifests, ["s3://b/t/metadata/m-2.avro"]);
        assert_eq!(
            files.referenced().collect::<Vec<_>>(),
            [
                "s3://b/t/metadata/00000.metadata.json",
                "s3://b/t/stats.puffin",
                "s3://b/t/p.parquet"
            ]
        );
    }
}
