"""The Python client (clients/python, `pangolin-client`) against the real server: branches,
tags, log, diff, entries, merge, cherry-pick and revert, the PyIceberg catalogs it hands out,
the branch context manager, errors as typed exceptions, and the async client."""

import asyncio
import uuid

import httpx
import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from pangolin_client import (
    AsyncPangolinClient,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PangolinClient,
    UnauthorizedError,
)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "item", StringType(), required=False))


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "item": pa.array([f"item-{i}" for i in ids])})


@pytest.fixture
def client(secure_server):
    with PangolinClient(secure_server.url, username="root", password=secure_server.root_password) as client:
        yield client


@pytest.fixture
def table(client):
    """A fresh namespace with table `orders` on main holding two rows: (namespace, name)."""
    namespace = f"cl_{uuid.uuid4().hex[:8]}"
    catalog = client.catalog()
    catalog.create_namespace(namespace)
    catalog.create_table(f"{namespace}.orders", SCHEMA).append(rows(1, 2))
    return namespace, f"{namespace}.orders"


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def count(catalog, name):
    return len(catalog.load_table(name).scan().to_arrow())


def test_a_branch_is_created_read_written_through_pyiceberg_merged_and_deleted(client, table):
    _, name = table
    dev = unique("dev")
    created = client.branch(dev).create(from_="main")
    assert created.name == dev and created.type == "branch"
    assert client.branch(dev).get().hash == client.get_ref("main").hash

    client.catalog(ref=dev).load_table(name).append(rows(3))
    assert count(client.catalog(), name) == 2
    assert count(client.catalog(ref=dev), name) == 3
    listed = {r.name: r for r in client.list_refs(type="branch")}
    assert listed[dev].ahead == 1 and listed[dev].behind == 0

    result = client.branch(dev).merge_into("main")
    assert result.result in ("fast-forward", "merged"), result
    assert count(client.catalog(), name) == 3
    client.branch(dev).delete()
    # A reference expression that names nothing is a bad request (as on the Iceberg routes).
    with pytest.raises(BadRequestError) as missing:
        client.branch(dev).get()
    assert missing.value.status == 400 and f"no branch or tag named `{dev}`" in missing.value.message


def test_tags_pin_a_state_and_refuse_to_be_written(client, table):
    _, name = table
    tag = unique("v")
    client.tag(tag).create(from_="main")
    client.catalog().load_table(name).append(rows(9))
    assert count(client.catalog(ref=tag), name) == 2
    assert count(client.catalog(), name) == 3
    assert [r.name for r in client.list_refs(type="tag") if r.name == tag] == [tag]
    assert client.tag(tag).get().type == "tag"
    client.tag(tag).delete()


def test_log_pages_transparently_and_filters_by_table(client, table):
    namespace, name = table
    branch = unique("log")
    client.branch(branch).create()
    loaded = client.catalog(ref=branch).load_table(name)
    for i in range(5):
        loaded.append(rows(100 + i))
        loaded = client.catalog(ref=branch).load_table(name)
    # The server's pages are asked for as the iterator goes.
    pages = []

    def seen(request):
        if request.url.path.endswith("/log"):
            pages.append(request.url.params.get("pageToken"))

    http = httpx.Client(base_url=client.uri, event_hooks={"request": [seen]})
    paged = PangolinClient(client.uri, token=client._t.credential.token, page_size=2, http=http)
    commits = list(paged.log(branch, key=name))
    # Create table, first append, then five appends on the branch: all touch the table.
    assert len(commits) == 7, [c.message for c in commits]
    assert len(pages) == 4 and pages[0] is None and all(pages[1:])
    assert commits == sorted(commits, key=lambda c: c.time, reverse=True)
    assert list(client.ref_log(branch, key=name)) == commits
    assert list(client.branch(branch).log(key=name)) == commits
    assert all(len(c.hash) == 64 for c in commits)
    detail = client.commit(commits[0].hash)
    assert detail.hash == commits[0].hash
    assert [change.key for change in detail.changes] == [[namespace, "orders"]]
    assert detail.changes[0].kind == "modified"


def test_diff_and_entries_describe_what_differs_and_what_is_there(client, table):
    namespace, name = table
    branch = unique("diff")
    client.branch(branch).create()
    client.catalog(ref=branch).create_table(f"{namespace}.returns", SCHEMA)
    changes = list(client.diff("main", branch))
    assert [(c.key, c.kind) for c in changes] == [([namespace, "returns"], "added")]
    assert changes[0].after.type == "iceberg-table" and changes[0].before is None
    keys = [e.key for e in client.entries(branch, prefix=namespace)]
    assert keys == [[namespace], [namespace, "orders"], [namespace, "returns"]]


def test_a_conflicting_merge_raises_with_the_conflicts_and_moves_nothing(client, table):
    _, name = table
    left, right = unique("left"), unique("right")
    client.branch(left).create()
    client.branch(right).create()
    client.catalog(ref=left).load_table(name).append(rows(10))
    client.catalog(ref=right).load_table(name).append(rows(20))
    client.merge(left, "main")
    head = client.get_ref("main").hash
    with pytest.raises(ConflictError) as conflict:
        client.merge(right, "main")
    assert conflict.value.status == 409
    assert [c.key for c in conflict.value.conflicts] == [name.split(".")]
    assert conflict.value.conflicts[0].kind == "both-modified"
    assert conflict.value.result.previous_head == head
    assert client.get_ref("main").hash == head
    # A dry run with a resolution says what would happen and moves nothing either.
    dry = client.merge(right, "main", dry_run=True, resolutions=[{"key": name.split("."), "take": "theirs"}])
    assert dry.dry_run and not dry.conflicts and len(dry.resolved) == 1
    assert client.get_ref("main").hash == head


def test_cherry_pick_and_revert_write_commits_on_their_branch(client, table):
    _, name = table
    source, target = unique("src"), unique("dst")
    client.branch(source).create()
    client.branch(target).create()
    client.catalog(ref=source).load_table(name).append(rows(5))
    picked = next(iter(client.log(source))).hash
    result = client.cherry_pick([picked], onto=target)
    assert len(result.commits) == 1
    assert count(client.catalog(ref=target), name) == 3
    undone = client.revert(result.commits[0], on=target)
    assert len(undone.commits) == 1
    assert count(client.catalog(ref=target), name) == 2


def test_assign_moves_a_branch_only_from_the_hash_it_was_read_at(client, table):
    branch = unique("moved")
    client.branch(branch).create()
    seen = client.branch(branch).get().hash
    tag = unique("at")
    client.tag(tag).create()
    assigned = client.branch(branch).assign(tag, expected_hash=seen)
    assert assigned.previous_hash == seen
    with pytest.raises(ConflictError):
        client.branch(branch).assign("main", expected_hash="0" * 64)
    with pytest.raises(ConflictError):
        client.delete_ref(branch, expected_hash="0" * 64)
    client.delete_ref(branch, expected_hash=assigned.hash)


def test_the_branch_context_merges_on_success_and_discards_on_an_exception(client, table):
    _, name = table
    branch = unique("etl")
    with client.branch_context(branch, from_="main") as catalog:
        catalog.load_table(name).append(rows(7))
        assert count(client.catalog(), name) == 2
    assert count(client.catalog(), name) == 3
    with pytest.raises(BadRequestError):
        client.get_ref(branch)

    failed = unique("etl")
    with pytest.raises(RuntimeError, match="job failed"):
        with client.branch_context(failed, from_="main") as catalog:
            catalog.load_table(name).append(rows(8))
            raise RuntimeError("job failed")
    assert count(client.catalog(), name) == 3
    with pytest.raises(BadRequestError):
        client.get_ref(failed)


def test_a_branch_context_whose_merge_conflicts_keeps_the_branch(client, table):
    _, name = table
    branch = unique("etl")
    with pytest.raises(ConflictError):
        with client.branch_context(branch, from_="main") as catalog:
            catalog.load_table(name).append(rows(7))
            client.catalog().load_table(name).append(rows(6))
    assert client.get_ref(branch).type == "branch"
    client.delete_ref(branch)


def test_bad_input_and_bad_credentials_are_typed_errors_with_the_servers_words(secure_server, client):
    with pytest.raises(BadRequestError) as bad:
        client.branch("no..dots").create()
    assert bad.value.status == 400 and bad.value.message
    with pytest.raises(NotFoundError) as missing:
        client.on("no-such-catalog").get_ref("main")
    assert missing.value.type == "NoSuchCatalogException", missing.value.body
    with pytest.raises(UnauthorizedError):
        PangolinClient(secure_server.url, username="root", password="wrong-password-x").get_ref("main")
    with pytest.raises(UnauthorizedError):
        PangolinClient(secure_server.url, token="not-a-token").get_ref("main")
    with pytest.raises(ValueError):
        PangolinClient(secure_server.url, token="t", api_key="pgl_x")


def test_a_password_client_signs_in_again_when_its_token_is_refused(secure_server, client):
    assert client.whoami().principal == "user:~/root"
    stale = client._t.credential.token
    client.account.revoke_token(_jti(stale))
    # The revoked access token is refused; the client renews with its refresh token.
    assert client.whoami().principal == "user:~/root"
    assert client._t.credential.token != stale


def _jti(token):
    import base64
    import json

    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["jti"]


def test_the_async_client_does_the_same_with_awaitables_and_async_iterators(secure_server, table):
    _, name = table

    async def work():
        async with AsyncPangolinClient(secure_server.url, username="root", password=secure_server.root_password) as client:
            branch = unique("async")
            await client.branch(branch).create(from_="main")
            refs = [r.name async for r in client.list_refs(type="branch")]
            assert branch in refs
            async with client.branch_context(unique("async-etl"), from_=branch) as catalog:
                catalog.load_table(name).append(rows(11))
            commits = [c async for c in client.log(branch)]
            detail = await client.commit(commits[0].hash)
            with pytest.raises(NotFoundError):
                await client.on("nowhere").get_ref("main")
            await client.branch(branch).delete()
            return len(commits), detail

    commits, detail = asyncio.run(work())
    assert commits >= 3 and detail.changes
