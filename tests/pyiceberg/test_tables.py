"""PyIceberg's REST client against Pangolin: tables, data, evolution, refs and branches."""

import json
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    BadRequestError,
    CommitFailedException,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "city", StringType(), required=False),
)


def rows(*pairs):
    return pa.table(
        {"id": pa.array([p[0] for p in pairs], pa.int64()), "city": pa.array([p[1] for p in pairs], pa.string())}
    )


def read(table):
    return sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())


def http(server_url, method, path, body=None, raw=None, headers=None):
    """A plain HTTP call, for what PyIceberg cannot send (bad input, the management API)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(f"{server_url}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        request.add_header(k, v)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        return e.code, json.loads(text) if text else None


def head_of(server_url, ref="main"):
    status, body = http(server_url, "GET", f"/api/v1/catalogs/default/refs/{ref}")
    assert status == 200, body
    return body["hash"]


def test_create_append_overwrite_and_read_back(catalog, unique):
    catalog.create_namespace(unique)
    table = catalog.create_table(f"{unique}.cities", SCHEMA)
    assert table.metadata.format_version == 2
    assert table.metadata_location.endswith(".metadata.json")
    assert "/metadata/00000-" in table.metadata_location

    table.append(rows((1, "Lisbon"), (2, "Porto")))
    table.append(rows((3, "Braga")))
    loaded = catalog.load_table(f"{unique}.cities")
    assert read(loaded) == [(1, "Lisbon"), (2, "Porto"), (3, "Braga")]
    assert len(loaded.metadata.snapshots) == 2
    assert len(loaded.metadata.metadata_log) == 2
    assert "/metadata/00002-" in loaded.metadata_location

    loaded.overwrite(rows((9, "Faro")))
    assert read(catalog.load_table(f"{unique}.cities")) == [(9, "Faro")]
    assert catalog.list_tables(unique) == [(unique, "cities")]
    assert catalog.table_exists(f"{unique}.cities")
    assert not catalog.table_exists(f"{unique}.nope")


def test_partitioned_sorted_and_located_tables(catalog, unique):
    catalog.create_namespace(unique)
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="city"))
    order = SortOrder(SortField(source_id=1, transform=IdentityTransform()))
    # A location of the client's choosing, below the warehouse (the server refuses others).
    probe = catalog.create_table(f"{unique}.probe", SCHEMA)
    warehouse = probe.location().rsplit("/", 2)[0]
    location = f"{warehouse}/explicit-{unique}"
    tmp_path = Path(warehouse.removeprefix("file://")) / f"explicit-{unique}"
    table = catalog.create_table(
        f"{unique}.events", SCHEMA, partition_spec=spec, sort_order=order, location=location, properties={"owner": "ana"}
    )
    assert table.location() == location
    assert table.spec().fields[0].name == "city"
    assert table.sort_order().order_id == 1
    assert table.properties["owner"] == "ana"
    table.append(rows((1, "Lisbon"), (2, "Porto"), (3, "Lisbon")))
    assert read(catalog.load_table(f"{unique}.events")) == [(1, "Lisbon"), (2, "Porto"), (3, "Lisbon")]
    assert (tmp_path / "metadata").is_dir()
    partitions = {p.name for p in (tmp_path / "data").iterdir()}
    assert partitions == {"city=Lisbon", "city=Porto"}


def test_staged_create_is_invisible_until_committed(catalog, unique):
    catalog.create_namespace(unique)
    tx = catalog.create_table_transaction(f"{unique}.staged", SCHEMA, properties={"stage": "yes"})
    assert not catalog.table_exists(f"{unique}.staged")
    tx.append(rows((1, "Lisbon")))
    tx.commit_transaction()
    table = catalog.load_table(f"{unique}.staged")
    assert table.properties["stage"] == "yes"
    assert read(table) == [(1, "Lisbon")]


def test_create_errors(catalog, unique):
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table(f"{unique}_missing.t", SCHEMA)
    catalog.create_namespace(unique)
    catalog.create_table(f"{unique}.t", SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(f"{unique}.t", SCHEMA)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{unique}.missing")


def test_schema_partition_sort_and_property_evolution(catalog, unique):
    catalog.create_namespace(unique)
    table = catalog.create_table(f"{unique}.evolving", SCHEMA)
    table.append(rows((1, "Lisbon")))

    with table.update_schema() as update:
        update.add_column("country", StringType())
        update.rename_column("city", "town")
    with table.update_spec() as update:
        update.add_identity("country")
    with table.update_sort_order() as update:
        update.asc("id", IdentityTransform())
    with table.transaction() as tx:
        tx.set_properties(tier="gold", owner="ana")
    with table.transaction() as tx:
        tx.remove_properties("owner")

    loaded = catalog.load_table(f"{unique}.evolving")
    assert [f.name for f in loaded.schema().fields] == ["id", "town", "country"]
    assert loaded.metadata.current_schema_id == 1
    assert loaded.metadata.last_column_id == 3
    assert [f.name for f in loaded.spec().fields] == ["country"]
    assert loaded.spec().fields[0].field_id == 1000
    assert loaded.sort_order().order_id == 1
    assert loaded.properties.get("tier") == "gold"
    assert "owner" not in loaded.properties
    loaded.append(
        pa.table({"id": pa.array([2], pa.int64()), "town": pa.array(["Porto"]), "country": pa.array(["PT"])})
    )
    assert sorted(r["id"] for r in loaded.scan().to_arrow().to_pylist()) == [1, 2]


def test_snapshot_refs_and_time_travel_by_snapshot_id(catalog, unique):
    catalog.create_namespace(unique)
    table = catalog.create_table(f"{unique}.history", SCHEMA)
    table.append(rows((1, "Lisbon")))
    first = table.current_snapshot().snapshot_id
    table.append(rows((2, "Porto")))

    table.manage_snapshots().create_tag(first, "v1").create_branch(first, "audit").commit()
    loaded = catalog.load_table(f"{unique}.history")
    assert loaded.metadata.refs["v1"].snapshot_id == first
    assert loaded.metadata.refs["audit"].snapshot_ref_type.value == "branch"
    assert sorted(r["id"] for r in loaded.scan(snapshot_id=first).to_arrow().to_pylist()) == [1]
    assert sorted(r["id"] for r in loaded.scan().to_arrow().to_pylist()) == [1, 2]

    table.manage_snapshots().remove_tag("v1").commit()
    assert "v1" not in catalog.load_table(f"{unique}.history").metadata.refs


def test_rename_drop_and_purge(catalog, unique, server_url):
    catalog.create_namespace(unique)
    catalog.create_namespace(f"{unique}_other")
    table = catalog.create_table(f"{unique}.before", SCHEMA)
    table.append(rows((1, "Lisbon")))
    uuid = table.metadata.table_uuid

    catalog.rename_table(f"{unique}.before", f"{unique}_other.after")
    assert not catalog.table_exists(f"{unique}.before")
    moved = catalog.load_table(f"{unique}_other.after")
    assert moved.metadata.table_uuid == uuid
    assert read(moved) == [(1, "Lisbon")]

    catalog.drop_table(f"{unique}_other.after")
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{unique}_other.after")

    purged = catalog.create_table(f"{unique}.purged", SCHEMA)
    purged.append(rows((2, "Porto")))
    directory = purged.location().removeprefix("file://")
    import os

    assert os.path.isdir(directory)
    catalog.purge_table(f"{unique}.purged")
    assert not catalog.table_exists(f"{unique}.purged")
    assert not any(files for _, _, files in os.walk(directory))


def test_concurrent_appends_from_two_clients(server_url, unique, caplog):
    a = RestCatalog("a", uri=server_url)
    b = RestCatalog("b", uri=server_url)
    a.create_namespace(unique)
    a.create_table(f"{unique}.shared", SCHEMA)
    table_a = a.load_table(f"{unique}.shared")
    table_b = b.load_table(f"{unique}.shared")

    table_a.append(rows((1, "Lisbon")))
    # B still holds the metadata from before A's append: the server refuses its commit (409)
    # and PyIceberg refreshes and retries, so nothing is lost.
    with caplog.at_level("WARNING", logger="pyiceberg.table"):
        table_b.append(rows((2, "Porto")))
    assert any("concurrent update" in r.message for r in caplog.records), "B had to retry"
    assert read(a.load_table(f"{unique}.shared")) == [(1, "Lisbon"), (2, "Porto")]
    assert len(a.load_table(f"{unique}.shared").metadata.snapshots) == 2


def test_parallel_appends_retrying_until_they_land(server_url, unique):
    setup = RestCatalog("setup", uri=server_url)
    setup.create_namespace(unique)
    setup.create_table(f"{unique}.busy", SCHEMA)
    errors, retries = [], []

    def writer(n):
        client = RestCatalog(f"w{n}", uri=server_url)
        for attempt in range(50):
            try:
                client.load_table(f"{unique}.busy").append(rows((n, f"city{n}")))
                return
            except CommitFailedException:
                retries.append(n)
        errors.append(f"writer {n} never landed")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [r[0] for r in read(setup.load_table(f"{unique}.busy"))] == [0, 1, 2, 3]


def test_branch_workflow_write_on_dev_merge_and_read_the_past(catalog, unique, server_url):
    catalog.create_namespace(unique)
    table = catalog.create_table(f"{unique}.sales", SCHEMA)
    table.append(rows((1, "Lisbon")))
    before_branch = head_of(server_url)
    time.sleep(0.01)
    moment = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
    time.sleep(0.01)

    branch = f"dev-{unique}"
    status, body = http(server_url, "POST", "/api/v1/catalogs/default/refs", {"name": branch, "from": "main"})
    assert status == 201, body
    assert body["hash"] == before_branch

    on_dev = catalog.load_table(f"{unique}.sales@{branch}")
    on_dev.append(rows((2, "Porto")))
    assert read(catalog.load_table(f"{unique}.sales@{branch}")) == [(1, "Lisbon"), (2, "Porto")]
    assert read(catalog.load_table(f"{unique}.sales")) == [(1, "Lisbon")]
    assert head_of(server_url) == before_branch, "writing on dev leaves main alone"

    # A table created on the branch is invisible on main until merged.
    catalog.create_table(f"{unique}.new_on_dev@{branch}", SCHEMA)
    assert not catalog.table_exists(f"{unique}.new_on_dev")

    # A session can default to the branch through its warehouse.
    dev_session = RestCatalog("dev", uri=server_url, warehouse=f"default@{branch}")
    assert read(dev_session.load_table(f"{unique}.sales")) == [(1, "Lisbon"), (2, "Porto")]

    status, body = http(server_url, "POST", "/api/v1/catalogs/default/merge", {"source": branch, "target": "main"})
    assert status == 200, body
    assert body["result"] == "fast-forward"
    assert read(catalog.load_table(f"{unique}.sales")) == [(1, "Lisbon"), (2, "Porto")]
    assert catalog.table_exists(f"{unique}.new_on_dev")

    # The past of main: by commit hash and by time. Tuple identifiers keep the dots in times.
    old = catalog.load_table((unique, f"sales@main#{before_branch[:12]}"))
    assert read(old) == [(1, "Lisbon")]
    then = catalog.load_table((unique, f"sales@main#{moment}"))
    assert read(then) == [(1, "Lisbon")]
    with pytest.raises(NoSuchTableError):
        catalog.load_table((unique, f"new_on_dev@main#{before_branch[:12]}"))

    # The past is read-only.
    with pytest.raises(Exception, match="read-only"):
        old.append(rows((3, "Braga")))
    assert read(catalog.load_table(f"{unique}.sales")) == [(1, "Lisbon"), (2, "Porto")]


def test_bad_input_is_refused_and_changes_nothing(catalog, unique, server_url):
    catalog.create_namespace(unique)
    catalog.create_table(f"{unique}.t", SCHEMA)
    base = f"/v1/default/namespaces/{unique}/tables"
    head = head_of(server_url)

    cases = [
        ("POST", base, None, b"{not json", 400),
        ("POST", base, {"name": "x", "schema": "not a schema"}, None, 400),
        ("POST", base, {"name": "x", "schema": SCHEMA.model_dump(by_alias=True), "color": "red"}, None, 400),
        ("POST", base, {"name": "bad\u0001name", "schema": SCHEMA.model_dump(by_alias=True)}, None, 400),
        ("POST", f"/v1/default/namespaces/{unique}_missing/tables", {"name": "x", "schema": SCHEMA.model_dump(by_alias=True)}, None, 404),
        ("POST", f"{base}/t", {"requirements": [], "updates": [{"action": "make-it-fast"}]}, None, 400),
        ("POST", f"{base}/t", {"requirements": [{"type": "assert-vibes"}], "updates": []}, None, 400),
        ("POST", f"{base}/t", {"requirements": [], "updates": [{"action": "set-current-schema", "schema-id": 42}]}, None, 400),
        ("POST", f"{base}/t", None, b"x" * (9 << 20), 413),
    ]
    for method, path, body, raw, expected in cases:
        status, answer = http(server_url, method, path, body=body, raw=raw)
        assert status == expected, (path, body if raw is None else raw[:20], answer)
        assert answer["error"]["code"] == expected
        assert answer["error"]["message"], answer
        assert answer["error"]["type"].endswith("Exception"), answer
    assert head_of(server_url) == head, "no refused request moved the branch"
    assert [t for t in catalog.list_tables(unique)] == [(unique, "t")]


@pytest.mark.parametrize("version", [1, 2])
def test_format_versions_one_and_two(catalog, unique, version):
    catalog.create_namespace(unique)
    table = catalog.create_table(f"{unique}.v{version}", SCHEMA, properties={"format-version": str(version)})
    assert table.metadata.format_version == version
    table.append(rows((1, "Lisbon")))
    table.append(rows((2, "Porto")))
    loaded = catalog.load_table(f"{unique}.v{version}")
    assert read(loaded) == [(1, "Lisbon"), (2, "Porto")]
    assert "format-version" not in loaded.properties


def test_format_version_three_tables_are_created(catalog, unique):
    # PyIceberg 0.12 can neither write version 3 manifests nor upgrade to 3: metadata only.
    catalog.create_namespace(unique)
    table = catalog.create_table(f"{unique}.v3", SCHEMA, properties={"format-version": "3"})
    assert table.metadata.format_version == 3
    assert table.metadata.next_row_id == 0
    assert catalog.load_table(f"{unique}.v3").metadata.format_version == 3


def test_a_location_outside_the_warehouse_is_refused(catalog, unique, tmp_path):
    catalog.create_namespace(unique)
    with pytest.raises(BadRequestError, match="outside the catalog's warehouse"):
        catalog.create_table(f"{unique}.escapes", SCHEMA, location=f"file://{tmp_path}/elsewhere")
    assert not catalog.table_exists(f"{unique}.escapes")
    assert not (tmp_path / "elsewhere").exists()
