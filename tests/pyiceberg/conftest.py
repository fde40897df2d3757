"""Starts the real `pangolin` binary for the PyIceberg tests.

The binary comes from PANGOLIN_BIN (scripts/test builds it and sets it); each test session gets
a fresh data directory and a free loopback port. With PANGOLIN_TEST_DATABASE_URL set (a
postgres:// URL), the server keeps its state there, in a schema of its own, instead of SQLite.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid

import pytest
from pyiceberg.catalog.rest import RestCatalog


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server_url():
    binary = os.environ.get("PANGOLIN_BIN")
    if not binary:
        pytest.fail("PANGOLIN_BIN must point at the pangolin binary (scripts/test sets it)")
    data_dir = tempfile.mkdtemp(prefix="pangolin-pyiceberg-")
    port = _free_port()
    command = [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir]
    database = os.environ.get("PANGOLIN_TEST_DATABASE_URL")
    if database:
        # scripts/test drops schemas named like this that earlier runs left behind.
        command += ["--database-url", database, "--database-schema", f"t_{uuid.uuid4().hex}"]
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/ready", timeout=1) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None:
            pytest.fail(f"pangolin exited early: {process.stderr.read().decode()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("pangolin did not become ready within 30 s")
        time.sleep(0.05)
    yield url
    process.send_signal(signal.SIGTERM)
    try:
        assert process.wait(timeout=30) == 0, "graceful shutdown exits 0"
    finally:
        if process.poll() is None:
            process.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def catalog(server_url):
    return RestCatalog("pangolin", uri=server_url)


@pytest.fixture
def unique():
    """A name no other test uses: tests share one server."""
    counter = getattr(unique, "counter", 0) + 1
    unique.counter = counter
    return f"t{os.getpid()}_{counter}"
