"""PyIceberg against a server that requires sign-in: the OAuth2 client-credentials flow of the
REST spec (`credential=`), a bearer token from the login route (`token=`), refusals for missing
or wrong credentials, and no secret in the server's log."""

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, OAuthError, UnauthorizedError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def post(url, path, body, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{url}{path}", data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request) as response:
        return json.load(response)


def get(url, path, token):
    request = urllib.request.Request(f"{url}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request) as response:
        return json.load(response)


def login(server):
    return post(server.url, "/api/v1/login", {"username": "root", "password": server.root_password})


def test_a_client_without_credentials_is_refused(secure_server):
    with pytest.raises(UnauthorizedError):
        RestCatalog("pangolin", uri=secure_server.url)


def test_wrong_client_credentials_are_an_oauth_error(secure_server):
    with pytest.raises(OAuthError):
        RestCatalog("pangolin", uri=secure_server.url, credential="root:not-the-password-at-all")


def test_client_credentials_sign_in_and_write(secure_server):
    catalog = RestCatalog(
        "pangolin",
        uri=secure_server.url,
        credential=f"root:{secure_server.root_password}",
        **{"oauth2-server-uri": f"{secure_server.url}/v1/oauth/tokens"},
    )
    namespace = f"auth_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.events", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert len(catalog.load_table(f"{namespace}.events").scan().to_arrow()) == 2
    # The commits carry who made them.
    token = login(secure_server)["access_token"]
    log = get(secure_server.url, "/api/v1/catalogs/default/log?page-size=5", token)
    assert {c["author"] for c in log["commits"][:2]} == {"user:~/root"}, log


def test_a_bearer_token_from_the_login_route_works(secure_server):
    token = login(secure_server)["access_token"]
    catalog = RestCatalog("pangolin", uri=secure_server.url, token=token)
    namespace = f"token_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    assert (namespace,) in catalog.list_namespaces()


def test_a_revoked_token_stops_working(secure_server):
    token = login(secure_server)["access_token"]
    catalog = RestCatalog("pangolin", uri=secure_server.url, token=token)
    catalog.list_namespaces()
    request = urllib.request.Request(
        f"{secure_server.url}/api/v1/logout", data=b"", headers={"Authorization": f"Bearer {token}"}, method="POST"
    )
    with urllib.request.urlopen(request) as response:
        assert response.status == 204
    with pytest.raises(UnauthorizedError):
        catalog.list_namespaces()


def test_no_password_or_token_reaches_the_log(secure_server):
    token = login(secure_server)["access_token"]
    RestCatalog("pangolin", uri=secure_server.url, token=token).list_namespaces()
    logged = secure_server.log.read_text()
    assert "pangolin is serving" in logged
    assert secure_server.root_password not in logged
    assert token not in logged
    assert token.split(".")[2] not in logged


def request(url, method, path, token, body=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    with urllib.request.urlopen(urllib.request.Request(f"{url}{path}", data=data, headers=headers, method=method)) as r:
        body = r.read()
        return json.loads(body) if body else None


def service_user_with_role(server, root, name, grants):
    """A service user of the default tenant bound to a role of `grants`; its client id and
    secret."""
    request(server.url, "POST", "/api/v1/service-users", root, {"name": name})
    key = request(server.url, "POST", f"/api/v1/service-users/{name}/keys", root, {})
    request(server.url, "POST", "/api/v1/roles", root, {"name": f"{name}-role", "grants": grants})
    principal = urllib.parse.quote(f"service:default/{name}", safe="")
    request(server.url, "PUT", f"/api/v1/roles/{name}-role/members/{principal}", root)
    return key["client-id"], key["client-secret"]


def connect(server, client_id, secret, warehouse="default"):
    return RestCatalog(
        "pangolin",
        uri=server.url,
        warehouse=warehouse,
        credential=f"{client_id}:{secret}",
        **{"oauth2-server-uri": f"{server.url}/v1/oauth/tokens"},
    )


def test_a_reader_reads_but_cannot_commit_and_a_writer_only_writes_its_branches(secure_server):
    root = login(secure_server)["access_token"]
    admin = RestCatalog("pangolin", uri=secure_server.url, token=root)
    namespace = f"roles_{uuid.uuid4().hex[:8]}"
    admin.create_namespace(namespace)
    table = admin.create_table(f"{namespace}.orders", SCHEMA)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    request(secure_server.url, "POST", "/api/v1/catalogs/default/refs", root, {"name": f"dev-{namespace}", "from": "main"})
    catalog = {"type": "catalog", "catalog": "default"}
    reader = connect(secure_server, *service_user_with_role(
        secure_server, root, f"reader-{namespace}", [{"privilege": "read", "resource": catalog}]
    ))
    writer_credentials = service_user_with_role(
        secure_server,
        root,
        f"writer-{namespace}",
        [
            {"privilege": "read", "resource": catalog},
            {"privilege": "write", "resource": catalog, "branches": "dev-*"},
        ],
    )
    # The reader reads the table and cannot change it.
    assert len(reader.load_table(f"{namespace}.orders").scan().to_arrow()) == 1
    with pytest.raises(ForbiddenError):
        reader.load_table(f"{namespace}.orders").append(pa.table({"id": pa.array([2], pa.int64())}))
    with pytest.raises(ForbiddenError):
        reader.create_namespace(f"{namespace}_nope")
    # The writer writes `table@dev-...` (here through a session on that branch) but not main.
    writer = connect(secure_server, *writer_credentials)
    with pytest.raises(ForbiddenError):
        writer.load_table(f"{namespace}.orders").append(pa.table({"id": pa.array([3], pa.int64())}))
    on_dev = connect(secure_server, *writer_credentials, warehouse=f"default@dev-{namespace}")
    on_dev.load_table(f"{namespace}.orders").append(pa.table({"id": pa.array([4], pa.int64())}))
    assert len(on_dev.load_table(f"{namespace}.orders").scan().to_arrow()) == 2
    # Main is untouched by the refused writes.
    assert len(admin.load_table(f"{namespace}.orders").scan().to_arrow()) == 1
