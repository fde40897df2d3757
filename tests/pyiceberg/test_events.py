"""The events feed against the real server, with PyIceberg writing and the Python client reading:
what an append's event says, long polls, the Server-Sent Events stream, the async client, and
consumers that restart while writers append concurrently and still see every commit once."""

import asyncio
import random
import threading
import time
import uuid

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from pangolin_client import AsyncPangolinClient, BadRequestError, PangolinClient

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


@pytest.fixture
def client(secure_server):
    with PangolinClient(secure_server.url, username="root", password=secure_server.root_password) as client:
        yield client


def end_cursor(client):
    """The cursor after every event so far (tests share the server)."""
    cursor = None
    while True:
        page = client.events(after=cursor, page_size=1000)
        cursor = page.next_cursor or cursor
        if not page.events:
            return cursor


def test_an_append_is_an_update_table_event_with_its_snapshot_summary(client):
    start = end_cursor(client)
    namespace = f"ev_{uuid.uuid4().hex[:8]}"
    catalog = client.catalog()
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.orders", SCHEMA)
    table.append(rows(1, 2, 3))
    page = client.events(after=start, prefix=namespace)
    assert [e.operation_type for e in page.events] == ["create-namespace", "create-table", "update-table"]
    created, appended = page.events[1], page.events[2]
    assert created.identifier == [namespace, "orders"]
    assert created.table.table_uuid == str(table.metadata.table_uuid)
    assert created.table.snapshot is None
    snapshot = appended.table.snapshot
    assert snapshot.snapshot_id == table.current_snapshot().snapshot_id
    assert snapshot.summary["operation"] == "append"
    assert snapshot.summary["added-records"] == "3"
    assert appended.ref == "main" and appended.ref_type == "branch"
    assert appended.before.metadata_location != appended.after.metadata_location
    # Filters, and a clear refusal of what is not a filter.
    only = client.events(after=start, types=["update-table"], prefix=namespace)
    assert [e.cursor for e in only.events] == [appended.cursor]
    with pytest.raises(BadRequestError, match="unknown event type"):
        client.events(types=["nope"])


def reader(secure_server):
    """Another client of the same account: another consumer."""
    return PangolinClient(secure_server.url, username="root", password=secure_server.root_password)


def test_a_long_poll_and_a_stream_see_the_next_change_as_it_lands(client, secure_server):
    namespace = f"ev_{uuid.uuid4().hex[:8]}"
    catalog = client.catalog()
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.t", SCHEMA)
    start = end_cursor(client)
    answers = {}

    def poll():
        answers["page"] = client.events(after=start, prefix=namespace, wait="20s")

    def follow():
        with reader(secure_server) as other:
            for event in other.stream_events(after=start, prefix=namespace):
                answers["streamed"] = event
                return

    threads = [threading.Thread(target=poll), threading.Thread(target=follow)]
    for thread in threads:
        thread.start()
    threading.Event().wait(0.5)
    assert not answers, "both wait for a change"
    table.append(rows(7))
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()
    assert [e.operation_type for e in answers["page"].events] == ["update-table"]
    assert answers["streamed"].cursor == answers["page"].events[0].cursor
    assert answers["streamed"].table.snapshot.summary["added-records"] == "1"


def test_the_async_client_reads_and_streams_events(secure_server):
    async def main():
        async with AsyncPangolinClient(
            secure_server.url, username="root", password=secure_server.root_password
        ) as client:
            page = await client.events(page_size=2)
            assert len(page.events) == 2 and page.events[0].operation_type == "create-branch"
            seen = []
            async for event in client.stream_events():
                seen.append(event)
                if len(seen) == 2:
                    break
            assert [e.cursor for e in seen] == [e.cursor for e in page.events]

    asyncio.run(main())


def test_restarting_consumers_see_every_concurrent_append_exactly_once(client, secure_server):
    namespace = f"ev_{uuid.uuid4().hex[:8]}"
    catalog = client.catalog()
    catalog.create_namespace(namespace)
    names = [f"{namespace}.t{i}" for i in range(3)]
    tables = [catalog.create_table(name, SCHEMA) for name in names]
    start = end_cursor(client)
    appends = 5
    done = threading.Event()

    def write(table, offset):
        for i in range(appends):
            table.append(rows(offset + i))

    consumed = []
    failures = []

    def consume():
        # Each round is a new consumer process in effect: only the saved cursor survives.
        try:
            dice = random.Random(11)
            saved = start
            quiet = 0
            while quiet < 3:
                finished = done.is_set()
                with reader(secure_server) as other:
                    for _ in range(1 + dice.randrange(3)):
                        page = other.events(after=saved, prefix=namespace, page_size=1 + dice.randrange(4))
                        consumed.extend(page.events)
                        saved = page.next_cursor
                        if not page.events:
                            time.sleep(0.05)
                            break
                quiet = quiet + 1 if finished and not page.events else 0
        except Exception as error:  # noqa: BLE001 - reported by the test thread
            failures.append(error)

    writers = [threading.Thread(target=write, args=(t, 100 * i)) for i, t in enumerate(tables)]
    consumer = threading.Thread(target=consume)
    consumer.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    done.set()
    consumer.join(timeout=120)
    assert not failures, failures
    cursors = [e.cursor for e in consumed]
    assert len(cursors) == len(set(cursors)), "no event twice"
    for name in names:
        events = [e for e in consumed if e.identifier == name.split(".")]
        assert [e.operation_type for e in events] == ["update-table"] * appends
        history = [s.snapshot_id for s in catalog.load_table(name).snapshots()]
        assert [e.table.snapshot.snapshot_id for e in events] == history
