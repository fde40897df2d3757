"""Delegated storage access against SeaweedFS, which checks signatures, session policies and
expiry as S3 does: engines that hold no key of the warehouse write and read their tables with
vended credentials or remote signing, and reach nothing beyond their table and privileges."""

import json
import urllib.error
import urllib.request
import uuid

import pyarrow as pa
import pytest
from botocore.exceptions import ClientError
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from test_auth import connect, login, request, service_user_with_role

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def rows(*ids):
    return pa.table({"id": pa.array(list(ids), pa.int64())})


def read(table):
    return sorted(r["id"] for r in table.scan().to_arrow().to_pylist())


@pytest.fixture(scope="module")
def people(vending_server):
    """Root's token, and the client id and secret of a reader and a writer of the default
    catalog (service users, as engines are)."""
    root = login(vending_server)["access_token"]
    catalog = {"type": "catalog", "catalog": "default"}
    suffix = uuid.uuid4().hex[:8]
    reader = service_user_with_role(
        vending_server, root, f"reader-{suffix}", [{"privilege": "read", "resource": catalog}]
    )
    writer = service_user_with_role(
        vending_server,
        root,
        f"writer-{suffix}",
        [{"privilege": p, "resource": catalog} for p in ("read", "write", "create")],
    )
    return root, reader, writer


def signing(server, credentials):
    """A client that asks for remote signing rather than credentials."""
    client_id, secret = credentials
    return RestCatalog(
        "pangolin",
        uri=server.url,
        credential=f"{client_id}:{secret}",
        **{
            "oauth2-server-uri": f"{server.url}/v1/oauth/tokens",
            "header.X-Iceberg-Access-Delegation": "remote-signing",
        },
    )


def key_of(sts, location):
    prefix = f"s3://{sts.bucket}/"
    assert location.startswith(prefix), location
    return location[len(prefix) :]


def vended_client(sts, table):
    """An S3 client holding exactly what the server vended with `table`."""
    props = table.io.properties
    return sts.client(props["s3.access-key-id"], props["s3.secret-access-key"], props["s3.session-token"])


def denied(call):
    with pytest.raises(ClientError) as refused:
        call()
    assert refused.value.response["Error"]["Code"] == "AccessDenied", refused.value.response


def test_an_engine_with_no_key_writes_and_reads_with_vended_credentials(vending_server, sts, people):
    _, _, writer = people
    engine = connect(vending_server, *writer)
    namespace = f"vend_{uuid.uuid4().hex[:8]}"
    engine.create_namespace(namespace)
    table = engine.create_table(f"{namespace}.events", SCHEMA)
    table.append(rows(1, 2))
    table.append(rows(3))
    loaded = engine.load_table(f"{namespace}.events")
    assert read(loaded) == [1, 2, 3]
    props = loaded.io.properties
    assert props["s3.access-key-id"].startswith("ASIA"), props["s3.access-key-id"]
    assert props["s3.access-key-id"] != sts.access_key_id
    assert all(sts.secret_access_key not in str(v) for v in props.values())
    assert int(props["s3.session-token-expires-at-ms"]) > 0
    # The files are where the table says, written with the vended key.
    keys = [o["Key"] for o in sts.client().list_objects_v2(Bucket=sts.bucket, Prefix=key_of(sts, loaded.location()) + "/")["Contents"]]
    assert sum(k.endswith(".parquet") for k in keys) == 2, keys


def test_vended_credentials_reach_only_their_own_table(vending_server, sts, people):
    _, _, writer = people
    engine = connect(vending_server, *writer)
    namespace = f"vend_{uuid.uuid4().hex[:8]}"
    engine.create_namespace(namespace)
    mine = engine.create_table(f"{namespace}.mine", SCHEMA)
    mine.append(rows(1))
    theirs = engine.create_table(f"{namespace}.theirs", SCHEMA)
    theirs.append(rows(2))
    mine = engine.load_table(f"{namespace}.mine")
    theirs = engine.load_table(f"{namespace}.theirs")
    client = vended_client(sts, mine)
    own = key_of(sts, mine.metadata_location)
    other = key_of(sts, theirs.metadata_location)
    assert client.get_object(Bucket=sts.bucket, Key=own)["ContentLength"] > 0
    client.put_object(Bucket=sts.bucket, Key=key_of(sts, mine.location()) + "/data/extra", Body=b"x")
    listed = client.list_objects_v2(Bucket=sts.bucket, Prefix=key_of(sts, mine.location()) + "/")
    assert listed["KeyCount"] > 0
    denied(lambda: client.get_object(Bucket=sts.bucket, Key=other))
    denied(lambda: client.put_object(Bucket=sts.bucket, Key=key_of(sts, theirs.location()) + "/x", Body=b"x"))
    denied(lambda: client.list_objects_v2(Bucket=sts.bucket, Prefix=key_of(sts, theirs.location()) + "/"))
    denied(lambda: client.list_objects_v2(Bucket=sts.bucket))


def test_a_readers_credentials_read_but_never_write(vending_server, sts, people):
    _, reader_credentials, writer = people
    namespace = f"vend_{uuid.uuid4().hex[:8]}"
    engine = connect(vending_server, *writer)
    engine.create_namespace(namespace)
    engine.create_table(f"{namespace}.facts", SCHEMA).append(rows(7))
    reader = connect(vending_server, *reader_credentials)
    table = reader.load_table(f"{namespace}.facts")
    assert read(table) == [7]
    client = vended_client(sts, table)
    assert client.get_object(Bucket=sts.bucket, Key=key_of(sts, table.metadata_location))["ContentLength"] > 0
    denied(lambda: client.put_object(Bucket=sts.bucket, Key=key_of(sts, table.location()) + "/data/x", Body=b"x"))
    denied(lambda: client.delete_object(Bucket=sts.bucket, Key=key_of(sts, table.metadata_location)))
    # PyIceberg, holding only the reader's credentials, cannot even write a data file.
    with pytest.raises(Exception) as failed:
        table.append(rows(8))
    assert "ACCESS_DENIED" in str(failed.value), failed.value
    assert read(engine.load_table(f"{namespace}.facts")) == [7]


def test_remote_signing_lets_an_engine_with_no_credentials_write_and_read(vending_server, sts, people):
    _, reader_credentials, writer = people
    engine = signing(vending_server, writer)
    namespace = f"sign_{uuid.uuid4().hex[:8]}"
    engine.create_namespace(namespace)
    engine.create_table(f"{namespace}.signed", SCHEMA)
    table = engine.load_table(f"{namespace}.signed")
    props = table.io.properties
    assert props["s3.signer"] == "S3V4RestSigner" and "s3.access-key-id" not in props, props
    table.append(rows(1, 2))
    assert read(engine.load_table(f"{namespace}.signed")) == [1, 2]

    # A reader's requests are signed for reading only.
    reader = signing(vending_server, reader_credentials)
    as_reader = reader.load_table(f"{namespace}.signed")
    assert read(as_reader) == [1, 2]
    with pytest.raises(Exception) as failed:
        as_reader.append(rows(3))
    assert "403" in str(failed.value) or "Forbidden" in type(failed.value).__name__, failed.value
    assert read(engine.load_table(f"{namespace}.signed")) == [1, 2]


def test_the_signer_signs_nothing_outside_the_table(vending_server, sts, people):
    root, _, writer = people
    engine = signing(vending_server, writer)
    namespace = f"sign_{uuid.uuid4().hex[:8]}"
    engine.create_namespace(namespace)
    mine = engine.create_table(f"{namespace}.mine", SCHEMA)
    theirs = engine.create_table(f"{namespace}.theirs", SCHEMA)
    endpoint = mine.io.properties["s3.signer.endpoint"]
    body = {
        "region": sts.region,
        "method": "GET",
        "uri": f"{sts.endpoint}/{sts.bucket}/{key_of(sts, theirs.metadata_location)}",
        "headers": {},
    }
    try:
        request(vending_server.url, "POST", f"/{endpoint}", root, body)
        pytest.fail("a request for another table's file was signed")
    except urllib.error.HTTPError as refused:
        assert refused.code == 403
        assert "outside the table's location" in json.load(refused)["error"]["message"]
    # The same request for the table's own file is signed, and S3 accepts the signature.
    body["uri"] = f"{sts.endpoint}/{sts.bucket}/{key_of(sts, mine.metadata_location)}"
    signed = request(vending_server.url, "POST", f"/{endpoint}", root, body)
    headers = {name: ", ".join(values) for name, values in signed["headers"].items()}
    with urllib.request.urlopen(urllib.request.Request(signed["uri"], headers=headers)) as response:
        assert json.load(response)["location"] == mine.location()


def test_vended_credentials_expire_when_they_say(vending_server, sts, people):
    """The expiry a client is told is the one the storage enforces. Refusal after expiry takes
    the credential's whole life (SeaweedFS, like AWS, gives at least 15 minutes), so this
    records the credential in PANGOLIN_TEST_EXPIRY_FILE and scripts/test checks it at the end
    of the run (`sts_server.py --check-expired`)."""
    import os
    import time

    _, reader_credentials, writer = people
    engine = connect(vending_server, *writer)
    namespace = f"vend_{uuid.uuid4().hex[:8]}"
    engine.create_namespace(namespace)
    engine.create_table(f"{namespace}.brief", SCHEMA).append(rows(1))
    table = connect(vending_server, *reader_credentials).load_table(f"{namespace}.brief")
    props = table.io.properties
    expires_ms = int(props["s3.session-token-expires-at-ms"])
    # Issued at most a minute ago (the cache) for 900 s, and a quarter of that still left.
    now_ms = time.time() * 1000
    assert now_ms + 225_000 < expires_ms <= now_ms + 900_000 + 5_000, (expires_ms, now_ms)
    key = key_of(sts, table.metadata_location)
    assert vended_client(sts, table).get_object(Bucket=sts.bucket, Key=key)["ContentLength"] > 0
    record = os.environ.get("PANGOLIN_TEST_EXPIRY_FILE")
    if record and not os.path.exists(record):
        with open(record, "w") as f:
            json.dump(
                {
                    "access-key-id": props["s3.access-key-id"],
                    "secret-access-key": props["s3.secret-access-key"],
                    "session-token": props["s3.session-token"],
                    "expires-at-ms": expires_ms,
                    "key": key,
                },
                f,
            )
