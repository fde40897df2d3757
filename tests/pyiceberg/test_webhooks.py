"""Webhooks against the real server: PyIceberg appends reach a local receiver as signed
CloudEvents (verified here as a Standard Webhooks receiver would), a failing receiver is tried
again, and an event past its last attempt shows as a dead letter."""

import base64
import hashlib
import hmac
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from pangolin_client import BadRequestError, PangolinClient

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


class Receiver:
    """An HTTP endpoint that records every delivery and answers `fail` 500s first."""

    def __init__(self, fail=0):
        self.fail = fail
        self.received = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                with receiver.lock:
                    status = 500 if receiver.fail > 0 else 204
                    receiver.fail -= 1
                    receiver.received.append((dict(self.headers), body, status))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def delivered(self):
        with self.lock:
            return [(h, b) for h, b, status in self.received if status < 300]

    def wait(self, what, done, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done():
                return
            time.sleep(0.1)
        raise AssertionError(f"gave up waiting until {what}: {self.received}")


@pytest.fixture
def client(secure_server):
    with PangolinClient(secure_server.url, username="root", password=secure_server.root_password) as client:
        yield client


def verifies(secret, headers, body):
    """The Standard Webhooks check: HMAC-SHA256 over `id.timestamp.body` with the secret's
    bytes, base64, after `v1,`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(sig.removeprefix("v1,"), expected)
        for sig in headers["webhook-signature"].split(" ")
    )


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


def test_appends_arrive_signed_as_cloudevents_with_their_snapshots(client):
    receiver = Receiver()
    namespace = f"wh_{uuid.uuid4().hex[:8]}"
    hook = client.create_webhook(receiver.url, types=["update-table"], prefix=namespace)
    assert hook.secret.startswith("whsec_") and hook.enabled
    try:
        catalog = client.catalog()
        catalog.create_namespace(namespace)
        table = catalog.create_table(f"{namespace}.orders", SCHEMA)
        table.append(rows(1, 2, 3))
        table.append(rows(4))
        receiver.wait("two deliveries", lambda: len(receiver.delivered()) >= 2)
        snapshots = [s.snapshot_id for s in table.refresh().snapshots()]
        for (headers, body), snapshot_id, added in zip(receiver.delivered(), snapshots, ["3", "1"]):
            assert verifies(hook.secret, headers, body)
            assert not verifies("whsec_" + base64.b64encode(b"x" * 32).decode(), headers, body)
            assert headers["content-type"] == "application/cloudevents+json"
            event = json.loads(body)
            assert event["specversion"] == "1.0"
            assert event["type"] == "pangolin.catalog.update-table"
            assert event["id"] == headers["webhook-id"] == event["data"]["cursor"]
            assert event["subject"] == f"main/{namespace}.orders"
            snapshot = event["data"]["table"]["snapshot"]
            assert snapshot["snapshot-id"] == snapshot_id
            assert snapshot["summary"]["added-records"] == added
        assert len(receiver.delivered()) == 2, "only the appends: the filter left out the rest"
        state = client.webhook(hook.id)
        assert state.delivery.delivered == 2 and state.secret is None
    finally:
        client.delete_webhook(hook.id)


def test_failures_are_retried_then_dead_lettered(client):
    flaky = Receiver(fail=1)
    broken = Receiver(fail=10**6)
    namespace = f"wh_{uuid.uuid4().hex[:8]}"
    retried = client.create_webhook(flaky.url, prefix=namespace)
    dead = client.create_webhook(broken.url, prefix=namespace, max_attempts=2)
    try:
        client.catalog().create_namespace(namespace)
        flaky.wait("the retry delivered", lambda: len(flaky.delivered()) == 1)
        ids = [h["webhook-id"] for h, _, _ in flaky.received]
        assert len(ids) == 2 and ids[0] == ids[1], "the same event, the same id"

        def attempts():
            return [(a.attempt, a.outcome) for a in client.webhook_attempts(retried.id)]

        flaky.wait("both attempts logged", lambda: attempts() == [(2, "delivered"), (1, "retrying")])
        broken.wait("a dead letter", lambda: client.webhook(dead.id).delivery.dead_letters == 1)
        [letter] = list(client.webhook_dead_letters(dead.id))
        assert letter.attempts == 2 and "500" in letter.last_error
        assert letter.body["data"]["identifier"] == [namespace]
        assert len(broken.received) == 2
        again = client.redeliver_dead_letter(dead.id, letter.event)
        assert not again.delivered and again.status == 500 and len(broken.received) == 3
        broken.fail = 0
        assert client.redeliver_dead_letter(dead.id, letter.event).delivered
        assert broken.delivered()[-1][0]["webhook-id"] == letter.event
        assert list(client.webhook_dead_letters(dead.id)) == []
        with pytest.raises(BadRequestError, match="max-attempts"):
            client.update_webhook(dead.id, max_attempts=0)
        assert not client.update_webhook(dead.id, enabled=False).enabled
    finally:
        client.delete_webhook(retried.id)
        client.delete_webhook(dead.id)
