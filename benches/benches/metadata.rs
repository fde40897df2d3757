//! Iceberg table metadata on a table's hot paths: reading a `metadata.json` (a load that
//! misses the cache) and building the next metadata of an append (every commit), for tables
//! with 1 to 1,000 snapshots and 10 schemas of 50 columns. Both run every check the server
//! makes of what it reads and writes.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pangolin_catalog::iceberg::{MetadataBuilder, TableMetadata, TableUpdate};
use serde_json::{Value, json};

const COLUMNS: i32 = 50;
const SCHEMAS: i32 = 10;

fn schema(id: i32) -> Value {
    // Each schema adds one column to the one before, as a table evolves.
    let fields: Vec<Value> = (1..=COLUMNS + id)
        .map(|i| {
            let kind = ["long", "string", "timestamptz", "double", "decimal(9, 2)"][i as usize % 5];
            json!({"id": i, "name": format!("c{i}"), "required": i == 1, "type": kind})
        })
        .collect();
    json!({"type": "struct", "schema-id": id, "identifier-field-ids": [1], "fields": fields})
}

/// A v2 table's metadata with `snapshots` appends, each the parent of the next.
fn metadata(snapshots: i64) -> Value {
    let snapshot = |i: i64| {
        let mut s = json!({
            "snapshot-id": i + 1, "sequence-number": i + 1, "timestamp-ms": 1_700_000_000_000_i64 + i,
            "manifest-list": format!("s3://lake/t/metadata/snap-{}.avro", i + 1),
            "summary": {"operation": "append", "added-records": "10", "total-records": "100"},
            "schema-id": SCHEMAS - 1
        });
        if i > 0 {
            s["parent-snapshot-id"] = json!(i);
        }
        s
    };
    json!({
        "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://lake/t", "last-sequence-number": snapshots,
        "last-updated-ms": 1_700_000_000_000_i64 + snapshots, "last-column-id": COLUMNS + SCHEMAS - 1,
        "schemas": (0..SCHEMAS).map(schema).collect::<Vec<_>>(), "current-schema-id": SCHEMAS - 1,
        "partition-specs": [{"spec-id": 0, "fields": [
            {"name": "c2_day", "transform": "day", "source-id": 2, "field-id": 1000}]}],
        "default-spec-id": 0, "last-partition-id": 1000,
        "properties": {"owner": "bench"},
        "current-snapshot-id": snapshots,
        "snapshots": (0..snapshots).map(snapshot).collect::<Vec<_>>(),
        "snapshot-log": (0..snapshots)
            .map(|i| json!({"snapshot-id": i + 1, "timestamp-ms": 1_700_000_000_000_i64 + i}))
            .collect::<Vec<_>>(),
        "metadata-log": [],
        "sort-orders": [{"order-id": 0, "fields": []}], "default-sort-order-id": 0,
        "refs": {"main": {"snapshot-id": snapshots, "type": "branch"}}
    })
}

fn append(snapshots: i64) -> Vec<TableUpdate> {
    let id = snapshots + 1;
    serde_json::from_value(json!([
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": id, "parent-snapshot-id": snapshots, "sequence-number": id,
            "timestamp-ms": 1_800_000_000_000_i64, "manifest-list": "s3://lake/t/metadata/snap-new.avro",
            "summary": {"operation": "append", "added-records": "10"}, "schema-id": SCHEMAS - 1}},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": id}
    ]))
    .expect("valid updates")
}

fn metadata_paths(c: &mut Criterion) {
    let mut parse = c.benchmark_group("metadata/parse");
    for snapshots in [1_i64, 100, 1_000] {
        let bytes = serde_json::to_vec(&metadata(snapshots)).expect("json");
        parse.bench_with_input(
            BenchmarkId::from_parameter(snapshots),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let meta: TableMetadata =
                        serde_json::from_slice(bytes).expect("valid metadata");
                    meta.validate().expect("valid metadata");
                    black_box(meta)
                });
            },
        );
    }
    parse.finish();
    let mut commit = c.benchmark_group("metadata/append");
    for snapshots in [1_i64, 100, 1_000] {
        let base: TableMetadata = serde_json::from_value(metadata(snapshots)).expect("metadata");
        let updates = append(snapshots);
        commit.bench_with_input(BenchmarkId::from_parameter(snapshots), &base, |b, base| {
            b.iter(|| {
                let mut builder = MetadataBuilder::new(base.clone());
                builder
                    .apply_all(&updates, 1_800_000_000_001)
                    .expect("an append applies");
                black_box(builder.build(1_800_000_000_001).expect("valid"))
            });
        });
    }
    commit.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = metadata_paths
}
criterion_main!(benches);
