"""pytest plugin for PyIceberg's own test suites run against the real `pangolin serve`.

scripts/test-upstream extracts the `tests/` tree of PyIceberg's source distribution (fetched at
test time, never committed) and runs pytest there with `-p pangolin_upstream`. This plugin:

- starts Pangolin servers for the conftest override of `tests/catalog/` (`serve`);
- deselects the parametrizations that need a catalog other than REST (Hive);
- marks the tests listed in `expected_failures.txt` (beside this file) as
  `xfail(strict=True)` with their reason, and fails the run when an entry matches no test;
- prints the outcome counts of each suite (file) at the end.

The binary comes from PANGOLIN_BIN (scripts/test-upstream sets it).
"""

import collections
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

EXPECTED_FAILURES = Path(__file__).with_name("expected_failures.txt")

# Parametrizations of the upstream suites that use a catalog other than REST. Upstream runs them
# against a Hive metastore (`session_catalog_hive`, thrift://localhost:9083); Pangolin is not
# one, so they are deselected rather than counted.
DESELECTED_FIXTURES = ("session_catalog_hive",)

# The markers upstream registers in its pyproject.toml (not extracted), so that pytest knows them.
UPSTREAM_MARKERS = ("unmarked", "s3", "adls", "integration", "gcs", "benchmark", "notebook")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The server logs of a test, which a failed test's report shows.
_SERVER_LOGS = pytest.StashKey[list]()


@contextlib.contextmanager
def serve(warehouse: str, item: pytest.Item | None = None):
    """Runs `pangolin serve` on a fresh data directory, a free loopback port and `warehouse`;
    yields its URL and stops it (gracefully: it must exit 0) afterwards. With `item`, the test
    it serves, its log is shown in that test's report when it fails."""
    binary = os.environ.get("PANGOLIN_BIN")
    if not binary:
        pytest.fail("PANGOLIN_BIN must point at the pangolin binary (scripts/test-upstream sets it)")
    data_dir = tempfile.mkdtemp(prefix="pangolin-upstream-")
    port = _free_port()
    log_path = os.path.join(data_dir, "server.log")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [binary, "serve", "--no-auth", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir, "--warehouse", warehouse],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if not k.startswith("PANGOLIN_")},
        )
    url = f"http://127.0.0.1:{port}"
    if item is not None:
        item.stash.setdefault(_SERVER_LOGS, []).append(log_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/ready", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None:
                pytest.fail(f"pangolin exited early: {Path(log_path).read_text()}")
            if time.monotonic() > deadline:
                pytest.fail("pangolin did not become ready within 30 s")
            time.sleep(0.02)
        yield url
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, "graceful shutdown exits 0"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def _expected_failures() -> dict[str, str]:
    """`nodeid | reason` per line; `#` starts a comment. A nodeid without `[...]` stands for
    every parametrization of that test."""
    entries = {}
    for number, line in enumerate(EXPECTED_FAILURES.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        nodeid, sep, reason = (part.strip() for part in line.partition("|"))
        if not sep or not nodeid or not reason:
            raise pytest.UsageError(f"{EXPECTED_FAILURES}:{number}: expected `nodeid | reason`")
        entries[nodeid] = reason
    return entries


def pytest_configure(config: pytest.Config) -> None:
    for marker in UPSTREAM_MARKERS:
        config.addinivalue_line("markers", f"{marker}: marker of PyIceberg's own test suite")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, deselected = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        names = {getattr(v, "name", None) for v in params.params.values()} if params else set()
        if names & set(DESELECTED_FIXTURES):
            deselected.append(item)
        else:
            kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept

    expected = _expected_failures()
    used = set()
    for item in items:
        for key in (item.nodeid, item.nodeid.split("[", 1)[0]):
            if key in expected:
                item.add_marker(pytest.mark.xfail(reason=expected[key], strict=True))
                used.add(key)
                break
    # A stale entry hides nothing and misleads: fail on entries of the files run, when they are
    # run whole (no `-k`, no single tests named).
    if config.option.keyword or any("::" in arg for arg in config.args):
        return
    files = {item.nodeid.split("::", 1)[0] for item in items}
    stale = [key for key in expected if key not in used and key.split("::", 1)[0] in files]
    if stale:
        raise pytest.UsageError(f"{EXPECTED_FAILURES.name} lists tests that were not collected: {stale}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.failed and report.when == "call":
        for path in item.stash.get(_SERVER_LOGS, []):
            with contextlib.suppress(OSError):
                report.sections.append((f"pangolin log ({path})", Path(path).read_text()[-20000:]))
    return report


# Outcomes per suite (test file), for the summary.
_OUTCOMES: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    suite = report.nodeid.split("::", 1)[0]
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    elif report.when == "call":
        outcome = report.outcome
    elif report.failed:
        outcome = "error"
    elif report.skipped:
        outcome = "skipped"
    else:
        return
    _OUTCOMES[suite][outcome] += 1


def pytest_terminal_summary(terminalreporter) -> None:
    if not _OUTCOMES:
        return
    terminalreporter.section("outcomes per upstream suite")
    for suite in sorted(_OUTCOMES):
        counts = _OUTCOMES[suite]
        terminalreporter.write_line(f"{suite}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
