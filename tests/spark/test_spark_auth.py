"""Spark (Iceberg's Java REST client) against a server that requires sign-in: the OAuth2
client-credentials flow signs in and writes; wrong credentials are refused before anything
is read or written."""

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
