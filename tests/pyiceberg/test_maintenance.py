"""Maintenance against the real server, read back with PyIceberg.

Snapshot expiry through the CLI: the branch keeps the newest snapshots and every row, other
branches and earlier commits keep every snapshot they had (and can still be scanned at them), a
dry run changes nothing. The sweep of orphan files, over files PyIceberg wrote: the files of a
writer that died before its commit go, and so does a stray file; every snapshot that any commit
of `main` or of a branch still holds is scanned afterwards, so a file that any of them needs
and that the sweep took would fail the test. The retention policy, set through the CLI and the
Python client, refuses reads before its window."""

import datetime
import json
import os
import pathlib
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
        timeout=300,
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


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


def local(location):
    return pathlib.Path(location.removeprefix("file://"))


def files_under(location):
    return {p for p in local(location).rglob("*") if p.is_file()}


def backdate(paths, seconds=2 * 3600):
    past = datetime.datetime.now().timestamp() - seconds
    for path in paths:
        os.utime(path, (past, past))


def sweep(server, *args):
    job = json.loads(cli(server, "maintenance", "orphans", "--grace", "1h", "--json", *args))
    assert job["state"] == "succeeded", job
    return job["result"]


def ours(result, location):
    """The orphans of the sweep under the table's folder, as paths."""
    root = local(location)
    found = {local(o["location"]) for o in result["orphans"]}
    return {p for p in found if root in p.parents}


def commits(server, ref):
    answer = requests.get(
        f"{server}/api/v1/catalogs/default/log", params={"ref": ref, "pageSize": 1000}, timeout=30
    )
    assert answer.status_code == 200, answer.text
    return [c["hash"] for c in answer.json()["commits"]]


def scan_every_snapshot(server, ref, name):
    """Scans every snapshot of the table at every commit of `ref` that holds it; how many."""
    scanned = 0
    for commit in commits(server, ref):
        at = RestCatalog("pangolin", uri=server, warehouse=f"default@{ref}#{commit}")
        try:
            table = at.load_table(name)
        except Exception:  # the commits before the table was created
            continue
        for snapshot in table.snapshots():
            table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
            scanned += 1
    return scanned


def test_a_sweep_takes_a_dead_writers_files_and_keeps_every_snapshot_readable(server_url):
    rest = RestCatalog("pangolin", uri=server_url)
    ns = f"o_{uuid.uuid4().hex[:8]}"
    name = f"{ns}.events"
    rest.create_namespace(ns)
    table = rest.create_table(name, SCHEMA)
    location = table.location()
    for i in range(3):
        table.append(rows(i))
    table.overwrite(rows(10, 11))
    dev = f"dev-{uuid.uuid4().hex[:8]}"
    cli(server_url, "branch", "create", dev)
    RestCatalog("pangolin", uri=server_url, warehouse=f"default@{dev}").load_table(name).append(rows(20))
    future = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)).isoformat()
    cli(server_url, "maintenance", "expire", "--older-than", future, "--retain-last", "1")
    assert len(rest.load_table(name).snapshots()) == 1

    # A writer that died before its commit: PyIceberg wrote the data file, the manifest and
    # the manifest list, and nothing will ever reference them.
    before = files_under(location)
    rest.load_table(name).transaction().append(rows(99))
    crashed = files_under(location) - before
    assert {p.suffix for p in crashed} == {".parquet", ".avro"}, crashed
    rest.load_table(name).append(rows(12))
    stray = local(location) / "data" / "stray.parquet"
    stray.write_bytes(b"not a table's file")
    backdate(files_under(location))

    dry = sweep(server_url, "--dry-run")
    assert ours(dry, location) == crashed | {stray}
    assert dry["deleted"] == 0
    assert all(p.exists() for p in crashed | {stray}), "a dry run deletes nothing"

    done = sweep(server_url)
    assert ours(done, location) == crashed | {stray}
    assert not any(p.exists() for p in crashed | {stray})

    assert sorted(rest.load_table(name).scan().to_arrow().column("id").to_pylist()) == [10, 11, 12]
    dev_table = RestCatalog("pangolin", uri=server_url, warehouse=f"default@{dev}").load_table(name)
    assert sorted(dev_table.scan().to_arrow().column("id").to_pylist()) == [10, 11, 20]
    # Every snapshot at every commit: three appends, an overwrite (a delete and an append in
    # one commit), then the expiry (one left) and one more append; on dev, the first four
    # commits and its own append.
    assert scan_every_snapshot(server_url, "main", name) == 1 + 2 + 3 + 5 + 1 + 2
    assert scan_every_snapshot(server_url, dev, name) == 1 + 2 + 3 + 5 + 6

    again = sweep(server_url)
    assert ours(again, location) == set()
    # The same, as people read it; and the jobs the sweeps left.
    said = cli(server_url, "maintenance", "orphans", "--grace", "1h", "--dry-run")
    assert "succeeded, dry run" in said and " orphans (" in said and "; 0 deleted." in said, said
    jobs = cli(server_url, "maintenance", "jobs")
    assert jobs.count("remove-orphan-files") >= 4 and "succeeded" in jobs, jobs


def test_a_retention_policy_refuses_reads_before_its_window(server_url):
    try:
        shown = cli(server_url, "maintenance", "retention", "--history", "2h", "--branch", "keep/*=3d")
        assert shown.splitlines() == ["Commits stay readable for 120m.", "Branches matching keep/*: 3d."]
        policy = json.loads(cli(server_url, "maintenance", "retention", "--json"))["retention"]
        assert policy == {"history-ms": 7_200_000, "branches": [{"pattern": "keep/*", "history-ms": 259_200_000}]}
        with pytest.raises(Exception, match="2020-01-01T00:00:00Z is older than this catalog keeps its history"):
            RestCatalog("pangolin", uri=server_url, warehouse="default@main#2020-01-01T00:00:00Z").list_namespaces()
        # The branch itself, and a moment ago, are read as before.
        RestCatalog("pangolin", uri=server_url).list_namespaces()
        moment = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)).isoformat()
        RestCatalog("pangolin", uri=server_url, warehouse=f"default@main#{moment}").list_namespaces()
    finally:
        assert cli(server_url, "maintenance", "retention", "--clear").strip() == "The catalog keeps its whole history."


def test_the_python_client_sets_and_clears_a_policy(secure_server):
    from pangolin_client import BadRequestError, PangolinClient

    with PangolinClient(secure_server.url, username="root", password=secure_server.root_password) as client:
        assert client.retention() is None
        try:
            policy = client.set_retention(3_600_000, {"keep/*": 86_400_000})
            assert policy.history_ms == 3_600_000
            assert [(b.pattern, b.history_ms) for b in policy.branches] == [("keep/*", 86_400_000)]
            assert client.retention() == policy
            with pytest.raises(BadRequestError, match="older than this catalog keeps"):
                client.get_ref("main#2020-01-01T00:00:00Z")
            with pytest.raises(BadRequestError, match="at least"):
                client.set_retention(1000)
        finally:
            client.clear_retention()
        assert client.retention() is None


def test_object_collection_keeps_what_history_may_still_read(server_url):
    from pangolin_client import CollectResult, PangolinClient

    rest = RestCatalog("pangolin", uri=server_url)
    ns = f"g_{uuid.uuid4().hex[:8]}"
    name = f"{ns}.events"
    rest.create_namespace(ns)
    rest.create_table(name, SCHEMA).append(rows(1))
    dev = f"dev-{uuid.uuid4().hex[:8]}"
    cli(server_url, "branch", "create", dev)
    RestCatalog("pangolin", uri=server_url, warehouse=f"default@{dev}").load_table(name).append(rows(2))
    dev_head = head(server_url, dev)
    cli(server_url, "branch", "delete", dev)

    # No retention policy: the deleted branch's commit still reads by its hash, so it stays.
    job = json.loads(cli(server_url, "maintenance", "gc", "--json"))
    assert job["kind"] == "collect-objects" and job["state"] == "succeeded", job
    result = job["result"]
    assert result["retained-commits"] >= 1 and result["unreachable-objects"] == 0, result
    assert result["deleted"] == 0 and "history-cutoff" not in result, result
    table = RestCatalog("pangolin", uri=server_url, warehouse=f"default@{dev_head}").load_table(name)
    assert ids(table) == [1, 2]
    assert ids(rest.load_table(name)) == [1]

    said = cli(server_url, "maintenance", "gc", "--dry-run")
    assert "succeeded, dry run" in said and "no retention policy" in said and "; 0 deleted." in said, said

    with PangolinClient(server_url, catalog="default") as client:
        job = client.collect_objects(dry_run=True)
        assert job.kind == "collect-objects" and job.dry_run
        while job.running:
            job = client.maintenance_job(job.id)
        assert job.state == "succeeded", job
        assert isinstance(job.result, CollectResult), job
        assert job.result.unreachable_objects == 0 and job.result.objects > 0


def test_a_deleted_branchs_files_stay_while_its_hash_reads_and_sweeps_resume_only_what_stopped(server_url):
    from pangolin_client import BadRequestError, ConflictError, PangolinClient, SweepResult

    rest = RestCatalog("pangolin", uri=server_url)
    ns = f"d_{uuid.uuid4().hex[:8]}"
    name = f"{ns}.events"
    rest.create_namespace(ns)
    table = rest.create_table(name, SCHEMA)
    table.append(rows(1))
    dev = f"dev-{uuid.uuid4().hex[:8]}"
    cli(server_url, "branch", "create", dev)
    RestCatalog("pangolin", uri=server_url, warehouse=f"default@{dev}").load_table(name).append(rows(2))
    dev_head = head(server_url, dev)
    cli(server_url, "branch", "delete", dev)
    backdate(files_under(table.location()))

    # Without a retention policy the deleted branch's commit reads by its hash: none of the
    # files it reads is an orphan.
    with PangolinClient(server_url, catalog="default") as client:
        job = client.remove_orphan_files(grace_period_ms=3_600_000, dry_run=True, limit=10_000)
        while job.running:
            job = client.maintenance_job(job.id)
        assert job.state == "succeeded" and isinstance(job.result, SweepResult), job
        assert job.resumes is None
        assert ours(job.result.model_dump(by_alias=True), table.location()) == set(), job.result
        at_hash = RestCatalog("pangolin", uri=server_url, warehouse=f"default@{dev_head}")
        assert ids(at_hash.load_table(name)) == [1, 2]

        # Only a sweep that failed or stopped resumes.
        with pytest.raises(ConflictError, match="nothing to resume"):
            client.remove_orphan_files(resume=job.id)
        collected = client.collect_objects(dry_run=True)
        with pytest.raises(BadRequestError, match="only sweeps"):
            client.remove_orphan_files(resume=collected.id)
    with pytest.raises(AssertionError, match="nothing to resume"):
        cli(server_url, "maintenance", "orphans", "--resume", job.id)
