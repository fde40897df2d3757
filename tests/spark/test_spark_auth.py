"""Spark (Iceberg's Java REST client) against a server that requires sign-in: the OAuth2
client-credentials flow signs in and writes; wrong credentials are refused before anything
is read or written."""

import json
import urllib.parse
import urllib.request
import uuid

import pytest


def test_client_credentials_sign_in_and_write(spark, spark_catalog_at, secure_server):
    name = spark_catalog_at(
        "secure", "default", url=secure_server.url, credential=f"root:{secure_server.root_password}"
    )
    namespace = f"auth_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE {name}.{namespace}")
    spark.sql(f"CREATE TABLE {name}.{namespace}.events (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {name}.{namespace}.events VALUES (1), (2), (3)")
    assert spark.sql(f"SELECT count(*) FROM {name}.{namespace}.events").collect()[0][0] == 3
    assert secure_server.root_password not in secure_server.log_text()


def test_wrong_credentials_are_refused(spark, spark_catalog_at, secure_server):
    name = spark_catalog_at("secure_wrong", "default", url=secure_server.url, credential="root:not-the-password")
    with pytest.raises(Exception) as refused:
        spark.sql(f"SHOW NAMESPACES IN {name}").collect()
    assert "401" in str(refused.value) or "NotAuthorized" in str(refused.value) or "invalid_client" in str(
        refused.value
    ), str(refused.value)[:2000]


def _call(url, method, path, token, body=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    with urllib.request.urlopen(urllib.request.Request(f"{url}{path}", data=data, headers=headers, method=method)) as r:
        body = r.read()
        return json.loads(body) if body else None


def test_a_reader_cannot_write_and_a_dev_writer_cannot_write_main(spark, spark_catalog_at, secure_server):
    url = secure_server.url
    login = json.dumps({"username": "root", "password": secure_server.root_password}).encode()
    request = urllib.request.Request(f"{url}/api/v1/login", data=login, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        root = json.load(response)["access_token"]
    suffix = uuid.uuid4().hex[:8]
    admin = spark_catalog_at(f"admin_{suffix}", "default", url=url, credential=f"root:{secure_server.root_password}")
    spark.sql(f"CREATE NAMESPACE {admin}.roles_{suffix}")
    spark.sql(f"CREATE TABLE {admin}.roles_{suffix}.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {admin}.roles_{suffix}.t VALUES (1)")
    _call(url, "POST", "/api/v1/catalogs/default/refs", root, {"name": f"dev-{suffix}", "from": "main"})
    catalog = {"type": "catalog", "catalog": "default"}
    credentials = {}
    for who, grants in [
        ("reader", [{"privilege": "read", "resource": catalog}]),
        ("writer", [{"privilege": "read", "resource": catalog},
                    {"privilege": "write", "resource": catalog, "branches": "dev-*"}]),
    ]:
        name = f"{who}-{suffix}"
        _call(url, "POST", "/api/v1/service-users", root, {"name": name})
        key = _call(url, "POST", f"/api/v1/service-users/{name}/keys", root, {})
        _call(url, "POST", "/api/v1/roles", root, {"name": name, "grants": grants})
        principal = urllib.parse.quote(f"service:default/{name}", safe="")
        _call(url, "PUT", f"/api/v1/roles/{name}/members/{principal}", root)
        credentials[who] = f"{key['client-id']}:{key['client-secret']}"
    reader = spark_catalog_at(f"reader_{suffix}", "default", url=url, credential=credentials["reader"])
    assert spark.sql(f"SELECT count(*) FROM {reader}.roles_{suffix}.t").collect()[0][0] == 1
    with pytest.raises(Exception) as refused:
        spark.sql(f"INSERT INTO {reader}.roles_{suffix}.t VALUES (2)")
    assert "Forbidden" in str(refused.value) or "403" in str(refused.value), str(refused.value)[:2000]
    writer_main = spark_catalog_at(f"writer_main_{suffix}", "default", url=url, credential=credentials["writer"])
    with pytest.raises(Exception) as refused:
        spark.sql(f"INSERT INTO {writer_main}.roles_{suffix}.t VALUES (3)")
    assert "Forbidden" in str(refused.value) or "403" in str(refused.value), str(refused.value)[:2000]
    writer_dev = spark_catalog_at(
        f"writer_dev_{suffix}", f"default@dev-{suffix}", url=url, credential=credentials["writer"]
    )
    spark.sql(f"INSERT INTO {writer_dev}.roles_{suffix}.t VALUES (4)")
    assert spark.sql(f"SELECT count(*) FROM {writer_dev}.roles_{suffix}.t").collect()[0][0] == 2
    assert spark.sql(f"SELECT count(*) FROM {admin}.roles_{suffix}.t").collect()[0][0] == 1


def _idp_token(issuer, client):
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": client, "client_secret": f"{client}-secret"}
    ).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{issuer}/token", data=body)) as r:
        return json.load(r)["access_token"]


def test_spark_signs_in_with_the_identity_providers_tokens(spark, spark_catalog_at, oidc_server):
    url, issuer = oidc_server.url, oidc_server.issuer
    login = json.dumps({"username": "root", "password": oidc_server.root_password}).encode()
    request = urllib.request.Request(f"{url}/api/v1/login", data=login, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        root = json.load(response)["access_token"]
    suffix = uuid.uuid4().hex[:8]
    catalog = {"type": "catalog", "catalog": "default"}
    grants = [{"privilege": p, "resource": catalog} for p in ("read", "write", "create")]
    _call(url, "POST", "/api/v1/roles", root, {"name": f"engineers-{suffix}", "grants": grants})
    group = urllib.parse.quote("group:default/idp/data-engineers", safe="")
    _call(url, "PUT", f"/api/v1/roles/engineers-{suffix}/members/{group}", root)

    # The provider's token, passed as it is.
    engine = spark_catalog_at(f"idp_token_{suffix}", "default", url=url, token=_idp_token(issuer, "engine"))
    spark.sql(f"CREATE NAMESPACE {engine}.idp_{suffix}")
    spark.sql(f"CREATE TABLE {engine}.idp_{suffix}.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {engine}.idp_{suffix}.t VALUES (1), (2)")
    # The Java client's own client-credentials flow, against the provider's token endpoint.
    flow = spark_catalog_at(
        f"idp_flow_{suffix}", "default", url=url, credential="engine:engine-secret", token_endpoint=f"{issuer}/token"
    )
    assert spark.sql(f"SELECT count(*) FROM {flow}.idp_{suffix}.t").collect()[0][0] == 2
    # A token whose groups are bound to no role reads nothing.
    analyst = spark_catalog_at(f"idp_analyst_{suffix}", "default", url=url, token=_idp_token(issuer, "analyst"))
    with pytest.raises(Exception) as refused:
        spark.sql(f"SELECT count(*) FROM {analyst}.idp_{suffix}.t").collect()
    assert "Forbidden" in str(refused.value) or "403" in str(refused.value), str(refused.value)[:2000]
