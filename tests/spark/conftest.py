"""Starts the real `pangolin` binary and one Spark session (Iceberg's Java REST client) for the
whole test session.

The binary comes from PANGOLIN_BIN (scripts/test-spark builds it and sets it). The server gets
a fresh data directory and listens on `127.0.0.1:0`; its real address is read from its log line
"pangolin is serving address=...". Its log is kept in a file and printed when a test fails, so
a 4xx/5xx that Spark only reports as an exception can be traced to the server's side.

Spark catalogs: `lake` (warehouse `default`, so branch `main`) and `lake_dev` (warehouse
`default@dev`). Spark initializes a catalog on first use, so `lake_dev` works once the
Pangolin branch `dev` exists; `spark_catalog_at` adds further catalogs at run time.
"""

import glob
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import types
import urllib.error
import urllib.request

import pytest

SERVING = re.compile(r"pangolin is serving address=(\S+)")


def runtime_jar() -> str:
    """The Iceberg Spark runtime jar that the `snowpark-connect-deps-iceberg` wheel carries."""
    import snowpark_connect_deps_iceberg

    jars = sorted(
        glob.glob(str(snowpark_connect_deps_iceberg.get_jars_dir() / "iceberg-spark-runtime-3.5_2.12-*.jar"))
    )
    if not jars:
        pytest.fail("no iceberg-spark-runtime-3.5_2.12 jar in snowpark-connect-deps-iceberg")
    return jars[-1]


ROOT_PASSWORD = "root-password-for-spark-tests"


@contextlib.contextmanager
def _launch(auth: bool, extra_args=()):
    """Runs the server on a free port; yields `url`, `log` (path of its log file), `log_text()`
    and `data_dir`. Without `auth` it runs without authentication; with it, `root` has
    ROOT_PASSWORD. `extra_args` go to `pangolin serve`."""
    binary = os.environ.get("PANGOLIN_BIN")
    if not binary:
        pytest.fail("PANGOLIN_BIN must point at the pangolin binary (scripts/test-spark sets it)")
    data_dir = tempfile.mkdtemp(prefix="pangolin-spark-")
    log_path = os.path.join(data_dir, "server.log")
    log = open(log_path, "w")
    command = [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", os.path.join(data_dir, "data")]
    env = {**os.environ, "NO_COLOR": "1"}
    if auth:
        env["PANGOLIN_ROOT_PASSWORD"] = ROOT_PASSWORD
    else:
        command.append("--no-auth")
    command += list(extra_args)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)

    def log_text() -> str:
        with open(log_path) as f:
            return f.read()

    address = None
    deadline = time.monotonic() + 30
    while address is None:
        found = SERVING.search(log_text())
        if found:
            address = found.group(1)
            break
        if process.poll() is not None:
            pytest.fail(f"pangolin exited early:\n{log_text()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"pangolin did not report its address within 30 s:\n{log_text()}")
        time.sleep(0.05)
    url = f"http://{address}"
    with urllib.request.urlopen(f"{url}/ready", timeout=5) as response:
        assert response.status == 200
    yield types.SimpleNamespace(url=url, log=log_path, log_text=log_text, data_dir=data_dir)
    process.send_signal(signal.SIGTERM)
    try:
        assert process.wait(timeout=30) == 0, "graceful shutdown exits 0"
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
        # PANGOLIN_SPARK_SERVER_LOG keeps the server's whole log after the run.
        if os.environ.get("PANGOLIN_SPARK_SERVER_LOG") and not auth:
            shutil.copyfile(log_path, os.environ["PANGOLIN_SPARK_SERVER_LOG"])
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def server():
    """The running server, without authentication."""
    with _launch(auth=False) as running:
        yield running


@pytest.fixture(scope="session")
def secure_server():
    """A second server that requires sign-in (`root` has ROOT_PASSWORD)."""
    with _launch(auth=True) as running:
        running.root_password = ROOT_PASSWORD
        yield running


@pytest.fixture(scope="session")
def oidc_server(tmp_path_factory):
    """A third server, requiring sign-in, whose default tenant also takes the tokens of the
    OpenID Connect provider scripts/test starts (PANGOLIN_TEST_OIDC_ISSUER) for audience
    `pangolin`. Yields it with `root_password` and `issuer`."""
    issuer = os.environ.get("PANGOLIN_TEST_OIDC_ISSUER")
    if not issuer:
        reason = "no OpenID Connect provider: set PANGOLIN_TEST_OIDC_ISSUER (scripts/test starts one)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the sign-in tests: {reason}")
        pytest.skip(reason)
    providers = tmp_path_factory.mktemp("oidc") / "providers.json"
    providers.write_text(json.dumps([
        {"tenant": "default", "name": "idp", "settings": {"issuer": issuer, "audiences": ["pangolin"]}}
    ]))
    with _launch(auth=True, extra_args=["--oidc-providers", str(providers)]) as running:
        running.root_password = ROOT_PASSWORD
        running.issuer = issuer
        yield running


def _catalog_conf(
    name: str,
    url: str,
    warehouse: str,
    credential: str | None = None,
    token: str | None = None,
    token_endpoint: str | None = None,
) -> dict:
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": url,
        f"{prefix}.warehouse": warehouse,
    }
    if credential is not None:
        conf[f"{prefix}.credential"] = credential
        conf[f"{prefix}.oauth2-server-uri"] = token_endpoint or f"{url}/v1/oauth/tokens"
    if token is not None:
        conf[f"{prefix}.token"] = token
    return conf


@pytest.fixture(scope="session")
def spark(server):
    """One SparkSession (one JVM) for the whole run."""
    from pyspark.sql import SparkSession

    # Loopback only: Spark would otherwise bind its driver to the machine's external address.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("pangolin-spark-tests")
        .config("spark.jars", runtime_jar())
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        # Spark's own (unused) session catalog would otherwise create ./spark-warehouse.
        .config("spark.sql.warehouse.dir", os.path.join(server.data_dir, "spark-warehouse"))
    )
    conf = {}
    conf.update(_catalog_conf("lake", server.url, "default"))
    conf.update(_catalog_conf("lake_dev", server.url, "default@dev"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_catalog_at(spark, server):
    """Adds a Spark catalog named `name` for `warehouse` (e.g. `default@v1`) and returns the
    name. Spark reads catalog settings when a catalog is first used, so this works at run time;
    a fresh name also starts with an empty table cache."""

    def add(name: str, warehouse: str, url: str | None = None, credential: str | None = None, **auth) -> str:
        for key, value in _catalog_conf(name, url or server.url, warehouse, credential, **auth).items():
            spark.conf.set(key, value)
        return name

    return add


@pytest.fixture(scope="session")
def api(server):
    """Calls the management API of the default catalog: `api("POST", "refs", {...})`."""

    def call(method: str, path: str, body=None):
        request = urllib.request.Request(
            f"{server.url}/api/v1/catalogs/default/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path}: {e.code} {e.read().decode()}") from None
        return json.loads(text) if text else None

    return call


@pytest.fixture(scope="session")
def pyiceberg(server):
    """PyIceberg's REST client on the same server (branch `main`)."""
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("pangolin", uri=server.url, warehouse="default")


@pytest.fixture(scope="session")
def namespace(spark):
    """A namespace `lake.db` shared by the tests (each test uses its own tables)."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
    return "lake.db"


@pytest.fixture
def unique(request):
    """A table name no other test uses."""
    return re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40]


LOG_OFFSET = pytest.StashKey[int]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Notes where the server's log stood when the test began."""
    if "server" in item.funcargs:
        item.stash[LOG_OFFSET] = len(item.funcargs["server"].log_text())
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failure, attaches the server's warnings, errors and 4xx/5xx answers written during
    the test: Spark often reports only an exception name."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and "server" in item.funcargs:
        text = item.funcargs["server"].log_text()[item.stash.get(LOG_OFFSET, 0) :]
        lines = [line for line in text.splitlines() if re.search(r"status=[45]\d\d| ERROR | WARN ", line)]
        report.sections.append(("pangolin log (warnings, errors, 4xx/5xx)", "\n".join(lines[-40:])))
