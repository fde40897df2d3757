"""Starts the real `pangolin` binary for the PyIceberg tests.

The binary comes from PANGOLIN_BIN (scripts/test builds it and sets it); each test session gets
a fresh data directory and a free loopback port. With PANGOLIN_TEST_DATABASE_URL set (a
postgres:// URL), the server keeps its state there, in a schema of its own, instead of SQLite.

`s3_server` is a second server whose warehouse is in an S3 bucket, on the S3 server that
PANGOLIN_TEST_S3_ENDPOINT names (scripts/test starts moto; see s3_bucket.py). `vending_server`
is a third, on the S3 server with STS that PANGOLIN_TEST_STS_ENDPOINT names (SeaweedFS; see
sts_server.py), vending credentials and signing requests. Without their servers these tests
are skipped, except in CI, where they fail.
"""

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import types
import urllib.request
import uuid

import pytest
from pyiceberg.catalog.rest import RestCatalog

# The Python client's tests import it from its source (test_client_package.py builds and
# installs the wheel itself).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))

import s3_bucket
import sts_server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _serve(extra_args=(), env=None, log=None, auth=False):
    """Runs `pangolin serve` on a fresh data directory and port; yields its URL. `env` adds
    environment variables; `log` is a file for its output (discarded otherwise). Without
    `auth`, the server runs without authentication."""
    binary = os.environ.get("PANGOLIN_BIN")
    if not binary:
        pytest.fail("PANGOLIN_BIN must point at the pangolin binary (scripts/test sets it)")
    data_dir = tempfile.mkdtemp(prefix="pangolin-pyiceberg-")
    port = _free_port()
    command = [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir]
    if not auth:
        command.append("--no-auth")
    database = os.environ.get("PANGOLIN_TEST_DATABASE_URL")
    if database:
        # scripts/test drops schemas named like this that earlier runs left behind.
        command += ["--database-url", database, "--database-schema", f"t_{uuid.uuid4().hex}"]
    command += list(extra_args)
    process = subprocess.Popen(
        command,
        stdout=log or subprocess.DEVNULL,
        stderr=log or subprocess.PIPE,
        env={**os.environ, **(env or {})},
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
            if log:
                with open(log.name) as written:
                    output = written.read()
            else:
                output = process.stderr.read().decode()
            pytest.fail(f"pangolin exited early: {output}")
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


@contextlib.contextmanager
def _serve_on_postgres(extra_args=(), log=None, what="these tests"):
    """`_serve` on PostgreSQL (PANGOLIN_TEST_POSTGRES_URL), for a test that runs a server on
    each backend side by side; skipped without PostgreSQL, except in CI, where it fails."""
    database = os.environ.get("PANGOLIN_TEST_POSTGRES_URL")
    if not database:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs PostgreSQL for {what}")
        pytest.skip("no PostgreSQL (PANGOLIN_TEST_POSTGRES_URL)")
    os.environ["PANGOLIN_TEST_DATABASE_URL"] = database
    try:
        with _serve(extra_args, log=log) as url:
            os.environ.pop("PANGOLIN_TEST_DATABASE_URL", None)
            yield url
    finally:
        os.environ.pop("PANGOLIN_TEST_DATABASE_URL", None)


@contextlib.contextmanager
def _client_config(tmp_path_factory):
    """A configuration directory of their own for the `pangolin` client, so that it reads no
    saved profile of whoever runs the tests."""
    os.environ["PANGOLIN_CONFIG_DIR"] = str(tmp_path_factory.mktemp("config"))
    try:
        yield
    finally:
        os.environ.pop("PANGOLIN_CONFIG_DIR", None)


ROOT_PASSWORD = "root-password-for-the-tests"


@pytest.fixture(scope="session")
def secure_server(tmp_path_factory):
    """A server that requires sign-in, with `root`'s password set. Yields a namespace with
    `url`, `root_password` and `log` (the path of its log, at debug level)."""
    log_path = tmp_path_factory.mktemp("secure") / "pangolin.log"
    with open(log_path, "w") as log:
        env = {"PANGOLIN_ROOT_PASSWORD": ROOT_PASSWORD, "RUST_LOG": "debug,sqlx=warn,hyper=info"}
        with _serve(env=env, log=log, auth=True) as url:
            yield types.SimpleNamespace(url=url, root_password=ROOT_PASSWORD, log=log_path)


@pytest.fixture(scope="session")
def server_url():
    with _serve() as url:
        yield url


@pytest.fixture
def catalog(server_url):
    return RestCatalog("pangolin", uri=server_url)


@pytest.fixture(scope="session")
def s3():
    """The test S3 server (its bucket exists), or a skip when there is none (a failure in CI)."""
    settings = s3_bucket.settings()
    if settings is None:
        reason = "no S3 server: set PANGOLIN_TEST_S3_ENDPOINT (scripts/test starts moto)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the S3 tests: {reason}")
        pytest.skip(reason)
    s3_bucket.ensure_bucket(settings)
    return settings


@pytest.fixture(scope="session")
def s3_server(s3):
    """A server whose warehouse is `s3://<bucket>/<run>/wh`, configured through its
    PANGOLIN_S3_* variables and handing its keys out to clients. Yields a namespace with
    `url`, `warehouse` (the location) and `log` (the path of its log, at debug level)."""
    warehouse = f"s3://{s3.bucket}/pyiceberg-{uuid.uuid4().hex}/wh"
    env = {
        "PANGOLIN_S3_ENDPOINT": s3.endpoint,
        "PANGOLIN_S3_REGION": s3.region,
        "PANGOLIN_S3_ACCESS_KEY_ID": s3.access_key_id,
        "PANGOLIN_S3_SECRET_ACCESS_KEY": s3.secret_access_key,
        "PANGOLIN_S3_HAND_OUT_CREDENTIALS": "true",
        "RUST_LOG": "debug",
    }
    with tempfile.NamedTemporaryFile(prefix="pangolin-s3-", suffix=".log") as log:
        with _serve(["--warehouse", warehouse], env, log) as url:
            yield types.SimpleNamespace(url=url, warehouse=warehouse, log=log.name)


@pytest.fixture(scope="session")
def sts():
    """The test S3 server with STS, or a skip when there is none (a failure in CI)."""
    settings = sts_server.settings()
    if settings is None:
        reason = "no S3 server with STS: set PANGOLIN_TEST_STS_ENDPOINT (scripts/test starts SeaweedFS)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the tests of delegated access: {reason}")
        pytest.skip(reason)
    return settings


@pytest.fixture(scope="session")
def vending_server(sts, tmp_path_factory):
    """A server that requires sign-in, whose default warehouse is `s3://<bucket>/<run>/wh` on
    the STS server: it vends credentials from the role the catalog's key may assume and signs
    requests, and hands out no key of its own. Yields a namespace with `url`, `root_password`,
    `warehouse` and `log`."""
    warehouse = f"s3://{sts.bucket}/vend-{uuid.uuid4().hex}/wh"
    env = {
        "PANGOLIN_ROOT_PASSWORD": ROOT_PASSWORD,
        "PANGOLIN_S3_ENDPOINT": sts.endpoint,
        "PANGOLIN_S3_REGION": sts.region,
        "PANGOLIN_S3_ACCESS_KEY_ID": sts.access_key_id,
        "PANGOLIN_S3_SECRET_ACCESS_KEY": sts.secret_access_key,
        "PANGOLIN_S3_ROLE_ARN": sts.role_arn,
        "PANGOLIN_S3_REMOTE_SIGNING": "true",
        "RUST_LOG": "debug,sqlx=warn,hyper=info",
    }
    log_path = tmp_path_factory.mktemp("vending") / "pangolin.log"
    with open(log_path, "w") as log:
        with _serve(["--warehouse", warehouse], env=env, log=log, auth=True) as url:
            yield types.SimpleNamespace(
                url=url, root_password=ROOT_PASSWORD, warehouse=warehouse, log=log_path
            )


@pytest.fixture
def unique():
    """A name no other test uses: tests share one server."""
    counter = getattr(unique, "counter", 0) + 1
    unique.counter = counter
    return f"t{os.getpid()}_{counter}"


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module; missing Chromium is a skip, and a failure in CI
    (scripts/test installs Debian's chromium and chromium-driver)."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        reason = "no chromium/chromedriver (apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the browser tests: {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]:
        options.add_argument(argument)
    session = webdriver.Chrome(service=Service(driver), options=options)
    session.set_page_load_timeout(30)
    yield session
    session.quit()
