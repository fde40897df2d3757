"""Engines that sign in with their organisation's identity provider: PyIceberg passes a token
of node-oidc-provider (scripts/test starts it; PANGOLIN_TEST_OIDC_ISSUER) as `token=`, and
the roles bound to the groups in that token decide what it may do."""

import json
import os
import types
import urllib.parse
import urllib.request
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, UnauthorizedError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from conftest import ROOT_PASSWORD, _serve
from test_auth import login, request


def idp_token(issuer, client):
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": client, "client_secret": f"{client}-secret"}
    ).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{issuer}/token", data=body)) as r:
        return json.load(r)["access_token"]


@pytest.fixture(scope="module")
def oidc_server(tmp_path_factory):
    """A server whose default tenant takes the provider's tokens for audience `pangolin`, where
    the group `data-engineers` may read, write and create in catalog `default`."""
    issuer = os.environ.get("PANGOLIN_TEST_OIDC_ISSUER")
    if not issuer:
        reason = "no OpenID Connect provider: set PANGOLIN_TEST_OIDC_ISSUER (scripts/test starts one)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the sign-in tests: {reason}")
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("oidc")
    providers = folder / "providers.json"
    providers.write_text(json.dumps([
        {"tenant": "default", "name": "idp", "settings": {"issuer": issuer, "audiences": ["pangolin"]}}
    ]))
    env = {"PANGOLIN_ROOT_PASSWORD": ROOT_PASSWORD}
    with open(folder / "pangolin.log", "w") as log:
        with _serve(["--oidc-providers", str(providers)], env=env, log=log, auth=True) as url:
            server = types.SimpleNamespace(url=url, root_password=ROOT_PASSWORD)
            root = login(server)["access_token"]
            catalog = {"type": "catalog", "catalog": "default"}
            grants = [{"privilege": p, "resource": catalog} for p in ("read", "write", "create")]
            request(url, "POST", "/api/v1/roles", root, {"name": "engineers", "grants": grants})
            member = urllib.parse.quote("group:default/idp/data-engineers", safe="")
            request(url, "PUT", f"/api/v1/roles/engineers/members/{member}", root)
            yield types.SimpleNamespace(url=url, issuer=issuer)


def test_an_engine_signs_in_with_the_providers_token_and_its_group_lets_it_write(oidc_server):
    engine = RestCatalog("pangolin", uri=oidc_server.url, token=idp_token(oidc_server.issuer, "engine"))
    namespace = f"oidc_{uuid.uuid4().hex[:8]}"
    engine.create_namespace(namespace)
    table = engine.create_table(f"{namespace}.events", Schema(NestedField(1, "id", LongType(), required=False)))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert len(engine.load_table(f"{namespace}.events").scan().to_arrow()) == 2
    assert request(oidc_server.url, "GET", "/api/v1/whoami", idp_token(oidc_server.issuer, "engine"))["principal"] == "oidc:default/idp/engine"


def test_a_token_whose_groups_hold_no_role_reads_nothing_and_a_bad_token_is_refused(oidc_server):
    analyst = RestCatalog("pangolin", uri=oidc_server.url, token=idp_token(oidc_server.issuer, "analyst"))
    with pytest.raises(ForbiddenError):
        analyst.list_namespaces()
    token = idp_token(oidc_server.issuer, "engine")
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(UnauthorizedError):
        RestCatalog("pangolin", uri=oidc_server.url, token=tampered).list_namespaces()
