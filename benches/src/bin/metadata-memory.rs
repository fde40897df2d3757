//! How much memory a parsed table metadata file holds against the file's size: the figure the
//! metadata cache weighs its entries by.
//!
//! `cargo run --release -p pangolin-benches --bin metadata-memory` builds metadata files of
//! thirty columns and 10, 100 and 500 snapshots with an engine's summaries, parses many copies
//! of each and keeps them, and reports the growth of the process's resident memory per byte
//! of file: parsed, and parsed plus its JSON as answers embed it. Everything measured stays
//! allocated to the end, so no measurement reuses memory another freed.

use std::collections::BTreeMap;

use anyhow::Context;
use pangolin_catalog::iceberg::TableMetadata;
use serde_json::{Value, json};

/// Resident memory of this process, in bytes.
fn resident() -> anyhow::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").context("reading /proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .context("statm has no resident field")?
        .parse()?;
    Ok(pages * 4096)
}

fn metadata(snapshots: u64) -> Value {
    let types = ["long", "string", "double", "timestamp", "boolean"];
    let fields: Vec<Value> = (0..30)
        .map(|i| json!({"id": i + 1, "name": format!("col_{i}"), "required": false, "type": types[i % 5]}))
        .collect();
    let start = 1_700_000_000_000_u64;
    let location = "s3://bucket/warehouse/db/events";
    let snapshot = |i: u64| {
        let id = 1000 + i;
        let mut s = json!({
            "snapshot-id": id,
            "sequence-number": i + 1,
            "timestamp-ms": start + i,
            "manifest-list": format!("{location}/metadata/snap-{id}-1-{}.avro", uuid::Uuid::new_v4()),
            "schema-id": 0,
            "summary": {
                "operation": "append", "added-data-files": "3", "added-records": "12345",
                "added-files-size": "456789", "changed-partition-count": "2",
                "total-records": (12_345 * (i + 1)).to_string(),
                "total-files-size": (456_789 * (i + 1)).to_string(),
                "total-data-files": (3 * (i + 1)).to_string(), "total-delete-files": "0",
                "total-position-deletes": "0", "total-equality-deletes": "0",
                "spark.app.id": "local-1700000000000", "engine-version": "3.5.1",
                "iceberg-version": "Apache Iceberg 1.6.1",
            },
        });
        if i > 0 {
            s["parent-snapshot-id"] = json!(id - 1);
        }
        s
    };
    let last = 1000 + snapshots - 1;
    json!({
        "format-version": 2,
        "table-uuid": uuid::Uuid::new_v4(),
        "location": location,
        "last-sequence-number": snapshots,
        "last-updated-ms": start + snapshots,
        "last-column-id": 30,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": fields}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": [
            {"name": "col_3_day", "transform": "day", "source-id": 4, "field-id": 1000}]}],
        "last-partition-id": 1000,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {"write.format.default": "parquet"},
        "current-snapshot-id": last,
        "refs": {"main": {"snapshot-id": last, "type": "branch"}},
        "snapshots": (0..snapshots).map(snapshot).collect::<Vec<_>>(),
        "snapshot-log": (0..snapshots)
            .map(|i| json!({"snapshot-id": 1000 + i, "timestamp-ms": start + i}))
            .collect::<Vec<_>>(),
        "metadata-log": (0..snapshots.min(100))
            .map(|i| json!({
                "metadata-file": format!("{location}/metadata/{i:05}-{}.metadata.json", uuid::Uuid::new_v4()),
                "timestamp-ms": start + i,
            }))
            .collect::<Vec<_>>(),
    })
}

fn main() -> anyhow::Result<()> {
    let mut kept: Vec<(Vec<TableMetadata>, Vec<Box<serde_json::value::RawValue>>)> = Vec::new();
    let mut rows = BTreeMap::new();
    for snapshots in [10, 100, 500] {
        let file = serde_json::to_vec(&metadata(snapshots))?;
        // About 100 MB of files per case: far above the allocator's noise.
        let copies = (100_000_000 / file.len()).max(1);
        let before = resident()?;
        let mut parsed = Vec::with_capacity(copies);
        for _ in 0..copies {
            parsed.push(serde_json::from_slice::<TableMetadata>(&file)?);
        }
        let after_parse = resident()?;
        let json = parsed
            .iter()
            .map(serde_json::value::to_raw_value)
            .collect::<Result<Vec<_>, _>>()?;
        let after_json = resident()?;
        let bytes = (file.len() * copies) as f64;
        rows.insert(
            snapshots,
            (
                file.len(),
                (after_parse - before) as f64 / bytes,
                (after_json - before) as f64 / bytes,
            ),
        );
        kept.push((parsed, json));
    }
    println!("| snapshots | file bytes | parsed / file | parsed and JSON / file |");
    println!("|---:|---:|---:|---:|");
    for (snapshots, (size, parsed, both)) in rows {
        println!("| {snapshots} | {size} | {parsed:.2} | {both:.2} |");
    }
    drop(kept);
    Ok(())
}
