"""What the tests moving a catalog between two servers share: a table's schema and rows, the
command-line client and the management API of one server, and what a server's catalog holds."""

import os
import subprocess

import pyarrow as pa
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "item", StringType(), required=False),
)


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "item": pa.array([f"item-{i}" for i in ids])})


def cli(server, *args, check=True):
    """Runs the `pangolin` client against `server` (catalog `default` unless `--catalog` is
    among `args`), or without one when `server` is None; the completed process."""
    done = subprocess.run(
        [os.environ["PANGOLIN_BIN"], *args, *(["--server", server] if server else [])],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PANGOLIN_CATALOG": "default"},
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def api(server, path, catalog="default"):
    answer = requests.get(f"{server}/api/v1/catalogs/{catalog}{path}", timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def refs(server, catalog="default"):
    """Every ref of the catalog as (type, name, hash), sorted."""
    return sorted((r["type"], r["name"], r["hash"]) for r in api(server, "/refs", catalog)["refs"])


def scan(server, table, catalog="default"):
    """The ids PyIceberg reads from `table` (which may name a ref: `ns.t@dev`)."""
    rest = RestCatalog("pangolin", uri=server, warehouse=catalog)
    return sorted(rest.load_table(table).scan().to_arrow().column("id").to_pylist())
