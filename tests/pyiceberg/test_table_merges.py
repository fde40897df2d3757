"""Merging one table that two branches both appended to, with PyIceberg writing and reading
through the real server: with `table-merge` on, the merge combines both sides' rows into one
table PyIceberg reads whole; without it, or when a side overwrote, it stays a conflict that
says why."""

import uuid

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from pangolin_client import ConflictError, PangolinClient

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "side", StringType(), required=False),
)


@pytest.fixture
def client(secure_server):
    with PangolinClient(secure_server.url, username="root", password=secure_server.root_password) as client:
        yield client


def rows(side, *ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "side": pa.array([side] * len(ids), pa.string())})


def read(client, ref, name):
    table = client.catalog(ref=ref).load_table(name)
    return sorted(zip(*[table.scan().to_arrow()[c].to_pylist() for c in ("id", "side")]))


def duckdb_reads(metadata_location):
    """What DuckDB's Iceberg extension reads of the table whose metadata file is given."""
    import duckdb
    from duckdb_extensions import import_extension

    import_extension("avro")
    import_extension("iceberg")
    connection = duckdb.connect()
    connection.sql("LOAD iceberg")
    path = metadata_location.removeprefix("file://")
    return sorted(connection.sql(f"SELECT id, side FROM iceberg_scan('{path}')").fetchall())


def setup(client):
    suffix = uuid.uuid4().hex[:8]
    namespace, target, source = f"tm_{suffix}", f"main_{suffix}", f"dev_{suffix}"
    name = f"{namespace}.orders"
    catalog = client.catalog()
    catalog.create_namespace(namespace)
    catalog.create_table(name, SCHEMA).append(rows("base", 1, 2))
    client.branch(target).create(from_="main")
    client.branch(source).create(from_="main")
    return name, target, source


def test_appends_on_both_branches_merge_into_a_table_with_every_row(client):
    name, target, source = setup(client)
    client.catalog(ref=target).load_table(name).append(rows("target", 3))
    dev = client.catalog(ref=source).load_table(name)
    dev.append(rows("source", 4))
    dev.append(rows("source", 5, 6))
    with dev.transaction() as tx:
        tx.set_properties(owner="etl")

    with pytest.raises(ConflictError) as refused:
        client.merge(source, target)
    assert refused.value.conflicts[0].kind == "both-modified"

    dry = client.merge(source, target, table_merge="auto", dry_run=True)
    assert dry.result == "merged" and dry.table_merges[0].key == name.split(".")
    assert any("2 appended snapshots" in p for p in dry.table_merges[0].plan), dry.table_merges
    assert read(client, target, name) == [(1, "base"), (2, "base"), (3, "target")]

    merged = client.merge(source, target, table_merge="auto")
    assert merged.result == "merged"
    assert read(client, target, name) == [
        (1, "base"), (2, "base"), (3, "target"), (4, "source"), (5, "source"), (6, "source")
    ]
    table = client.catalog(ref=target).load_table(name)
    assert table.properties["owner"] == "etl"
    current = table.current_snapshot()
    assert current.summary.operation.value == "append"
    assert current.summary["added-records"] == "3"
    assert current.summary["total-records"] == "6"
    assert duckdb_reads(table.metadata_location) == read(client, target, name)
    # Every file is attributed to a snapshot the merged table has: the source's files to the
    # new one.
    snapshot_ids = {s.snapshot_id for s in table.snapshots()}
    entries = table.inspect.entries().to_pydict()
    assert set(entries["snapshot_id"]) <= snapshot_ids, entries["snapshot_id"]
    assert entries["snapshot_id"].count(current.snapshot_id) == 2
    # The target's history is kept whole under the merged snapshot.
    parents = [s.snapshot_id for s in table.snapshots()]
    assert len(parents) == 3 and current.parent_snapshot_id == parents[1]
    # And the table goes on taking appends on the target.
    table.append(rows("target", 7))
    assert len(read(client, target, name)) == 7


def test_appends_that_merged_manifests_on_the_source_merge_too(client):
    name, target, source = setup(client)
    # The source's appends merge manifests (as Spark's do past 100 manifests): its later
    # manifests carry the base's file and its own earlier ones as existing entries.
    dev = client.catalog(ref=source).load_table(name)
    with dev.transaction() as tx:
        tx.set_properties(**{"commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "2"})
    dev.append(rows("source", 4))
    dev.append(rows("source", 5))
    dev.append(rows("source", 6, 7))
    entries = dev.inspect.entries().to_pydict()
    assert 0 in entries["status"], "a manifest of the source carries existing entries"
    client.catalog(ref=target).load_table(name).append(rows("target", 3))

    merged = client.merge(source, target, table_merge="auto")
    assert merged.result == "merged", merged
    expected = [(1, "base"), (2, "base"), (3, "target"), (4, "source"), (5, "source"), (6, "source"), (7, "source")]
    assert read(client, target, name) == expected
    table = client.catalog(ref=target).load_table(name)
    current = table.current_snapshot()
    assert current.summary["added-records"] == "4"
    assert current.summary["total-records"] == "7"
    assert duckdb_reads(table.metadata_location) == expected
    # Each file once, every one attributed to a snapshot the merged table has.
    live = table.inspect.entries().to_pydict()
    assert sorted(live["status"]).count(2) == 0
    paths = [f["file_path"] for f in live["data_file"]]
    assert len(paths) == len(set(paths)) == 5, paths  # the base's, the target's, the source's three
    assert set(live["snapshot_id"]) <= {s.snapshot_id for s in table.snapshots()}


def test_an_overwrite_on_one_side_stays_a_conflict_saying_so(client):
    name, target, source = setup(client)
    client.catalog(ref=target).load_table(name).append(rows("target", 3))
    client.catalog(ref=source).load_table(name).overwrite(rows("source", 9))
    with pytest.raises(ConflictError) as refused:
        client.merge(source, target, table_merge="auto")
    conflict = refused.value.conflicts[0]
    assert conflict.kind == "table-changes-overlap"
    assert "not an append" in conflict.reason
    assert read(client, target, name) == [(1, "base"), (2, "base"), (3, "target")]
