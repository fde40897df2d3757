"""Merge requests against the real server with PyIceberg writing: a protected branch refuses
PyIceberg's direct writes, a request from a branch PyIceberg appended to lands once its checks
passed on the merge it makes, and a branch that lost rows is held back by `no-lost-rows` until
an administrator overrides it. The protected branch is the test's own, so other tests keep
writing to `main`."""

import uuid

import pyarrow as pa
import pytest
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from pangolin_client import ConflictError, PangolinClient

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


@pytest.fixture
def client(secure_server):
    with PangolinClient(secure_server.url, username="root", password=secure_server.root_password) as client:
        yield client


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


def test_a_protected_branch_takes_pyiceberg_changes_only_through_checked_requests(client):
    suffix = uuid.uuid4().hex[:8]
    namespace, release, dev = f"mr_{suffix}", f"release-{suffix}", f"dev-{suffix}"
    name = f"{namespace}.orders"
    catalog = client.catalog()
    catalog.create_namespace(namespace)
    catalog.create_table(name, SCHEMA).append(rows(1, 2, 3))
    client.branch(release).create(from_="main")
    client.branch(dev).create(from_="main")
    client.set_protection([{"branch": release, "checks": [{"kind": "no-lost-rows", "prefix": [namespace]}]}])
    try:
        with pytest.raises(ForbiddenError, match="protected"):
            client.catalog(ref=release).load_table(name).append(rows(4))

        client.catalog(ref=dev).load_table(name).append(rows(4, 5))
        request = client.create_merge_request(dev, "more orders", target=release)
        checked = client.run_merge_request_checks(request.number)
        assert checked.checks.verdict == "passed"
        assert [c.passed for c in checked.checks.checks] == [True]
        assert client.get_ref(release).hash == checked.checks.target_head, "checks land nothing"
        merged = client.merge_merge_request(request.number)
        assert merged.state == "merged" and merged.merged.commit == checked.checks.merge_commit
        ids = client.catalog(ref=release).load_table(name).scan().to_arrow()["id"].to_pylist()
        assert sorted(ids) == [1, 2, 3, 4, 5]

        client.catalog(ref=dev).load_table(name).overwrite(rows(1))
        shrink = client.create_merge_request(dev, "keep one order", target=release)
        with pytest.raises(ConflictError, match="no-lost-rows"):
            client.merge_merge_request(shrink.number)
        failed = client.merge_request(shrink.number).checks
        assert failed.verdict == "failed"
        assert failed.checks[0].messages == [f"{name} goes from 5 to 1 rows"]
        assert sorted(client.catalog(ref=release).load_table(name).scan().to_arrow()["id"].to_pylist()) == [
            1,
            2,
            3,
            4,
            5,
        ]
        overridden = client.merge_merge_request(shrink.number, override_reason="restated")
        assert overridden.merged.overridden == "restated"
        assert client.catalog(ref=release).load_table(name).scan().to_arrow()["id"].to_pylist() == [1]
        assert [r.number for r in client.merge_requests(state="merged")][:2] == [shrink.number, request.number]
    finally:
        client.clear_protection()
