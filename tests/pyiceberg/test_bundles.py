"""A catalog moved between servers and backends as a bundle, with the real binary and CLI:
exported from a server on SQLite, imported into one on PostgreSQL sharing the warehouse, it
has the same refs, the same commit hashes, the same history and the same rows for PyIceberg;
an incremental bundle carries the changes since; an altered bundle is refused."""

import os
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
def warehouse(tmp_path_factory):
    return f"file://{tmp_path_factory.mktemp('bundle-warehouse')}/"


@pytest.fixture(scope="module")
def source(warehouse):
    """A server on SQLite (the embedded default)."""
    with _serve(["--warehouse", warehouse]) as url:
        yield url


@pytest.fixture(scope="module")
def target(warehouse):
    """A server on PostgreSQL, on the same warehouse."""
    with _serve_on_postgres(["--warehouse", warehouse], what="the bundle tests") as url:
        yield url


@pytest.fixture(scope="module", autouse=True)
def no_profiles(tmp_path_factory):
    with _client_config(tmp_path_factory):
        yield


def log(server, ref, catalog="default"):
    return [c["hash"] for c in api(server, f"/log?ref={ref}&pageSize=1000", catalog)["commits"]]


def merge(server, source, into):
    answer = requests.post(
        f"{server}/api/v1/catalogs/default/merge",
        json={"source": source, "target": into},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text


def test_a_catalog_moves_from_sqlite_to_postgresql_whole_and_then_by_increments(source, target, tmp_path):
    ns = f"b_{uuid.uuid4().hex[:8]}"
    rest = RestCatalog("pangolin", uri=source)
    rest.create_namespace(ns)
    orders = rest.create_table(f"{ns}.orders", SCHEMA)
    orders.append(rows(1, 2))
    cli(source, "branch", "create", "dev")
    dev = RestCatalog("pangolin", uri=source, warehouse="default@dev")
    dev.create_table(f"{ns}.returns", SCHEMA).append(rows(3))
    orders.append(rows(4))
    merge(source, "dev", "main")
    cli(source, "tag", "create", "v1")

    full = tmp_path / "lake.bundle"
    exported = cli(source, "export", "--out", str(full))
    assert "Exported to" in exported.stdout and not full.with_name("lake.bundle.partial").exists()
    verified = cli(None, "bundle", "verify", str(full), "--json")
    assert '"base": null' in verified.stdout

    imported = cli(target, "import", str(full))
    assert "Imported bundle" in imported.stdout
    assert refs(target) == refs(source), "same refs at the same commit hashes"
    for ref in ("main", "dev", "v1"):
        assert log(target, ref) == log(source, ref), f"same history of {ref}"
    assert scan(target, f"{ns}.orders") == scan(source, f"{ns}.orders") == [1, 2, 4]
    assert scan(target, f"{ns}.returns@v1") == [3]
    assert scan(target, f"{ns}.orders@dev") == [1, 2]

    # A full bundle goes only into a new catalog: the target is no longer one.
    again = cli(target, "import", str(full), check=False)
    assert again.returncode == 1 and "is not empty" in again.stderr, again.stderr

    # More history, then only what is new since the first bundle.
    orders.append(rows(5))
    cli(source, "branch", "delete", "dev")
    increment = tmp_path / "lake-2.bundle"
    cli(source, "export", "--since", str(full), "--out", str(increment))
    assert increment.stat().st_size < full.stat().st_size / 2
    cli(target, "import", str(increment))
    assert refs(target) == refs(source)
    assert log(target, "main") == log(source, "main")
    assert scan(target, f"{ns}.orders") == [1, 2, 4, 5]

    # The target's audit log holds each import, the refused one too.
    events = requests.get(f"{target}/api/v1/audit?action=catalog.import", timeout=30).json()["events"]
    assert [e["outcome"] for e in events] == ["success", "failed", "success"], events
    assert events[1]["details"]["status"] == "409", events


def test_an_altered_bundle_is_refused_by_the_cli_and_by_the_server(source, target, tmp_path):
    name = f"c{uuid.uuid4().hex[:8]}"
    created = requests.post(
        f"{target}/api/v1/catalogs",
        json={"name": name, "warehouse": "default"},
        timeout=30,
    )
    assert created.status_code in (200, 201), created.text
    full = tmp_path / "lake.bundle"
    cli(source, "export", "--out", str(full))
    data = bytearray(full.read_bytes())
    data[len(data) // 2] ^= 0x01
    altered = tmp_path / "altered.bundle"
    altered.write_bytes(bytes(data))

    verify = cli(None, "bundle", "verify", str(altered), check=False)
    assert verify.returncode == 1 and "not a whole bundle" in verify.stderr, verify.stderr
    local = cli(target, "import", "--catalog", name, str(altered), check=False)
    assert local.returncode == 1, local.stderr

    # Sent anyway, the server refuses it and the catalog stays new.
    before = refs(target, name)
    answer = requests.post(
        f"{target}/api/v1/catalogs/{name}/import",
        data=bytes(data),
        headers={"content-type": "application/vnd.pangolin.bundle"},
        timeout=60,
    )
    assert answer.status_code == 400, answer.text
    assert "altered" in answer.text or "not valid" in answer.text, answer.text
    assert refs(target, name) == before
    cut = requests.post(f"{target}/api/v1/catalogs/{name}/import", data=full.read_bytes()[:-10], timeout=60)
    assert cut.status_code == 400 and "cut off" in cut.text, cut.text
    assert refs(target, name) == before

    # The intact bundle goes in.
    cli(target, "import", "--catalog", name, str(full))
    assert refs(target, name) == refs(source)


def test_the_python_client_exports_and_imports(source, target):
    from pangolin_client import BadRequestError, PangolinClient

    name = f"p{uuid.uuid4().hex[:8]}"
    with PangolinClient(target) as admin:
        admin.catalogs.create(name, warehouse="default")
    with PangolinClient(source) as client:
        bundle = client.export_bundle()
    assert bundle.startswith(b"PANGOLIN-BUNDLE\n")
    with PangolinClient(target, catalog=name) as client:
        with pytest.raises(BadRequestError):
            client.import_bundle(bundle[:-1])
        imported = client.import_bundle(bundle)
    assert imported.objects > 0 and imported.base is None
    assert sorted((r["type"], r["name"], r["hash"]) for r in imported.refs) == refs(source)
    assert refs(target, name) == refs(source)
