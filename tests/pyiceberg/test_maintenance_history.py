"""The sweep of orphan files over random histories PyIceberg writes on the real server.

Each seed plays a few dozen steps on two tables: appends on `main` or a branch, branches made and
deleted, tables dropped (without purge), snapshots expired on a branch, tags made and deleted,
and stray files left in table folders. After every step the rows of every table on every ref
are recorded with the commit that held them. Then every file is aged past the grace period
and the catalog is swept: every recorded table is scanned again at its commit's hash (without
a retention policy every commit stays readable, a deleted branch's too) and reads exactly the
rows it read then, and every stray is gone."""

import json
import random
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from test_maintenance import SCHEMA, backdate, cli, files_under, head, ids, local

STEPS = 24


class World:
    def __init__(self, server, seed):
        self.server = server
        self.random = random.Random(seed)
        self.ns = f"h{seed}_{uuid.uuid4().hex[:8]}"
        self.tables = [f"{self.ns}.t0", f"{self.ns}.t1"]
        # Live branches besides `main`; each is made under a new name, so a deleted branch's
        # commits are reached by no ref and no ref log, only by their hashes.
        self.branches = []
        self.tags = []
        self.next_id = 0
        self.folders = set()
        self.strays = []
        # (commit, table) -> the rows the table read at that commit.
        self.seen = {}
        RestCatalog("pangolin", uri=server).create_namespace(self.ns)

    def catalog(self, ref):
        return RestCatalog("pangolin", uri=self.server, warehouse=f"default@{ref}")

    def refs(self):
        return ["main"] + self.branches

    def record(self):
        for ref in self.refs():
            commit = head(self.server, ref)
            catalog = self.catalog(ref)
            for name in self.tables:
                if catalog.table_exists(name):
                    self.seen[(commit, name)] = ids(catalog.load_table(name))

    def step(self):
        op = self.random.choice(
            ["append"] * 5 + ["branch", "delete-branch", "drop", "expire", "tag", "untag", "stray"]
        )
        ref = self.random.choice(self.refs())
        name = self.random.choice(self.tables)
        catalog = self.catalog(ref)
        if op == "append":
            table = catalog.load_table(name) if catalog.table_exists(name) else catalog.create_table(name, SCHEMA)
            self.folders.add(table.location())
            self.next_id += 1
            table.append(pa.table({"id": pa.array([self.next_id], pa.int64())}))
        elif op == "branch":
            branch = f"dev-{uuid.uuid4().hex[:8]}"
            cli(self.server, "branch", "create", branch, "--from", ref)
            self.branches.append(branch)
        elif op == "delete-branch" and self.branches:
            cli(self.server, "branch", "delete", self.branches.pop(self.random.randrange(len(self.branches))))
        elif op == "drop" and catalog.table_exists(name):
            catalog.drop_table(name)
        elif op == "expire" and ref != "main":
            future = "2999-01-01T00:00:00Z"
            cli(self.server, "maintenance", "expire", "--branch", ref, "--older-than", future, "--retain-last", "1")
        elif op == "tag":
            tag = f"v-{uuid.uuid4().hex[:8]}"
            cli(self.server, "tag", "create", tag)
            self.tags.append(tag)
        elif op == "untag" and self.tags:
            cli(self.server, "tag", "delete", self.tags.pop())
        elif op == "stray" and self.folders:
            folder = local(self.random.choice(sorted(self.folders)))
            stray = folder / "data" / f"stray-{uuid.uuid4().hex}.parquet"
            stray.parent.mkdir(parents=True, exist_ok=True)
            stray.write_bytes(b"left by a writer that died")
            self.strays.append(stray)
        self.record()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_after_a_sweep_every_commit_reads_what_it_read_and_the_strays_are_gone(server_url, seed):
    world = World(server_url, seed)
    for _ in range(STEPS):
        world.step()
    for folder in world.folders:
        backdate(files_under(folder))

    job = json.loads(cli(server_url, "maintenance", "orphans", "--grace", "1h", "--limit", "10000", "--json"))
    assert job["state"] == "succeeded", job
    for stray in world.strays:
        assert not stray.exists(), f"{stray} is not swept"
    swept = {local(o["location"]) for o in job["result"]["orphans"]}
    assert set(world.strays) <= swept, job["result"]

    assert world.seen, "the history read something"
    for (commit, name), rows in world.seen.items():
        table = world.catalog(commit).load_table(name)
        assert ids(table) == rows, f"{name} at {commit}"
        # Every snapshot the table still lists reads too.
        for snapshot in table.snapshots():
            table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
