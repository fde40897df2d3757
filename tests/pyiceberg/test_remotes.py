"""Catalogs on two servers exchanging history as git repositories do, with the real binary,
CLI and PyIceberg: one server on SQLite, one on PostgreSQL, each with its own warehouse.
A clone has the same refs and hashes and reads the same rows; after both diverge, a fetch
sends exactly the objects the clone lacks, a pull merges both sides' tables, a push
fast-forwards the other server; a push that would drop commits is refused unless forced (and
then audited); an interrupted or altered push leaves the receiving server as it was. Tables
keep their locations: one in the other server's warehouse reads, and takes no commit."""

import json
import os
import subprocess
import uuid

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog

from conftest import _client_config, _serve, _serve_on_postgres
from transfers import SCHEMA, api, cli, refs, rows, scan

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("PANGOLIN_TEST_DATABASE_URL")),
    reason="runs once, in the SQLite pass: it starts its own server on PostgreSQL",
)


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    """A server on SQLite (the embedded default) with a warehouse of its own."""
    warehouse = f"file://{tmp_path_factory.mktemp('origin-warehouse')}/"
    with open(tmp_path_factory.mktemp("logs") / "origin.log", "w") as log:
        with _serve(["--warehouse", warehouse], log=log) as url:
            yield url


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """A server on PostgreSQL with another warehouse."""
    warehouse = f"file://{tmp_path_factory.mktemp('mirror-warehouse')}/"
    with open(tmp_path_factory.mktemp("logs") / "mirror.log", "w") as log:
        with _serve_on_postgres(["--warehouse", warehouse], log=log, what="the remote tests") as url:
            yield url


@pytest.fixture(scope="module", autouse=True)
def no_profiles(tmp_path_factory):
    with _client_config(tmp_path_factory):
        yield


def head(server, branch):
    return api(server, f"/refs/{branch}")["hash"]


def object_count(server, tmp_path):
    """How many objects the catalog's refs reach, from a full export."""
    path = tmp_path / f"count-{uuid.uuid4().hex[:8]}.bundle"
    cli(server, "export", "--out", str(path))
    verified = subprocess.run(
        [os.environ["PANGOLIN_BIN"], "bundle", "verify", "--json", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(verified.stdout)["objects"]


def test_clone_diverge_fetch_pull_push_between_sqlite_and_postgresql(origin, mirror, tmp_path):
    ns = f"r_{uuid.uuid4().hex[:8]}"
    rest = RestCatalog("pangolin", uri=origin)
    rest.create_namespace(ns)
    rest.create_table(f"{ns}.orders", SCHEMA).append(rows(1, 2))
    cli(origin, "branch", "create", "dev")
    RestCatalog("pangolin", uri=origin, warehouse="default@dev").load_table(f"{ns}.orders").append(rows(3))

    # Clone: same refs and hashes, the same rows, and a warning about the warehouses.
    cloned = cli(mirror, "clone", origin, "--from", "default")
    assert "Cloned catalog default" in cloned.stdout, cloned.stdout
    assert "warning:" in cloned.stderr and "table files were not copied" in cloned.stderr, cloned.stderr
    assert refs(mirror) == refs(origin)
    assert scan(mirror, f"{ns}.orders") == [1, 2]
    assert scan(mirror, f"{ns}.orders@dev") == [1, 2, 3]
    shown = cli(mirror, "remote", "show", "origin").stdout
    assert f"url      {origin}" in shown and "branch origin/dev" in shown, shown
    assert "origin" in cli(mirror, "remote", "list").stdout

    # Both diverge.
    before = object_count(origin, tmp_path)
    RestCatalog("pangolin", uri=origin).load_table(f"{ns}.orders").append(rows(4))
    RestCatalog("pangolin", uri=mirror).create_table(f"{ns}.local", SCHEMA).append(rows(10))
    added = object_count(origin, tmp_path) - before
    assert added > 0

    # A fetch sends exactly what the mirror lacks, and says how main moved.
    fetched = json.loads(cli(mirror, "fetch", "origin", "--json").stdout)
    assert fetched["objects"] == added, fetched
    [change] = fetched["changes"]
    assert change["name"] == "main" and change["forced"] is False, change
    assert change["new"] == head(origin, "main")
    again = cli(mirror, "fetch", "origin")
    assert "0 objects" in again.stdout and "Already up to date" in again.stdout, again.stdout

    # Pull merges origin's main into the mirror's: both sides' tables and rows.
    cli(mirror, "pull", "origin", "main")
    assert scan(mirror, f"{ns}.orders") == [1, 2, 4]
    assert scan(mirror, f"{ns}.local") == [10]

    # Push fast-forwards origin's main to the mirror's; origin reads both tables.
    pushed = cli(mirror, "push", "origin", "main")
    assert "main -> main" in pushed.stdout, pushed.stdout
    assert head(origin, "main") == head(mirror, "main")
    assert scan(origin, f"{ns}.local") == [10]
    assert scan(origin, f"{ns}.orders") == [1, 2, 4]

    # A table whose files live in the other server's warehouse reads here but takes no commit:
    # this server neither writes nor vends credentials outside its own warehouse.
    with pytest.raises(Exception, match="outside the catalog's warehouse"):
        RestCatalog("pangolin", uri=mirror).load_table(f"{ns}.orders").append(rows(99))

    # Both append again: a push would drop origin's commit, so it is refused.
    RestCatalog("pangolin", uri=origin).load_table(f"{ns}.orders").append(rows(5))
    RestCatalog("pangolin", uri=mirror).load_table(f"{ns}.local").append(rows(11))
    theirs = head(origin, "main")
    refused = cli(mirror, "push", "origin", "main", check=False)
    assert refused.returncode == 1, refused
    assert "fast-forward" in refused.stderr or "descend" in refused.stderr, refused.stderr
    assert head(origin, "main") == theirs

    # An interrupted push and an altered one leave origin as it was.
    pack = requests.post(
        f"{mirror}/api/v1/catalogs/default/pack",
        json={"want": ["main"], "have": [theirs]},
        timeout=30,
    ).content
    push_url = f"{origin}/api/v1/catalogs/default/push"
    params = {"branch": "main", "expected-head": theirs, "force": "true"}

    def interrupted():
        yield pack[: len(pack) // 2]
        raise ConnectionError("the pusher went away")

    with pytest.raises(Exception):
        requests.post(push_url, params=params, data=interrupted(), timeout=30)
    assert head(origin, "main") == theirs
    altered = bytearray(pack)
    altered[len(altered) // 2] ^= 0x01
    answer = requests.post(push_url, params=params, data=bytes(altered), timeout=30)
    assert answer.status_code == 400, answer.text
    assert head(origin, "main") == theirs

    # Forced, it lands, and origin's audit log says who dropped what.
    forced = cli(mirror, "push", "origin", "main", "--force")
    assert "forced update" in forced.stdout, forced.stdout
    assert head(origin, "main") == head(mirror, "main")
    events = requests.get(f"{origin}/api/v1/audit?action=branch.push.forced", timeout=30).json()["events"]
    assert any(e["details"].get("previous") == theirs for e in events), events
    assert scan(origin, f"{ns}.orders") == [1, 2, 4], "origin's own append was dropped"
    assert scan(origin, f"{ns}.local") == [10, 11]

    # The push left the mirror's tracking ref where origin's main now is.
    assert f"branch origin/main {head(mirror, 'main')[:12]}" in cli(mirror, "remote", "show", "origin").stdout


def test_remotes_through_the_python_client_with_clear_errors(origin, mirror):
    from pangolin_client import BadRequestError, ConflictError, NotFoundError, PangolinClient

    with PangolinClient(mirror) as catalog:
        added = catalog.add_remote("upstream", f"{origin}/", catalog="default")
        assert (added.name, added.url, added.catalog, added.refs) == ("upstream", origin, "default", [])
        assert "upstream" in [r.name for r in catalog.remotes()]
        for bad in ["not a url", "ftp://lake.example", "http://ana:secret@lake.example"]:
            with pytest.raises(BadRequestError):
                catalog.add_remote("bad", bad)
        with pytest.raises(BadRequestError):
            catalog.add_remote("no/slash", origin)
        with pytest.raises(ConflictError):
            catalog.add_remote("upstream", origin)

        # A fetch through the client: the pack from origin, then received here.
        have = [r["hash"] for r in api(mirror, "/refs")["refs"]]
        with PangolinClient(origin) as sender:
            pack = sender.pack(have=have)
        report = catalog.receive_fetch("upstream", pack)
        assert sorted(r["name"] for r in report.remote.refs) == sorted(n for _, n, _ in refs(origin))
        assert catalog.remote("upstream").fetched_at is not None

        # Bad transfers: no such remote or ref, not a pack, a push of another branch.
        with pytest.raises(NotFoundError):
            catalog.receive_fetch("nowhere", pack)
        with PangolinClient(origin) as sender:
            with pytest.raises(NotFoundError):
                sender.pack(want=["no-such-branch"])
            with pytest.raises(BadRequestError):
                sender.pack(have=["abc"])
        with pytest.raises(BadRequestError, match="not a Pangolin bundle"):
            catalog.receive_fetch("upstream", b"PAR1 not a pack")
        with pytest.raises(BadRequestError, match="carries that ref alone"):
            catalog.receive_push("elsewhere", pack, expected_head=head(mirror, "main"))
        assert catalog.remote("upstream").refs == report.remote.refs

        catalog.remove_remote("upstream")
        with pytest.raises(NotFoundError):
            catalog.remote("upstream")
