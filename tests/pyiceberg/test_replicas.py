"""Three `pangolin serve` processes on one PostgreSQL, as a deployment runs them behind a load
balancer: writers spread raw REST commits and PyIceberg appends over all of them, one replica
is killed with SIGKILL in the middle of the load, and then every table's snapshot chain, the
branch's history and the audit log are checked against what the writers were told. Also: a
revocation made through one replica applies on the others within the configured bound, and
the background jobs run once per period across replicas, not once per replica.

Runs once, in the SQLite pass (the replicas use a PostgreSQL schema of their own)."""

import os
import random
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
import uuid

import httpx
import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from conftest import _free_port
from pangolin_client import ForbiddenError, PangolinClient, UnauthorizedError
from test_operations import scrape, total

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("PANGOLIN_TEST_DATABASE_URL")),
    reason="runs once, in the SQLite pass, on a PostgreSQL schema of its own",
)

ROOT_PASSWORD = "root-password-for-replicas"
# How long a replica trusts what it read of callers, roles and catalogs (the bound under test).
SHARED_STATE_TTL_MS = 1000
JOBS_PERIOD_MS = 500
CATALOG = "default"
REST_WRITERS = 6
REST_COMMITS_EACH = 24
PY_WRITERS = 2
PY_APPENDS_EACH = 6


class Replica:
    def __init__(self, command, env, log_path):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [*command, "--listen", f"127.0.0.1:{self.port}"],
            stdout=self.log,
            stderr=self.log,
            env=env,
        )

    def wait_ready(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            if self.process.poll() is not None:
                pytest.fail(f"replica exited early: {open(self.log_path).read()}")
            time.sleep(0.1)
        pytest.fail(f"replica did not become ready: {open(self.log_path).read()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                assert self.process.wait(timeout=30) == 0, "graceful shutdown exits 0"
            finally:
                if self.process.poll() is None:
                    self.process.kill()
        self.log.close()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    database = os.environ.get("PANGOLIN_TEST_POSTGRES_URL")
    if not database:
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs PostgreSQL for the replica tests")
        pytest.skip("no PostgreSQL (PANGOLIN_TEST_POSTGRES_URL)")
    binary = os.environ.get("PANGOLIN_BIN")
    if not binary:
        pytest.fail("PANGOLIN_BIN must point at the pangolin binary (scripts/test sets it)")
    logs = tmp_path_factory.mktemp("replicas")
    data_dir = tempfile.mkdtemp(prefix="pangolin-replicas-")
    warehouse = tempfile.mkdtemp(prefix="pangolin-replicas-warehouse-")
    # What every replica must share: the database, the warehouse, the keys.
    command = [
        binary, "serve",
        "--data-dir", data_dir,
        "--database-url", database,
        "--database-schema", f"t_{uuid.uuid4().hex}",
        "--warehouse", f"file://{warehouse}/",
        "--shared-state-ttl-ms", str(SHARED_STATE_TTL_MS),
        "--jobs-period-ms", str(JOBS_PERIOD_MS),
    ]
    env = {
        **os.environ,
        "PANGOLIN_ROOT_PASSWORD": ROOT_PASSWORD,
        "PANGOLIN_SECRET_KEY": secrets.token_hex(32),
        "PANGOLIN_JWT_SECRET": secrets.token_hex(32),
        "PANGOLIN_BCRYPT_COST": "4",
        "RUST_LOG": "info,sqlx=warn",
    }
    started = [Replica(command, env, logs / "replica-0.log")]
    started[0].wait_ready()
    # The others start together on the database the first one set up.
    started += [Replica(command, env, logs / f"replica-{i}.log") for i in (1, 2)]
    for replica in started[1:]:
        replica.wait_ready()
    try:
        yield started
    finally:
        for replica in started:
            replica.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(warehouse, ignore_errors=True)


def root_client(replica):
    return PangolinClient(replica.url, username="root", password=ROOT_PASSWORD, catalog=CATALOG)


class Cluster:
    """The replicas writers may still use, and what the writers were told."""

    def __init__(self, replicas, token):
        self.alive = list(replicas)
        self.headers = {"authorization": f"Bearer {token}"}
        self.lock = threading.Lock()
        self.acked = {}  # table -> [snapshot ids acknowledged]
        self.refused = {}  # table -> [snapshot ids answered 409]
        self.uncertain = {}  # table -> [snapshot ids whose answer was lost]
        self.py_acked = []
        self.py_uncertain = []
        self.failures = []

    def pick(self, n):
        with self.lock:
            return self.alive[n % len(self.alive)]

    def note(self, kind, table, snapshot):
        with self.lock:
            getattr(self, kind).setdefault(table, []).append(snapshot)

    def acknowledged(self):
        with self.lock:
            return sum(len(v) for v in self.acked.values()) + len(self.py_acked)


def table_uri(replica, table):
    return f"{replica.url}/v1/{CATALOG}/namespaces/load/tables/{table}"


def rest_writer(cluster, writer):
    """Commits snapshots by REST, alternating between its own table and the shared one, each
    through the next replica; a 409 is re-read and retried with a new snapshot."""
    n = writer
    for i in range(REST_COMMITS_EACH):
        table = f"w{writer}" if i % 2 == 0 else "shared"
        for _ in range(50):
            n += 1
            replica = cluster.pick(n)
            snapshot_id = random.getrandbits(62) + 1
            try:
                with httpx.Client(timeout=30, headers=cluster.headers) as http:
                    loaded = http.get(table_uri(replica, table))
                    if loaded.status_code != 200:
                        cluster.failures.append((table, loaded.status_code, loaded.text))
                        continue
                    metadata = loaded.json()["metadata"]
                    current = metadata.get("current-snapshot-id")
                    if current == -1:
                        current = None
                    snapshot = {
                        "snapshot-id": snapshot_id,
                        "sequence-number": metadata["last-sequence-number"] + 1,
                        "timestamp-ms": int(time.time() * 1000),
                        "manifest-list": f"{metadata['location']}/metadata/snap-{snapshot_id}.avro",
                        "summary": {"operation": "append"},
                        "schema-id": metadata["current-schema-id"],
                    }
                    if current is not None:
                        snapshot["parent-snapshot-id"] = current
                    answer = http.post(table_uri(replica, table), json={
                        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": current}],
                        "updates": [
                            {"action": "add-snapshot", "snapshot": snapshot},
                            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id},
                        ],
                    })
            except httpx.TransportError:
                # The replica died under us: the commit may or may not have landed.
                cluster.note("uncertain", table, snapshot_id)
                continue
            if answer.status_code == 200:
                cluster.note("acked", table, snapshot_id)
                break
            if answer.status_code == 409:
                cluster.note("refused", table, snapshot_id)
                continue
            cluster.note("uncertain", table, snapshot_id)
            cluster.failures.append((table, answer.status_code, answer.text))
        else:
            cluster.failures.append((table, "gave up", writer))


def py_writer(cluster, writer, token):
    """Appends one row at a time with PyIceberg to the shared table `py`, through the next
    replica each time; a conflicting commit is retried on a fresh load."""
    n = writer
    for i in range(PY_APPENDS_EACH):
        value = writer * 1000 + i
        for _ in range(20):
            n += 1
            replica = cluster.pick(n)
            try:
                catalog = RestCatalog(f"py-{writer}", uri=replica.url, token=token, warehouse=CATALOG)
                table = catalog.load_table("load.py")
                table.append(pa.table({"v": pa.array([value], pa.int64())}))
            except CommitFailedException:
                continue
            except requests.exceptions.ConnectionError:
                # The replica died under PyIceberg's client: the append may have landed.
                with cluster.lock:
                    cluster.py_uncertain.append(value)
                continue
            with cluster.lock:
                cluster.py_acked.append(value)
            break
        else:
            cluster.failures.append(("py", "gave up", writer))


def snapshot_chain(metadata):
    by_id = {s["snapshot-id"]: s for s in metadata.get("snapshots", [])}
    chain = []
    current = metadata.get("current-snapshot-id")
    while current is not None and current != -1:
        chain.append(current)
        current = by_id[current].get("parent-snapshot-id")
    return chain, set(by_id)


def test_writers_on_three_replicas_lose_nothing_when_one_is_killed(replicas):
    admin = root_client(replicas[0])
    login = httpx.post(f"{replicas[0].url}/api/v1/login", json={"username": "root", "password": ROOT_PASSWORD})
    assert login.status_code == 200, login.text
    token = login.json()["access_token"]
    setup = RestCatalog("setup", uri=replicas[1].url, token=token, warehouse=CATALOG)
    setup.create_namespace("load")
    schema = Schema(NestedField(1, "v", LongType(), required=False))
    for table in ["shared", "py", *(f"w{i}" for i in range(REST_WRITERS))]:
        setup.create_table(f"load.{table}", schema)
    start_head = admin.get_ref("main").hash
    audit_start = max((e.sequence for e in admin.audit.events()), default=0)

    cluster = Cluster(replicas, token)
    threads = [threading.Thread(target=rest_writer, args=(cluster, w)) for w in range(REST_WRITERS)]
    threads += [threading.Thread(target=py_writer, args=(cluster, w, token)) for w in range(PY_WRITERS)]
    for thread in threads:
        thread.start()
    planned = REST_WRITERS * REST_COMMITS_EACH + PY_WRITERS * PY_APPENDS_EACH
    deadline = time.monotonic() + 600
    while cluster.acknowledged() < planned // 3:
        assert time.monotonic() < deadline, "the load made no progress"
        assert any(t.is_alive() for t in threads), cluster.failures
        time.sleep(0.05)
    victim = replicas[2]
    with cluster.lock:
        cluster.alive.remove(victim)
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait()
    for thread in threads:
        thread.join(timeout=600)
        assert not thread.is_alive(), "a writer hung"
    assert not [f for f in cluster.failures if f[1] != 409], cluster.failures

    # Every table: each acknowledged snapshot exactly once on one linear chain; nothing that
    # was answered 409 landed; nothing foreign.
    survivor = replicas[0]
    headers = {"authorization": f"Bearer {token}"}
    landed_snapshots = 0
    for table in ["shared", *(f"w{i}" for i in range(REST_WRITERS))]:
        loaded = httpx.get(table_uri(survivor, table), headers=headers, timeout=30)
        assert loaded.status_code == 200, loaded.text
        chain, all_ids = snapshot_chain(loaded.json()["metadata"])
        assert len(chain) == len(set(chain)) == len(all_ids), f"{table}: history is not one chain"
        acked = set(cluster.acked.get(table, []))
        assert acked <= set(chain), f"{table}: acknowledged commits lost: {acked - set(chain)}"
        refused = set(cluster.refused.get(table, []))
        assert not refused & set(chain), f"{table}: a commit answered 409 landed"
        assert set(chain) <= acked | set(cluster.uncertain.get(table, [])), f"{table}: foreign snapshots"
        landed_snapshots += len(chain)
    # PyIceberg's appends: every acknowledged row once, no row twice.
    rows = RestCatalog("check", uri=survivor.url, token=token, warehouse=CATALOG).load_table("load.py").scan().to_arrow()
    values = rows.column("v").to_pylist()
    assert len(values) == len(set(values)), "a row was appended twice"
    assert set(cluster.py_acked) <= set(values), "an acknowledged append was lost"
    assert set(values) <= set(cluster.py_acked) | set(cluster.py_uncertain)
    landed_snapshots += len(values)

    # The branch's history holds one commit per landed change, and the audit log one event
    # per commit, naming it: they were written in the same transaction.
    commits = []
    for commit in admin.log("main"):
        if commit.hash == start_head:
            break
        commits.append(commit.hash)
    assert len(commits) == len(set(commits)) == landed_snapshots
    audited = [
        e.details["commit"]
        for e in admin.audit.events()
        if e.sequence > audit_start and "commit" in e.details
    ]
    assert sorted(audited) == sorted(commits)
    assert admin.audit.verify().intact
    print(
        f"acknowledged {cluster.acknowledged()}, answered 409 "
        f"{sum(len(v) for v in cluster.refused.values())}, lost answers "
        f"{sum(len(v) for v in cluster.uncertain.values()) + len(cluster.py_uncertain)}, "
        f"landed {landed_snapshots} in {len(commits)} commits"
    )

    # The survivors still serve.
    for replica in replicas[:2]:
        with urllib.request.urlopen(f"{replica.url}/ready", timeout=10) as answer:
            assert answer.status == 200


def test_background_jobs_run_once_per_period_across_replicas(replicas):
    alive = [r for r in replicas if r.process.poll() is None]
    samples = [scrape(r.url) for r in alive]
    before = sum(total(s, "pangolin_job_rounds_total", outcome="ran") for s in samples)
    skipped_before = sum(total(s, "pangolin_job_rounds_total", outcome="skipped") for s in samples)
    started = time.monotonic()
    time.sleep(5)
    samples = [scrape(r.url) for r in alive]
    elapsed = time.monotonic() - started
    ran = sum(total(s, "pangolin_job_rounds_total", outcome="ran") for s in samples) - before
    skipped = sum(total(s, "pangolin_job_rounds_total", outcome="skipped") for s in samples) - skipped_before
    periods = elapsed / (JOBS_PERIOD_MS / 1000)
    assert ran >= 1, "the job ran"
    # Each replica ticks once a period; without the lease every tick would run the job.
    assert ran <= periods + len(alive), (ran, skipped, periods)
    assert skipped >= 1, (ran, skipped)


def test_a_revocation_through_one_replica_applies_on_the_others_within_the_bound(replicas):
    alive = [r for r in replicas if r.process.poll() is None]
    first, other = alive[0], alive[1]
    admin = root_client(first)
    name = f"etl_{uuid.uuid4().hex[:8]}"
    admin.service_users.create(name)
    key = admin.service_users.create_key(name)
    grants = [{"privilege": "read", "resource": {"type": "catalog", "catalog": CATALOG}}]
    admin.roles.create(f"{name}-reads", grants)
    admin.roles.bind(f"{name}-reads", f"service:default/{name}")
    etl = PangolinClient(other.url, api_key=key.key, catalog=CATALOG)
    assert etl.get_ref("main").type == "branch"  # read, and remembered, on the other replica

    # A role taken away through the first replica...
    admin.roles.unbind(f"{name}-reads", f"service:default/{name}")
    time.sleep(SHARED_STATE_TTL_MS / 1000 + 0.5)
    with pytest.raises(ForbiddenError):
        etl.get_ref("main")
    # ...and a key revoked through it: refused on the other once the bound has passed.
    admin.service_users.revoke_key(name, key.id)
    time.sleep(SHARED_STATE_TTL_MS / 1000 + 0.5)
    with pytest.raises(UnauthorizedError):
        PangolinClient(other.url, api_key=key.key).whoami()
