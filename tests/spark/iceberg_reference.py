"""What the differential and property tests share: the Java reference program
(tests/reference/IcebergReference.java), the corpus (tests/reference/corpus/*.json), and a small
REST client for the server that knows where its default warehouse is on disk.

The Java program is compiled with `javac` against the Iceberg runtime jar the Spark tests use,
so the reference is exactly the Iceberg that Spark runs; the classes are cached under
~/.cache/pangolin/reference-classes/<hash of the source and the jar's name> and never committed.
One JVM answers a whole batch of cases: starting one costs about a second.
"""

import copy
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import runtime_jar

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "reference" / "IcebergReference.java"
CORPUS = ROOT / "tests" / "reference" / "corpus"
CLASSES = Path.home() / ".cache" / "pangolin" / "reference-classes"

KINDS = {"create-table", "update-table", "register-table", "create-view", "update-view"}
# Locations in the corpus that start with this (or with file:///tmp/ref/, the same directory)
# are placeholders: the server side moves them into its warehouse (a server refuses locations
# outside it), and its answers are moved back before they are compared with Java's.
PLACEHOLDER = "file:/tmp/ref/"
PLACEHOLDER_SPELLINGS = ("file:///tmp/ref/", PLACEHOLDER)


def _tool(name: str) -> str:
    """A JDK tool; missing is a failure, never a skip, so the tests cannot pass without Java."""
    found = shutil.which(name)
    if not found:
        pytest.fail(f"`{name}` is missing: the reference tests need a JDK 17 (scripts/test-spark installs one)")
    return found


def classpath_jars() -> list[str]:
    """The Iceberg runtime jar, and SLF4J's API from PySpark's jars: Iceberg's classes log
    through it and fail to load without it (with no provider, SLF4J discards the logs)."""
    import pyspark

    slf4j = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("slf4j-api-*.jar"))
    if not slf4j:
        pytest.fail("no slf4j-api jar in pyspark/jars")
    return [runtime_jar(), str(slf4j[-1])]


def compiled_classes() -> Path:
    """The directory holding IcebergReference.class, compiled once per source and jar."""
    jars = classpath_jars()
    key = hashlib.sha256(SOURCE.read_bytes() + Path(jars[0]).name.encode()).hexdigest()[:16]
    target = CLASSES / key
    if (target / "IcebergReference.class").exists():
        return target
    CLASSES.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=CLASSES))
    result = subprocess.run(
        [
            _tool("javac"),
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-d",
            str(scratch),
            "-cp",
            os.pathsep.join(jars),
            str(SOURCE),
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        pytest.fail(f"javac failed on {SOURCE}:\n{result.stdout}{result.stderr}")
    try:
        scratch.rename(target)
    except OSError:  # another run got there first; its classes are the same
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def run_java(cases: list[dict]) -> list[dict]:
    """Java's answer for each case, in order: {"name", "accepted", "error", "stage",
    "metadata"}. Cases are {"name", "kind", "base", "request"}; names need not be unique."""
    if not cases:
        return []
    classes = compiled_classes()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([{k: c.get(k) for k in ("name", "kind", "base", "request")} for c in cases], f)
        path = f.name
    try:
        result = subprocess.run(
            [
                _tool("java"),
                "-Xss8m",
                "-cp",
                os.pathsep.join([*classpath_jars(), str(classes)]),
                "IcebergReference",
                path,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        os.unlink(path)
    if result.returncode != 0:
        pytest.fail(f"the Java reference failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    # One answer per case, in order: anything else would let a case pass without an answer.
    assert len(answers) == len(cases), f"{len(cases)} cases but {len(answers)} answers:\n{result.stderr[-4000:]}"
    for case, answer in zip(cases, answers):
        assert answer["name"] == case["name"], (case["name"], answer["name"])
    return answers


def load_corpus() -> list[dict]:
    """Every case of tests/reference/corpus/*.json, checked for shape: a malformed case fails
    here rather than passing for the wrong reason."""
    files = sorted(CORPUS.glob("*.json"))
    assert files, f"no corpus files in {CORPUS}"
    cases, seen = [], {}
    for file in files:
        with open(file) as f:
            loaded = json.load(f)
        assert isinstance(loaded, list) and loaded, f"{file.name}: must be a non-empty JSON array"
        for case in loaded:
            name = case.get("name")
            where = f"{file.name}: {name!r}"
            assert isinstance(name, str) and name, f"{file.name}: a case without a name"
            assert name not in seen, f"{where}: also in {seen.get(name)}"
            seen[name] = file.name
            assert case.get("kind") in KINDS, f"{where}: kind must be one of {sorted(KINDS)}"
            assert "request" in case, f"{where}: no request"
            if case["kind"].startswith("update-"):
                assert isinstance(case.get("base"), dict), f"{where}: an update needs a base"
            expect = case.get("expect") or {}
            assert expect.get("outcome") in ("accepted", "refused"), f"{where}: expect.outcome"
            if expect["outcome"] == "refused":
                assert isinstance(expect.get("message"), str) and expect["message"], f"{where}: expect.message"
            java = case.get("java", "same")
            assert java in ("same", "accepts", "refuses"), f"{where}: java must be same, accepts or refuses"
            if java != "same":
                assert java_expected(case) != expect["outcome"], f"{where}: java {java!r} is what Pangolin does"
                assert case.get("why"), f"{where}: a deliberate difference needs its `why`"
            case["source"] = file.name
            cases.append(case)
    return cases


def java_expected(case: dict) -> str:
    """The outcome Java must have: Pangolin's, unless the case documents a deliberate difference."""
    return {"same": case["expect"]["outcome"], "accepts": "accepted", "refuses": "refused"}[case.get("java", "same")]


def replace_strings(value, old: str, new: str):
    """`value` with every string's `old` prefix replaced by `new` (in keys of no object)."""
    if isinstance(value, str):
        return new + value[len(old) :] if value.startswith(old) else value
    if isinstance(value, list):
        return [replace_strings(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: replace_strings(v, old, new) for k, v in value.items()}
    return value


class Rest:
    """Calls to one running server (the `server` fixture of conftest's `_launch`)."""

    def __init__(self, server, catalog: str = "default"):
        self.server = server
        self.catalog = catalog
        # The default warehouse is `<data-dir>/warehouse` (docs/configuration.md); conftest runs
        # the server with `--data-dir <dir>/data`.
        self.warehouse = Path(server.data_dir) / "data" / "warehouse"
        self.warehouse_url = self.warehouse.as_uri()  # file:///...
        status, config = self.call("GET", f"/v1/config?warehouse={catalog}")
        assert status == 200, config
        self.prefix = {**config.get("defaults", {}), **config.get("overrides", {})}.get("prefix", "")
        assert self.prefix, f"no prefix in {config}"
        self._counter = 0

    def call(self, method: str, path: str, body=None) -> tuple[int, dict | None]:
        """(status, decoded JSON body or None); never raises for an HTTP status."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.server.url + path, method=method, data=data, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, {"unparsed": text.decode(errors="replace")}

    def iceberg(self, method: str, path: str, body=None):
        return self.call(method, f"/v1/{self.prefix}{path}", body)

    def fresh_namespace(self, stem: str = "ref") -> str:
        """A namespace no other case uses, so that nothing collides."""
        self._counter += 1
        name = f"{stem}_{self._counter}_{uuid.uuid4().hex[:6]}"
        status, body = self.iceberg("POST", "/namespaces", {"namespace": [name]})
        assert status == 200, (status, body)
        return name

    def head(self) -> str:
        """The hash `main` points at: a refused request must leave it where it was."""
        status, body = self.call("GET", f"/api/v1/catalogs/{self.catalog}/refs/main")
        assert status == 200, (status, body)
        return body["hash"]

    def files(self) -> set[str]:
        """Every file under the warehouse directory."""
        return {str(p.relative_to(self.warehouse)) for p in self.warehouse.rglob("*") if p.is_file()}

    def local_path(self, location: str) -> Path:
        """The local path of a `file:` location the server gave."""
        parsed = urllib.parse.urlparse(location)
        assert parsed.scheme in ("file", ""), location
        return Path(urllib.parse.unquote(parsed.path))

    def write_metadata(self, directory: str, content) -> str:
        """Writes `content` (JSON) as a new metadata file under `<warehouse>/<directory>/metadata`
        and returns its location."""
        folder = self.warehouse / directory / "metadata"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"00000-{uuid.uuid4()}.metadata.json"
        path.write_text(json.dumps(content))
        return path.as_uri()

    def qualify(self, namespace: str, value):
        """Moves corpus placeholder locations into `<warehouse>/<namespace>/`."""
        for spelling in PLACEHOLDER_SPELLINGS:
            value = replace_strings(value, spelling, f"{self.warehouse_url}/{namespace}/")
        return value

    def unqualify(self, namespace: str, value):
        """The reverse of `qualify`, for answers that are compared with Java's."""
        return replace_strings(value, f"{self.warehouse_url}/{namespace}/", PLACEHOLDER)


def normalise(kind: str, metadata: dict, other: dict) -> dict:
    """`metadata` without what legitimately differs between two correct writers; `other` is the
    metadata it is compared with (some rules depend on what the other side wrote). JSON key
    order never matters: the comparison is of decoded objects."""
    m = copy.deepcopy(metadata)
    # Times of writing: each writer stamps its own clock.
    m.pop("last-updated-ms", None)
    # The metadata log names the files each writer wrote before; the server's names its own
    # files, Java (parsing a file it was handed) knows none.
    m.pop("metadata-log", None)
    if kind in ("create-table", "create-view"):
        # A new table or view gets a random uuid and, without a requested location, the
        # catalog's default location (Java's reference uses file:/tmp/ref/<case>).
        m.pop("table-uuid", None)
        m.pop("view-uuid", None)
        m.pop("location", None)
    if kind == "create-table":
        # TableMetadata.newTableMetadata adds write.parquet.compression-codec=zstd to every new
        # table's properties (a default of Java's writers, not a rule of the format).
        props = m.get("properties") or {}
        if props.get("write.parquet.compression-codec") == "zstd" and "write.parquet.compression-codec" not in (
            other.get("properties") or {}
        ):
            props.pop("write.parquet.compression-codec")
    # "No current snapshot" is written as -1, as null, or not at all.
    if m.get("current-snapshot-id") in (-1, None):
        m.pop("current-snapshot-id", None)
    # Empty lists and maps mean the same as absent ones.
    for key in ("refs", "snapshots", "statistics", "partition-statistics", "snapshot-log", "properties"):
        if m.get(key) in ([], {}, None):
            m.pop(key, None)
    for schema in m.get("schemas", []) + ([m["schema"]] if isinstance(m.get("schema"), dict) else []):
        # An empty identifier-field-ids is the same as none.
        if schema.get("identifier-field-ids") in ([], None):
            schema.pop("identifier-field-ids", None)
        _drop_nulls(schema)
        # Java writes `decimal(10, 2)`, others `decimal(10,2)`: one type, read alike everywhere.
        _compact_decimals(schema)
    # A v1 table or snapshot without a sequence number has 0 (the spec's default).
    if m.get("last-sequence-number") == 0:
        m.pop("last-sequence-number")
    for snapshot in m.get("snapshots") or []:
        if snapshot.get("sequence-number") == 0:
            snapshot.pop("sequence-number")
    if "version-log" in m:
        # The view's version log records when each writer made a version current.
        m["version-log"] = [{k: v for k, v in e.items() if k != "timestamp-ms"} for e in m["version-log"]]
    return m


def _compact_decimals(value):
    """Rewrites every `decimal(P, S)` type string in a schema as `decimal(P,S)`."""
    if isinstance(value, dict):
        for key, v in value.items():
            if isinstance(v, str) and v.startswith("decimal("):
                value[key] = v.replace(" ", "")
            else:
                _compact_decimals(v)
    elif isinstance(value, list):
        for v in value:
            _compact_decimals(v)


def _drop_nulls(value):
    """Optional schema attributes (doc, defaults) written as null mean the same as absent."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for v in value.values():
            _drop_nulls(v)
    elif isinstance(value, list):
        for v in value:
            _drop_nulls(v)


def metadata_diff(kind: str, ours: dict, java: dict) -> str | None:
    """A unified diff of the server's metadata against Java's after `normalise`, or None."""
    # Placeholders in one spelling (Java keeps the case's, the server's are mapped back).
    java = replace_strings(java, PLACEHOLDER_SPELLINGS[0], PLACEHOLDER)
    mine, reference = normalise(kind, ours, java), normalise(kind, java, ours)
    if mine == reference:
        return None

    def pretty(value):
        return json.dumps(value, indent=1, sort_keys=True).splitlines()

    return "\n".join(difflib.unified_diff(pretty(reference), pretty(mine), "java", "pangolin", lineterm=""))
