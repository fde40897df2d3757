"""A warehouse in an S3 bucket: the server writes metadata there through object_store, PyIceberg
writes and reads data files there through pyarrow, and purge empties the table's prefix.

Runs against the S3 server of the `s3` fixture (moto, started by scripts/test)."""

import json
import urllib.request
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.schema import Schema
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


def key_of(s3, location):
    """The object key of an `s3://bucket/key` location in the test bucket."""
    prefix = f"s3://{s3.bucket}/"
    assert location.startswith(prefix), location
    return location[len(prefix) :]


@pytest.fixture
def s3_catalog(s3, s3_server):
    """A client told how to reach the bucket by its own properties, as a client of a server
    that hands out nothing would be."""
    return RestCatalog(
        "pangolin-s3",
        uri=s3_server.url,
        **{
            "s3.endpoint": s3.endpoint,
            "s3.region": s3.region,
            "s3.access-key-id": s3.access_key_id,
            "s3.secret-access-key": s3.secret_access_key,
        },
    )


@pytest.fixture
def name():
    return f"s3_{uuid.uuid4().hex[:12]}"


def test_a_table_in_a_bucket_takes_data_and_reads_it_back(s3, s3_server, s3_catalog, name):
    s3_catalog.create_namespace(name)
    table = s3_catalog.create_table(f"{name}.cities", SCHEMA)
    assert table.location().startswith(f"{s3_server.warehouse}/{name}/cities-"), table.location()
    assert table.metadata_location.startswith(f"{table.location()}/metadata/00000-")

    table.append(rows((1, "Lisbon"), (2, "Porto")))
    table.append(rows((3, "Braga")))
    loaded = s3_catalog.load_table(f"{name}.cities")
    assert read(loaded) == [(1, "Lisbon"), (2, "Porto"), (3, "Braga")]
    assert "/metadata/00002-" in loaded.metadata_location

    # Every metadata file the server wrote is an object in the bucket, beside the data files.
    keys = s3.keys(key_of(s3, table.location()) + "/")
    for entry in loaded.metadata.metadata_log:
        assert key_of(s3, entry.metadata_file) in keys
    assert key_of(s3, loaded.metadata_location) in keys
    head = s3.client().head_object(Bucket=s3.bucket, Key=key_of(s3, loaded.metadata_location))
    assert head["ContentLength"] > 0
    assert sum(k.endswith(".parquet") for k in keys) == 2, keys


def test_purge_deletes_the_tables_objects_and_nothing_else(s3, s3_catalog, name):
    s3_catalog.create_namespace(name)
    doomed = s3_catalog.create_table(f"{name}.doomed", SCHEMA)
    kept = s3_catalog.create_table(f"{name}.kept", SCHEMA)
    doomed.append(rows((1, "Lisbon")))
    kept.append(rows((2, "Porto")))
    doomed_prefix = key_of(s3, doomed.location()) + "/"
    assert len(s3.keys(doomed_prefix)) >= 3, "metadata, manifest list, manifest, data"

    s3_catalog.purge_table(f"{name}.doomed")

    with pytest.raises(NoSuchTableError):
        s3_catalog.load_table(f"{name}.doomed")
    assert s3.keys(doomed_prefix) == []
    assert read(s3_catalog.load_table(f"{name}.kept")) == [(2, "Porto")]


def test_load_table_config_lets_a_bare_client_reach_the_bucket(s3, s3_server, s3_catalog, name):
    s3_catalog.create_namespace(name)
    s3_catalog.create_table(f"{name}.cities", SCHEMA).append(rows((1, "Lisbon")))
    request = urllib.request.Request(f"{s3_server.url}/v1/default/namespaces/{name}/tables/cities")
    with urllib.request.urlopen(request, timeout=30) as response:
        config = json.load(response).get("config", {})
    assert config["s3.endpoint"] == s3.endpoint
    assert config["s3.region"] == s3.region
    assert config["s3.path-style-access"] == "true"
    # The server of this fixture opted in to handing out its keys.
    assert config["s3.access-key-id"] == s3.access_key_id
    assert config["s3.secret-access-key"] == s3.secret_access_key

    bare = RestCatalog("bare", uri=s3_server.url)
    table = bare.load_table(f"{name}.cities")
    table.append(rows((2, "Porto")))
    assert read(bare.load_table(f"{name}.cities")) == [(1, "Lisbon"), (2, "Porto")]


def test_the_secret_never_reaches_the_log(s3, s3_server, s3_catalog, name):
    s3_catalog.create_namespace(name)
    s3_catalog.create_table(f"{name}.cities", SCHEMA).append(rows((1, "Lisbon")))
    with open(s3_server.log) as log:
        text = log.read()
    assert "pangolin is serving" in text, text[-2000:]
    assert s3.secret_access_key not in text
