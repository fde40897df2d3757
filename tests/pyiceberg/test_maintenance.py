"""Snapshot expiry through the CLI against the real server, read back with PyIceberg: the
branch keeps the newest snapshots and every row, other branches and earlier commits keep
every snapshot they had (and can still be scanned at them), a dry run changes nothing."""

import datetime
import json
import os
import subprocess
import uuid

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


@pytest.fixture(autouse=True)
def no_profiles(tmp_path, monkeypatch):
    """The client reads no saved profile of whoever runs the tests."""
    monkeypatch.setenv("PANGOLIN_CONFIG_DIR", str(tmp_path / "config"))


def cli(server, *args):
    done = subprocess.run(
        [os.environ["PANGOLIN_BIN"], *args, "--server", server, "--catalog", "default"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def expire(server, *args):
    future = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)).isoformat()
    return json.loads(cli(server, "maintenance", "expire", "--older-than", future, "--json", *args))


def head(server, ref):
    answer = requests.get(f"{server}/api/v1/catalogs/default/refs/{ref}", timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["hash"]


def ids(table):
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_expiry_keeps_the_newest_snapshots_and_every_row_and_touches_no_other_branch(server_url):
    rest = RestCatalog("pangolin", uri=server_url)
    ns = f"m_{uuid.uuid4().hex[:8]}"
    rest.create_namespace(ns)
    table = rest.create_table(f"{ns}.events", SCHEMA)
    for i in range(4):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    first = rest.load_table(f"{ns}.events").snapshots()[0].snapshot_id
    dev = f"dev-{uuid.uuid4().hex[:8]}"
    cli(server_url, "branch", "create", dev)
    before = head(server_url, "main")

    planned = expire(server_url, "--retain-last", "2", "--dry-run")
    ours = [t for t in planned["tables"] if t["key"] == [ns, "events"]]
    assert len(ours) == 1 and len(ours[0]["expired"]) == 2 and ours[0]["kept"] == 2, planned
    assert planned["commit"] is None and head(server_url, "main") == before

    done = expire(server_url, "--retain-last", "2")
    assert done["commit"] == head(server_url, "main") and done["commit"] != before
    main_table = rest.load_table(f"{ns}.events")
    assert len(main_table.snapshots()) == 2
    assert ids(main_table) == [0, 1, 2, 3], "the current snapshot still reads every row"

    dev_table = RestCatalog("pangolin", uri=server_url, warehouse=f"default@{dev}").load_table(f"{ns}.events")
    assert len(dev_table.snapshots()) == 4, "another branch keeps its snapshots"
    old = RestCatalog("pangolin", uri=server_url, warehouse=f"default@main#{before}").load_table(f"{ns}.events")
    assert len(old.snapshots()) == 4, "the commit before the expiry keeps its snapshots"
    assert sorted(old.scan(snapshot_id=first).to_arrow().column("id").to_pylist()) == [0]

    log = requests.get(f"{server_url}/api/v1/catalogs/default/log?ref=main&pageSize=1", timeout=30).json()
    assert log["commits"][0]["properties"]["operation"] == "expire-snapshots"
