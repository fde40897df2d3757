"""PyIceberg's REST client against Pangolin: views, on branches, beside tables.

PyIceberg 0.12 creates, loads, lists, registers and drops views; replacing and renaming go
over plain HTTP with the bodies the Java client sends.
"""

import json
import urllib.error
import urllib.request

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    NoSuchNamespaceError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ViewAlreadyExistsError,
)
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "city", StringType(), required=False),
)


def version(sql, namespace, dialect="spark"):
    return ViewVersion(
        schema_id=0,
        summary={"engine-name": "pyiceberg"},
        representations=[SQLViewRepresentation(type="sql", sql=sql, dialect=dialect)],
        default_namespace=[namespace],
    )


def http(server_url, method, path, body=None):
    """A plain HTTP call, for what PyIceberg cannot send."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{server_url}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
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


def replace_body(view, sql):
    """What the Java client sends for `CREATE OR REPLACE VIEW` with a new column list."""
    return {
        "requirements": [{"type": "assert-view-uuid", "uuid": str(view.uuid())}],
        "updates": [
            {"action": "set-properties", "updates": {"engine_version": "Spark 3.5.4"}},
            {
                "action": "add-schema",
                "schema": {
                    "type": "struct",
                    "schema-id": 1,
                    "fields": [{"id": 1, "name": "n", "required": False, "type": "long"}],
                },
            },
            {
                "action": "add-view-version",
                "view-version": {
                    "version-id": 2,
                    "timestamp-ms": 1767225600000,
                    "schema-id": -1,
                    "summary": {"engine-name": "Spark"},
                    "default-namespace": list(view.current_version().default_namespace),
                    "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
                },
            },
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }


def test_create_load_list_exists_and_drop(catalog, unique):
    catalog.create_namespace(unique)
    view = catalog.create_view(
        f"{unique}.daily",
        SCHEMA,
        version(f"SELECT id, city FROM {unique}.cities", unique),
        properties={"comment": "cities"},
    )
    assert view.metadata.format_version == 1
    assert view.metadata.current_version_id == 1
    assert view.current_version().version_id == 1
    assert view.schema().fields == SCHEMA.fields
    assert view.sql_for("SPARK").sql == f"SELECT id, city FROM {unique}.cities"
    assert view.properties == {"comment": "cities"}
    assert [e.version_id for e in view.history()] == [1]

    loaded = catalog.load_view(f"{unique}.daily")
    assert loaded.metadata == view.metadata
    assert catalog.view_exists(f"{unique}.daily")
    assert not catalog.view_exists(f"{unique}.nope")
    catalog.create_view(f"{unique}.weekly", SCHEMA, version("SELECT 1", unique))
    assert catalog.list_views(unique) == [(unique, "daily"), (unique, "weekly")]
    assert catalog.list_tables(unique) == []

    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view(f"{unique}.daily", SCHEMA, version("SELECT 2", unique))
    with pytest.raises(NoSuchViewError):
        catalog.load_view(f"{unique}.nope")
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_views(f"{unique}_missing")

    catalog.drop_view(f"{unique}.daily")
    assert not catalog.view_exists(f"{unique}.daily")
    with pytest.raises(NoSuchViewError):
        catalog.drop_view(f"{unique}.daily")
    assert catalog.list_views(unique) == [(unique, "weekly")]


def test_views_and_tables_share_one_name_space(catalog, unique):
    catalog.create_namespace(unique)
    catalog.create_table(f"{unique}.cities", SCHEMA)
    catalog.create_view(f"{unique}.daily", SCHEMA, version("SELECT 1", unique))
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view(f"{unique}.cities", SCHEMA, version("SELECT 1", unique))
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(f"{unique}.daily", SCHEMA)
    assert not catalog.table_exists(f"{unique}.daily")
    assert not catalog.view_exists(f"{unique}.cities")
    assert catalog.list_tables(unique) == [(unique, "cities")]
    assert catalog.list_views(unique) == [(unique, "daily")]


def test_replace_rename_and_register_over_http(catalog, unique, server_url):
    catalog.create_namespace(unique)
    view = catalog.create_view(f"{unique}.daily", SCHEMA, version("SELECT id FROM t", unique))
    path = f"/v1/default/namespaces/{unique}/views/daily"

    status, body = http(server_url, "POST", path, replace_body(view, "SELECT count(*) AS n FROM t"))
    assert status == 200, body
    replaced = catalog.load_view(f"{unique}.daily")
    assert replaced.metadata.current_version_id == 2
    assert replaced.sql_for("spark").sql == "SELECT count(*) AS n FROM t"
    assert [f.name for f in replaced.schema().fields] == ["n"]
    assert [e.version_id for e in replaced.history()] == [1, 2]
    assert replaced.properties["engine_version"] == "Spark 3.5.4"
    assert replaced.uuid() == view.uuid()
    assert "/metadata/00001-" in body["metadata-location"]

    # A client whose idea of the view is stale, and an action the server does not know.
    head = head_of(server_url)
    stale = replace_body(view, "SELECT 3")
    stale["requirements"][0]["uuid"] = "00000000-0000-0000-0000-000000000001"
    status, body = http(server_url, "POST", path, stale)
    assert (status, body["error"]["type"]) == (409, "CommitFailedException"), body
    status, body = http(server_url, "POST", path, {"updates": [{"action": "drop-everything"}]})
    assert (status, body["error"]["type"]) == (400, "BadRequestException"), body
    assert head_of(server_url) == head
    assert catalog.load_view(f"{unique}.daily").metadata == replaced.metadata

    status, body = http(
        server_url,
        "POST",
        "/v1/default/views/rename",
        {
            "source": {"namespace": [unique], "name": "daily"},
            "destination": {"namespace": [unique], "name": "renamed"},
        },
    )
    assert status == 204, body
    assert not catalog.view_exists(f"{unique}.daily")
    assert catalog.load_view(f"{unique}.renamed").metadata == replaced.metadata



def test_register_a_view_from_its_metadata_file(catalog, unique, server_url):
    catalog.create_namespace(unique)
    catalog.create_view(f"{unique}.daily", SCHEMA, version("SELECT 1", unique))
    status, loaded = http(server_url, "GET", f"/v1/default/namespaces/{unique}/views/daily")
    assert status == 200, loaded
    copy = catalog.register_view(f"{unique}.copy", loaded["metadata-location"])
    assert copy.metadata == catalog.load_view(f"{unique}.daily").metadata
    assert catalog.list_views(unique) == [(unique, "copy"), (unique, "daily")]
    with pytest.raises(ViewAlreadyExistsError):
        catalog.register_view(f"{unique}.daily", loaded["metadata-location"])


def test_a_view_on_dev_is_invisible_on_main_until_merged(catalog, unique, server_url):
    catalog.create_namespace(unique)
    status, body = http(server_url, "POST", "/api/v1/catalogs/default/refs", {"name": f"{unique}_dev", "from": "main"})
    assert status == 201, body
    dev = f"{unique}_dev"
    # PyIceberg 0.12 URL-encodes the name in create_view's body (`daily%40dev`); the server
    # decodes it as meant, so `daily@dev` creates `daily` on the branch.
    catalog.create_view(f"{unique}.daily@{dev}", SCHEMA, version("SELECT 1", unique))
    session = RestCatalog("dev", uri=server_url, warehouse=f"default@{dev}")
    assert catalog.view_exists(f"{unique}.daily@{dev}")
    assert catalog.load_view(f"{unique}.daily@{dev}").sql_for("spark").sql == "SELECT 1"
    assert not catalog.view_exists(f"{unique}.daily")
    with pytest.raises(NoSuchViewError):
        catalog.load_view(f"{unique}.daily")
    assert catalog.list_views(unique) == []
    assert session.list_views(unique) == [(unique, "daily")]

    status, body = http(server_url, "POST", "/api/v1/catalogs/default/merge", {"source": dev, "target": "main"})
    assert status == 200, body
    assert catalog.view_exists(f"{unique}.daily")
    assert catalog.load_view(f"{unique}.daily").metadata == session.load_view(f"{unique}.daily").metadata
