"""PyIceberg against a server that requires sign-in: the OAuth2 client-credentials flow of the
REST spec (`credential=`), a bearer token from the login route (`token=`), refusals for missing
or wrong credentials, and no secret in the server's log."""

import json
import urllib.error
import urllib.request
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import OAuthError, UnauthorizedError
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
