"""Properties of the metadata files the server writes, over generated requests: whatever the
server accepts, Iceberg can read, in Python (PyIceberg) and in Java (the reference program).

The corpus (test_reference.py) pins chosen cases; these tests look where nobody thought to:
(i) random sequences of valid commits to one table, (ii) random single mutations of a valid
create-table request. Hypothesis runs a fixed, bounded number of examples with a fixed seed
(`derandomize`), so a run in CI is deterministic and its time bounded; it keeps no example
database. Java checks are batched after Hypothesis is done: one JVM per test.
"""

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.table.metadata import TableMetadataUtil

from conftest import _launch
from iceberg_reference import Rest, metadata_diff, run_java

EXAMPLES = 40
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


@pytest.fixture(scope="module")
def server():
    """A server of this module's own."""
    with _launch(auth=False) as running:
        yield running


@pytest.fixture(scope="module")
def rest(server):
    return Rest(server)


def load_metadata_file(rest: Rest, namespace: str, table: str = "t") -> tuple[str, str]:
    """(location, content) of the metadata file a load of the table names, read from disk."""
    status, body = rest.iceberg("GET", f"/namespaces/{namespace}/tables/{table}")
    assert status == 200, (status, body)
    location = body["metadata-location"]
    path = rest.local_path(location)
    assert path.is_file(), f"the load answer names {location}, which is not on disk"
    return location, path.read_text()


def pyiceberg_reads(content: str, context) -> None:
    """PyIceberg must parse every file the server writes."""
    try:
        TableMetadataUtil.parse_raw(content)
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        pytest.fail(f"PyIceberg cannot read a file the server wrote ({type(e).__name__}: {e})\n{context}")


def assert_bad_request(status: int, body) -> None:
    """A refusal of a client's mistake is a 400 BadRequestException in Iceberg's error shape."""
    error = body.get("error") if isinstance(body, dict) else None
    assert status == 400 and isinstance(error, dict), f"expected a 400 Iceberg error, got {status}: {body}"
    assert (error.get("type"), error.get("code")) == ("BadRequestException", 400), body


# (i) Sequences of valid commits.

COLUMNS = [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "category", "required": False, "type": "string"},
    {"id": 3, "name": "ts", "required": False, "type": "timestamptz"},
    {"id": 4, "name": "day", "required": False, "type": "date"},
    {"id": 5, "name": "amount", "required": False, "type": "decimal(10,2)"},
    {"id": 6, "name": "n", "required": False, "type": "int"},
    {"id": 7, "name": "flag", "required": False, "type": "boolean"},
    {"id": 8, "name": "local_ts", "required": False, "type": "timestamp"},
]
NEW_COLUMN_TYPES = [
    "int",
    "long",
    "string",
    "date",
    "timestamp",
    "timestamptz",
    "double",
    "decimal(12,3)",
    "boolean",
    "binary",
    "uuid",
    "fixed[8]",
]
# Which primitive types each transform applies to (the spec's transform table).
TEMPORAL = {"date", "timestamp", "timestamptz"}
FITS = {
    "identity": None,  # every primitive
    "bucket[N]": {
        "int",
        "long",
        "decimal",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "string",
        "uuid",
        "fixed",
        "binary",
    },
    "truncate[W]": {"int", "long", "decimal", "string", "binary"},
    "year": TEMPORAL,
    "month": TEMPORAL,
    "day": TEMPORAL,
    "hour": {"timestamp", "timestamptz"},
    "void": None,
}
PROPERTY_KEYS = ["owner", "comment", "k1", "k2", "commit.retry.num-retries"]


def base_type(type_) -> str:
    return type_.split("(")[0].split("[")[0]


def current_schema(md: dict) -> dict:
    return next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"])


def primitive_columns(md: dict) -> list[dict]:
    return [f for f in current_schema(md)["fields"] if isinstance(f["type"], str)]


def fitting_transform(draw, column: dict) -> str:
    """A transform that applies to the column's type, its parameter drawn."""
    kind = base_type(column["type"])
    names = [name for name, types in FITS.items() if types is None or kind in types]
    name = draw(st.sampled_from(names))
    if name == "bucket[N]":
        return f"bucket[{draw(st.integers(1, 64))}]"
    if name == "truncate[W]":
        return f"truncate[{draw(st.integers(1, 20))}]"
    return name


def add_column(draw, md, rest, ns):
    schema = current_schema(md)
    column_id = md["last-column-id"] + 1
    added = {
        "id": column_id,
        "name": f"c{column_id}",
        "required": False,
        "type": draw(st.sampled_from(NEW_COLUMN_TYPES)),
    }
    new = {
        "type": "struct",
        "schema-id": max(s["schema-id"] for s in md["schemas"]) + 1,
        "fields": schema["fields"] + [added],
    }
    if schema.get("identifier-field-ids"):
        new["identifier-field-ids"] = schema["identifier-field-ids"]
    return [
        {"action": "add-schema", "schema": new, "last-column-id": column_id},
        {"action": "set-current-schema", "schema-id": -1},
    ]


def add_spec(draw, md, rest, ns):
    columns = draw(
        st.lists(st.sampled_from(primitive_columns(md)), min_size=1, max_size=3, unique_by=lambda c: c["id"])
    )
    first = md.get("last-partition-id", 999) + 1
    fields = []
    for offset, column in enumerate(columns):
        transform = fitting_transform(draw, column)
        label = transform.split("[")[0]
        fields.append(
            {
                "name": f"{column['name']}_{label}_{first + offset}",
                "transform": transform,
                "source-id": column["id"],
                "field-id": first + offset,
            }
        )
    spec_id = max(s["spec-id"] for s in md["partition-specs"]) + 1
    return [
        {"action": "add-spec", "spec": {"spec-id": spec_id, "fields": fields}},
        {"action": "set-default-spec", "spec-id": -1},
    ]


def add_sort_order(draw, md, rest, ns):
    columns = draw(
        st.lists(st.sampled_from(primitive_columns(md)), min_size=1, max_size=2, unique_by=lambda c: c["id"])
    )
    fields = [
        {
            "transform": fitting_transform(draw, column),
            "source-id": column["id"],
            "direction": draw(st.sampled_from(["asc", "desc"])),
            "null-order": draw(st.sampled_from(["nulls-first", "nulls-last"])),
        }
        for column in columns
    ]
    order_id = max(o["order-id"] for o in md["sort-orders"]) + 1
    return [
        {"action": "add-sort-order", "sort-order": {"order-id": order_id, "fields": fields}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
    ]


def set_properties(draw, md, rest, ns):
    keys = draw(st.lists(st.sampled_from(PROPERTY_KEYS), min_size=1, max_size=3, unique=True))
    return [
        {"action": "set-properties", "updates": {k: draw(st.sampled_from(["1", "2", "x", "a value"])) for k in keys}}
    ]


def remove_properties(draw, md, rest, ns):
    present = sorted(md.get("properties", {}))
    keys = draw(st.lists(st.sampled_from(present + PROPERTY_KEYS), min_size=1, max_size=2, unique=True))
    return [{"action": "remove-properties", "removals": keys}]


def upgrade_format_version(draw, md, rest, ns):
    return [{"action": "upgrade-format-version", "format-version": draw(st.integers(md["format-version"], 3))}]


def set_location(draw, md, rest, ns):
    return [{"action": "set-location", "location": f"{rest.warehouse_url}/{ns}/moved_{draw(st.integers(0, 99))}"}]


def add_snapshot(draw, md, rest, ns):
    snapshot_id = draw(st.integers(1, 2**62))
    previous = max((s["timestamp-ms"] for s in md.get("snapshots", [])), default=0)
    snapshot = {
        "snapshot-id": snapshot_id,
        "timestamp-ms": max(int(time.time() * 1000), previous + 1),
        # Metadata only: no manifest list is written, and none is read.
        "manifest-list": f"{md['location']}/metadata/snap-{snapshot_id}.avro",
        "summary": {"operation": "append"},
        "schema-id": md["current-schema-id"],
    }
    if md.get("current-snapshot-id") not in (None, -1):
        snapshot["parent-snapshot-id"] = md["current-snapshot-id"]
    if md["format-version"] >= 2:
        snapshot["sequence-number"] = md.get("last-sequence-number", 0) + 1
    if md["format-version"] >= 3:
        snapshot["first-row-id"] = md.get("next-row-id", 0)
        snapshot["added-rows"] = draw(st.integers(0, 1000))
    ref = draw(st.sampled_from(["main", "main", "main", "audit", "v1"]))
    return [
        {"action": "add-snapshot", "snapshot": snapshot},
        {
            "action": "set-snapshot-ref",
            "ref-name": ref,
            "type": "tag" if ref == "v1" else "branch",
            "snapshot-id": snapshot_id,
        },
    ]


ACTIONS = [
    add_column,
    add_spec,
    add_sort_order,
    set_properties,
    remove_properties,
    upgrade_format_version,
    set_location,
    add_snapshot,
]


def test_valid_commit_sequences_write_loadable_metadata(rest):
    """Random sequences of valid commits: every file the server writes loads in PyIceberg and
    Java, every commit the server takes Java takes too (and writes the same metadata), and a
    commit the server refuses is one Java refuses."""
    created, steps = [], []

    @SETTINGS
    @given(st.data())
    def run(data):
        draw = data.draw
        ns = rest.fresh_namespace("seq")
        version = draw(st.sampled_from([1, 2, 3]), label="format-version")
        status, body = rest.iceberg(
            "POST",
            f"/namespaces/{ns}/tables",
            {
                "name": "t",
                "schema": {"type": "struct", "schema-id": 0, "identifier-field-ids": [1], "fields": COLUMNS},
                "properties": {"format-version": str(version)},
            },
        )
        assert status == 200, (status, body)
        location, content = load_metadata_file(rest, ns)
        pyiceberg_reads(content, f"created: {location}")
        created.append(content)
        history = []
        # A permutation rather than independent picks: Hypothesis favours the first choices,
        # and every kind of commit should come up often.
        actions = draw(st.permutations(ACTIONS), label="commits")[: draw(st.integers(1, 6))]
        for action in actions:
            md = json.loads(content)
            updates = action(draw, md, rest, ns)
            request = {"requirements": [{"type": "assert-table-uuid", "uuid": md["table-uuid"]}], "updates": updates}
            history.append(request)
            status, body = rest.iceberg("POST", f"/namespaces/{ns}/tables/t", request)
            assert status < 500, f"server error {status}: {body}\nafter {json.dumps(history)}"
            step = {"base": content, "request": request, "status": status, "body": body, "result": None}
            if status == 200:
                new_location, content = load_metadata_file(rest, ns)
                assert new_location != location, "an accepted commit must write a new metadata file"
                location = new_location
                pyiceberg_reads(content, f"commits: {json.dumps(history)}")
                step["result"] = content
            else:
                assert status in (400, 409), (status, body)
            steps.append(step)

    run()

    # Non-vacuous: the examples ran, and most commits were taken.
    accepted = [s for s in steps if s["result"] is not None]
    assert len(created) >= EXAMPLES and len(steps) >= EXAMPLES, (len(created), len(steps))
    assert len(accepted) >= len(steps) // 2, f"only {len(accepted)} of {len(steps)} generated commits were taken"
    assert {s["request"]["updates"][0]["action"] for s in accepted} >= {
        "add-schema",
        "add-spec",
        "add-sort-order",
        "add-snapshot",
    }

    cases = [{"name": f"created {i}", "kind": "parse-table", "request": json.loads(c)} for i, c in enumerate(created)]
    for i, s in enumerate(steps):
        cases.append(
            {"name": f"commit {i}", "kind": "update-table", "base": json.loads(s["base"]), "request": s["request"]}
        )
        if s["result"] is not None:
            cases.append({"name": f"file {i}", "kind": "parse-table", "request": json.loads(s["result"])})
    answers = {a["name"]: a for a in run_java(cases)}

    problems = []
    for i, c in enumerate(created):
        if not answers[f"created {i}"]["accepted"]:
            problems.append(f"Java cannot read a created table's file: {answers[f'created {i}']['error']}")
    for i, s in enumerate(steps):
        java, request = answers[f"commit {i}"], json.dumps(s["request"])
        if s["result"] is None:
            if java["accepted"]:
                problems.append(
                    f"the server refused a commit Java takes ({s['status']} {json.dumps(s['body'])}): {request}"
                )
            continue
        if not answers[f"file {i}"]["accepted"]:
            problems.append(f"Java cannot read the file of commit {request}: {answers[f'file {i}']['error']}")
        if not java["accepted"]:
            problems.append(f"the server took a commit Java refuses ({java['error']}): {request}")
        else:
            diff = metadata_diff("update-table", json.loads(s["result"]), java["metadata"])
            if diff:
                problems.append(f"the server's metadata after {request} differs from Java's:\n{diff}")
    assert not problems, f"{len(problems)} problems, the first 10:\n" + "\n\n".join(problems[:10])


# (ii) Single mutations of a valid create-table request.

VALID_CREATE = {
    "name": "t",
    "schema": {
        "type": "struct",
        "schema-id": 0,
        "identifier-field-ids": [1],
        "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "category", "required": False, "type": "string"},
            {"id": 3, "name": "ts", "required": False, "type": "timestamptz"},
            {"id": 4, "name": "amount", "required": False, "type": "decimal(10,2)"},
            {
                "id": 5,
                "name": "tags",
                "required": False,
                "type": {"type": "list", "element-id": 6, "element": "string", "element-required": False},
            },
            {
                "id": 7,
                "name": "attrs",
                "required": False,
                "type": {
                    "type": "map",
                    "key-id": 8,
                    "key": "string",
                    "value-id": 9,
                    "value": "long",
                    "value-required": False,
                },
            },
            {
                "id": 10,
                "name": "point",
                "required": False,
                "type": {
                    "type": "struct",
                    "fields": [
                        {"id": 11, "name": "x", "required": True, "type": "double"},
                        {"id": 12, "name": "y", "required": True, "type": "double"},
                    ],
                },
            },
        ],
    },
    "partition-spec": {
        "spec-id": 0,
        "fields": [
            {"name": "ts_day", "transform": "day", "source-id": 3, "field-id": 1000},
            {"name": "id_bucket", "transform": "bucket[8]", "source-id": 1, "field-id": 1001},
            {"name": "category_trunc", "transform": "truncate[4]", "source-id": 2, "field-id": 1002},
        ],
    },
    "write-order": {
        "order-id": 1,
        "fields": [{"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}],
    },
    "properties": {"format-version": "2", "owner": "mutations"},
}

WRONG_VALUES = [None, True, False, 0, -1, 2, 99, 2**31, 2**63, 1.5, "", "x", "1", [], [1], {}, {"a": 1}]
GARBAGE_TYPES = [
    "foo",
    "",
    "LONG",
    "list",
    "struct",
    "map",
    "decimal(0,0)",
    "decimal(39,2)",
    "decimal(2,5)",
    "decimal(x,1)",
    "fixed[0]",
    "fixed[-1]",
    "fixed[x]",
    "timestamp_ns",
    "variant",
    "unknown",
    "geometry",
    "string ",
]
BAD_TRANSFORMS = [
    "bucket[0]",
    "bucket[-1]",
    "bucket[2147483648]",
    "bucket[1.5]",
    "bucket[]",
    "bucket",
    "truncate[0]",
    "truncate[-5]",
    "truncate",
    "year",
    "month",
    "hour",
    "void",
    "identity",
    "zorder",
    "",
    "YEAR",
    "Day",
    "bucket[4",
    "truncate[ 4]",
]
BAD_SOURCE_IDS = [0, -1, 99, 5, 6, 7, 9, 10, 11, 4]
BAD_FORMAT_VERSIONS = ["0", "1", "3", "4", "-1", "x", "", " 2", "2.0"]


def json_paths(value, prefix=()):
    """The path of every node below `value` (keys and list indexes)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in items:
        path = (*prefix, key)
        yield path
        yield from json_paths(child, path)


def at(value, path):
    for key in path:
        value = value[key]
    return value


def mutated_create(draw) -> tuple[str, dict]:
    """One mutation of VALID_CREATE and a description of it."""
    request = json.loads(json.dumps(VALID_CREATE))
    paths = list(json_paths(request))
    kind = draw(
        st.sampled_from(["drop", "wrong-value", "type", "duplicate-id", "transform", "source-id", "format-version"]),
        label="mutation",
    )
    if kind == "drop":
        path = draw(st.sampled_from([p for p in paths if isinstance(at(request, p[:-1]), dict)]))
        del at(request, path[:-1])[path[-1]]
        return f"drop {list(path)}", request
    if kind == "wrong-value":
        path, value = draw(st.sampled_from(paths)), draw(st.sampled_from(WRONG_VALUES))
    elif kind == "type":
        candidates = [
            p
            for p in paths
            if p[-1] in ("type", "element", "key", "value")
            and isinstance(at(request, p), str)
            and at(request, p) != "struct"
        ]
        path, value = draw(st.sampled_from(candidates)), draw(st.sampled_from(GARBAGE_TYPES))
    elif kind == "duplicate-id":
        ids = [p for p in paths if p[-1] in ("id", "element-id", "key-id", "value-id", "field-id")]
        path, other = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
        value = at(request, other)
    elif kind == "transform":
        path = draw(st.sampled_from([p for p in paths if p[-1] == "transform"]))
        value = draw(st.sampled_from(BAD_TRANSFORMS))
    elif kind == "source-id":
        path = draw(st.sampled_from([p for p in paths if p[-1] == "source-id"]))
        value = draw(st.sampled_from(BAD_SOURCE_IDS))
    else:
        path, value = ("properties", "format-version"), draw(st.sampled_from(BAD_FORMAT_VERSIONS))
    at(request, path[:-1])[path[-1]] = value
    return f"set {list(path)} to {json.dumps(value)}", request


def create_mutated(rest: Rest, draw, read_file: bool = True) -> dict:
    """Sends one mutated create; returns what happened, with the written file if accepted and
    `read_file` (which PyIceberg must then read)."""
    description, request = mutated_create(draw)
    ns = rest.fresh_namespace("mut")
    status, body = rest.iceberg("POST", f"/namespaces/{ns}/tables", request)
    assert status < 500, f"server error {status} for: {description}\n{body}"
    outcome = {"description": description, "request": request, "status": status, "body": body, "file": None}
    if status == 200:
        # The file the create wrote (a staged create writes none).
        if read_file and request.get("stage-create") is not True:
            path = rest.local_path(body["metadata-location"])
            assert path.is_file(), f"the create answer names {path}, which is not on disk"
            content = path.read_text()
            pyiceberg_reads(content, f"after: {description}")
            outcome["file"] = content
    else:
        assert_bad_request(status, body)
    return outcome


def test_mutated_creates_are_refused_or_loadable(rest):
    """A mutated create-table request is refused with a 400 BadRequestException, or accepted
    with a metadata file that PyIceberg and Java both load: never an accepted, unloadable
    file."""
    outcomes = []

    @SETTINGS
    @given(st.data())
    def run(data):
        outcomes.append(create_mutated(rest, data.draw))

    run()
    assert len(outcomes) >= EXAMPLES
    # The unmutated request too, so that Java always has files to read.
    ns = rest.fresh_namespace("mut")
    status, body = rest.iceberg("POST", f"/namespaces/{ns}/tables", VALID_CREATE)
    assert status == 200, (status, body)
    files = [("the valid request", load_metadata_file(rest, ns)[1])]
    files += [(o["description"], o["file"]) for o in outcomes if o["file"] is not None]
    answers = run_java([{"name": d, "kind": "parse-table", "request": json.loads(f)} for d, f in files])
    unreadable = [f"{d}: {a['error']}" for (d, _), a in zip(files, answers) if not a["accepted"]]
    assert not unreadable, "Java cannot read files the server wrote after these mutations:\n" + "\n".join(unreadable)


def test_mutated_creates_accepted_only_where_java_accepts(rest):
    """Another sample of mutated creates: whatever the server takes, Java's REST server side
    (TableMetadata.newTableMetadata on the parsed request) takes too. The other direction is
    not checked here: the server deliberately refuses some requests Java takes (the corpus
    documents each such difference with `"java": "accepts"`)."""
    outcomes = []

    @SETTINGS
    @given(st.data())
    def run(data):
        outcomes.append(create_mutated(rest, data.draw, read_file=False))

    run()
    assert len(outcomes) >= EXAMPLES
    answers = run_java([{"name": o["description"], "kind": "create-table", "request": o["request"]} for o in outcomes])
    wrong = sorted(
        {
            f"{o['description']}: Java refuses it ({a['error']})"
            for o, a in zip(outcomes, answers)
            if o["status"] == 200 and not a["accepted"]
        }
    )
    assert not wrong, f"the server accepted {len(wrong)} mutated creates that Java refuses:\n" + "\n".join(wrong)
