"""What operators see of the real server: `/metrics` after a known workload, request ids on
answers and in every log line of a request (JSON logs), and `/ready` failing while the
database cannot be reached."""

import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from conftest import _serve

SAMPLE = re.compile(r"^([a-z_]+)(\{.*\})? (\S+)$")


def scrape(url):
    """`/metrics` as {(name, labels): value}; labels as a sorted tuple of pairs."""
    with urllib.request.urlopen(f"{url}/metrics") as answer:
        assert answer.headers["content-type"].startswith("text/plain")
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, line
        name, labels, value = match.groups()
        pairs = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels or "")))
        samples[(name, pairs)] = float(value)
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples, name, **labels):
    """The sum over every series of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, pairs), v in samples.items() if n == name and wanted <= set(pairs))


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("observed") / "pangolin.log"
    with open(log_path, "w") as log:
        with _serve(["--log-format", "json"], log=log) as url:
            yield url, log_path


def test_metrics_count_a_known_workload(observed):
    url, _ = observed
    catalog = RestCatalog("pangolin", uri=url)
    before = scrape(url)
    namespace = f"ops_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.events", Schema(NestedField(1, "id", LongType(), required=False)))
    for i in range(3):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    catalog.load_table(f"{namespace}.events").scan().to_arrow()
    after = scrape(url)

    def delta(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    namespaces = "/v1/{prefix}/namespaces"
    table_route = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"
    assert delta("pangolin_http_requests_total", method="POST", route=namespaces, status="200") == 1
    assert delta("pangolin_http_requests_total", method="POST", route=table_route, status="200") == 3
    assert delta("pangolin_http_request_duration_seconds_count", method="POST", route=table_route) == 3
    # The namespace, the table and three appends: five commits, each landed once, published
    # in one to five group-commit batches that carried five commits in all.
    assert delta("pangolin_commits_total", outcome="landed") == 5
    assert delta("pangolin_commit_duration_seconds_count") == 5
    assert 1 <= delta("pangolin_publishes_total", outcome="landed") <= 5
    assert delta("pangolin_publish_batch_commits_sum") == 5
    assert delta("pangolin_commits_total", outcome="rejected") == 0
    # Every change is audited, in the same durable write as its commit.
    assert delta("pangolin_audit_events_total", written="with-commit") == 5
    assert value(after, "pangolin_audit_write_failures_total") == 0
    assert value(after, "pangolin_object_cache_entries") > 0
    # The database pool is sampled: connections in use and idle.
    assert {("state", "idle")} | {("state", "in-use")} <= {
        pair for (n, pairs) in after if n == "pangolin_db_connections" for pair in pairs
    }
    assert value(after, "pangolin_object_cache_hits_total") > value(before, "pangolin_object_cache_hits_total")
    # Each append builds on the metadata file the server wrote last, held parsed in memory.
    assert delta("pangolin_metadata_cache_hits_total") >= 3
    assert value(after, "pangolin_metadata_cache_files") >= 4
    assert 0 < value(after, "pangolin_metadata_cache_bytes") <= 512 << 20
    # Labels are route templates, never names a tenant chose.
    assert namespace not in json.dumps([list(k) for k in after])


def test_the_metadata_cache_keeps_to_its_budget():
    """`--metadata-cache-mib 1`: forty new tables' metadata files of 200 columns (about 12 KB
    each, weighed at seven times that) do not all stay in memory; the loads of evicted ones
    still answer."""
    with _serve(["--metadata-cache-mib", "1"]) as url:
        catalog = RestCatalog("pangolin", uri=url)
        catalog.create_namespace("wide")
        schema = Schema(*(NestedField(i, f"column_{i:03}", LongType(), required=False) for i in range(1, 201)))
        for i in range(40):
            catalog.create_table(f"wide.t{i}", schema)
        for i in range(40):
            assert len(catalog.load_table(f"wide.t{i}").schema().fields) == 200
        after = scrape(url)
    assert 0 < value(after, "pangolin_metadata_cache_bytes") <= 1 << 20
    assert 0 < value(after, "pangolin_metadata_cache_files") < 40
    assert value(after, "pangolin_metadata_cache_misses_total") > 0


def test_a_failed_commit_and_an_unknown_route_are_counted(observed):
    url, _ = observed
    before = scrape(url)
    request = urllib.request.Request(f"{url}/v1/no/such/route", method="GET")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(request)
    assert missing.value.code == 404
    catalog = RestCatalog("pangolin", uri=url)
    namespace = f"twice_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace(namespace)
    after = scrape(url)
    assert total(after, "pangolin_http_requests_total", route="unmatched", status="404") - total(
        before, "pangolin_http_requests_total", route="unmatched", status="404"
    ) == 1
    assert total(after, "pangolin_http_requests_total", status="409") > total(before, "pangolin_http_requests_total", status="409")


def test_every_answer_carries_a_request_id_that_every_log_line_of_the_request_repeats(observed):
    url, log_path = observed
    mine = f"trace-{uuid.uuid4().hex}"
    request = urllib.request.Request(f"{url}/v1/config", headers={"x-request-id": mine})
    with urllib.request.urlopen(request) as answer:
        assert answer.headers["x-request-id"] == mine
    with urllib.request.urlopen(f"{url}/v1/config") as answer:
        made = answer.headers["x-request-id"]
    assert uuid.UUID(made)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
        ours = [line for line in lines if line.get("span", {}).get("request_id") == mine]
        if ours:
            break
        time.sleep(0.1)
    assert ours, "no log line carries the request's id"
    assert all(line["span"]["uri"] == "/v1/config" for line in ours)
    assert any(line["fields"].get("status") == 200 for line in ours)
    assert any(line.get("span", {}).get("request_id") == made for line in lines)


class Proxy:
    """A TCP proxy on loopback that can be cut (listener and every connection) and restored
    on the same port: a database that goes away and comes back."""

    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.port = None
        self.sockets = []
        self.listener = None
        self.lock = threading.Lock()

    def start(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port or 0))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self):
        # Shut down first: closing alone leaves a socket that a blocked accept still holds.
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for s in self.sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self.sockets = []


def ready_status(url):
    try:
        with urllib.request.urlopen(f"{url}/ready", timeout=10) as answer:
            return answer.status, ""
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.skipif(
    bool(os.environ.get("PANGOLIN_TEST_DATABASE_URL")),
    reason="runs once, in the SQLite pass, on a PostgreSQL of its own behind a proxy",
)
def test_ready_fails_while_the_database_is_unreachable_and_recovers():
    database = os.environ.get("PANGOLIN_TEST_POSTGRES_URL")
    if not database:
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs PostgreSQL for the readiness test")
        pytest.skip("no PostgreSQL (PANGOLIN_TEST_POSTGRES_URL)")
    match = re.match(r"postgres://([^@/]+)@([^:/]+):(\d+)/(\w+)", database)
    assert match, database
    user, _, port, name = match.groups()
    proxy = Proxy(int(port))
    proxy.start()
    url_through_proxy = f"postgres://{user}@127.0.0.1:{proxy.port}/{name}"
    args = ["--database-url", url_through_proxy, "--database-schema", f"t_{uuid.uuid4().hex}"]
    with _serve(args) as url:
        assert ready_status(url)[0] == 200
        proxy.cut()
        status, body = ready_status(url)
        assert status == 503, body
        assert "ServiceUnavailableException" in body and "not ready" in body, body
        proxy.start()
        deadline = time.monotonic() + 30
        while ready_status(url)[0] != 200:
            assert time.monotonic() < deadline, "the server did not become ready again"
            time.sleep(0.5)
