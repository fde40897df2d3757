"""A Google Cloud Storage warehouse with downscoped tokens: engines that hold no Google
credential write and read their tables with the token the server vends, and the storage
(the emulator behind gcs_server.py, which enforces tokens as Google does) lets that token
reach nothing beyond its table and privileges."""

import datetime
import json
import os
import uuid

import pyarrow as pa
import pyarrow.fs
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

import gcs_server
from test_auth import connect, login, request, service_user_with_role

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


@pytest.fixture(scope="module")
def gcs(secure_server):
    """Catalog `gcs-<run>` on a GCS warehouse that downscopes tokens; root's token and the
    client ids and secrets of a reader and a writer of that catalog."""
    endpoint = gcs_server.settings()
    if endpoint is None:
        reason = "no GCS emulator: set PANGOLIN_TEST_GCS_ENDPOINT (scripts/test starts one)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the GCS tests: {reason}")
        pytest.skip(reason)
    run = uuid.uuid4().hex[:8]
    root = login(secure_server)["access_token"]
    key = gcs_server.service_account(token_uri=f"{endpoint}/token")
    warehouse = {
        "name": f"gcs-{run}",
        "storage": {"type": "gcs", "bucket": gcs_server.BUCKET, "prefix": f"pyiceberg-{run}",
                    "endpoint": endpoint, "downscope": {"token-exchange": f"{endpoint}/v1/token"}},
        "credentials": {"type": "gcs", "service-account-key": json.dumps(key)},
    }
    request(secure_server.url, "POST", "/api/v1/warehouses", root, warehouse)
    catalog = f"gcs-{run}"
    request(secure_server.url, "POST", "/api/v1/catalogs", root, {"name": catalog, "warehouse": catalog})
    resource = {"type": "catalog", "catalog": catalog}
    reader = service_user_with_role(secure_server, root, f"gcs-reader-{run}", [{"privilege": "read", "resource": resource}])
    writer = service_user_with_role(
        secure_server, root, f"gcs-writer-{run}", [{"privilege": p, "resource": resource} for p in ("read", "write", "create")]
    )
    return dict(endpoint=endpoint, catalog=catalog, reader=reader, writer=writer, key=key)


def rows(*ids):
    return pa.table({"id": pa.array(list(ids), pa.int64())})


def read(table):
    return sorted(r["id"] for r in table.scan().to_arrow().to_pylist())


def storage_with(table, endpoint):
    """PyArrow's GCS file system holding exactly the token the server vended with `table`."""
    return pyarrow.fs.GcsFileSystem(
        access_token=table.io.properties["gcs.oauth2.token"],
        credential_token_expiration=datetime.datetime.now() + datetime.timedelta(minutes=30),
        endpoint_override=endpoint.split("://", 1)[1],
        scheme="http",
        retry_time_limit=datetime.timedelta(seconds=1),
    )


def path(location):
    assert location.startswith("gs://"), location
    return location[len("gs://") :]


def test_an_engine_with_no_google_credential_writes_and_reads_with_a_downscoped_token(secure_server, gcs):
    engine = connect(secure_server, *gcs["writer"], warehouse=gcs["catalog"])
    namespace = f"gcs_{uuid.uuid4().hex[:8]}"
    engine.create_namespace(namespace)
    table = engine.create_table(f"{namespace}.events", SCHEMA)
    table.append(rows(1, 2))
    table.append(rows(3))
    loaded = engine.load_table(f"{namespace}.events")
    assert read(loaded) == [1, 2, 3]
    props = loaded.io.properties
    assert props["gcs.oauth2.token"].startswith("downscoped-"), props["gcs.oauth2.token"]
    assert int(props["gcs.oauth2.token-expires-at"]) > 0
    assert all(gcs["key"]["private_key"] not in str(v) for v in props.values())
    issued = gcs_server.token_info(gcs["endpoint"], props["gcs.oauth2.token"])
    assert issued["access"] == "objectAdmin"
    folder = path(loaded.location()).split("/", 1)[1]
    assert issued["rules"] == [[gcs_server.BUCKET, f"projects/_/buckets/{gcs_server.BUCKET}/objects/{folder}/", f"{folder}/"]]
    # The data files are where the table says, written with that token.
    files = storage_with(loaded, gcs["endpoint"]).get_file_info(pyarrow.fs.FileSelector(path(loaded.location()), recursive=True))
    assert sum(f.path.endswith(".parquet") for f in files) == 2, files


def test_a_token_reaches_only_its_own_table_and_a_readers_only_reads(secure_server, gcs):
    writer = connect(secure_server, *gcs["writer"], warehouse=gcs["catalog"])
    namespace = f"gcs_{uuid.uuid4().hex[:8]}"
    writer.create_namespace(namespace)
    mine = writer.create_table(f"{namespace}.mine", SCHEMA)
    mine.append(rows(1))
    theirs = writer.create_table(f"{namespace}.theirs", SCHEMA)
    theirs.append(rows(2))
    mine = writer.load_table(f"{namespace}.mine")
    theirs = writer.load_table(f"{namespace}.theirs")

    fs = storage_with(mine, gcs["endpoint"])
    with pytest.raises(PermissionError):
        fs.open_input_file(path(theirs.metadata_location)).read()
    with pytest.raises(PermissionError):
        with fs.open_output_stream(path(theirs.location()) + "/data/intruder.parquet") as out:
            out.write(b"x")
    with pytest.raises(PermissionError):
        fs.get_file_info(pyarrow.fs.FileSelector(f"{gcs_server.BUCKET}/{path(mine.location()).split('/', 1)[1].rsplit('/', 1)[0]}", recursive=True))

    reader = connect(secure_server, *gcs["reader"], warehouse=gcs["catalog"])
    as_reader = reader.load_table(f"{namespace}.mine")
    assert read(as_reader) == [1]
    assert gcs_server.token_info(gcs["endpoint"], as_reader.io.properties["gcs.oauth2.token"])["access"] == "objectViewer"
    with pytest.raises(PermissionError):
        with storage_with(as_reader, gcs["endpoint"]).open_output_stream(path(as_reader.location()) + "/data/x.parquet") as out:
            out.write(b"x")
