"""The server's metadata checks against Iceberg's Java reference, case by case.

Each case of tests/reference/corpus/*.json (its format: tests/reference/README.md) runs twice:
through Iceberg's own code (IcebergReference.java, one JVM for the whole corpus) and through the
real server. Both must reach the case's expected outcome, unless the case documents a deliberate
difference (`"java": "accepts"` or `"refuses"`), in which case Java must still behave as
documented, so that the difference stays true. A refusal must be a 400 BadRequestException
(or the case's `expect.code` and `expect.type`) whose message contains the expected text, and
must change nothing: `main` does not move and no file appears in the warehouse.
Where both accept, the metadata they produce must be the same up to what legitimately differs
(see `normalise`).
"""

import json

import pytest

from conftest import _launch
from iceberg_reference import PLACEHOLDER, Rest, java_expected, load_corpus, metadata_diff, run_java

CORPUS = load_corpus()


def test_corpus_is_not_empty():
    """A corpus that failed to load or is empty would make every other test here vanish."""
    assert len(CORPUS) >= 10
    assert {c["kind"] for c in CORPUS} >= {
        "create-table",
        "update-table",
        "register-table",
        "create-view",
        "update-view",
    }
    assert {c["expect"]["outcome"] for c in CORPUS} == {"accepted", "refused"}


@pytest.fixture(scope="module")
def server():
    """A server of this module's own: refusals are checked against its whole warehouse."""
    with _launch(auth=False) as running:
        yield running


@pytest.fixture(scope="module")
def rest(server):
    return Rest(server)


@pytest.fixture(scope="module")
def java():
    """Java's answers for the whole corpus, by case name, from one JVM."""
    return {a["name"]: a for a in run_java(CORPUS)}


def run_on_server(rest: Rest, case: dict) -> dict:
    """Sends the case to the server as its kind says; returns {"status", "body", "metadata"
    (placeholders restored), "head_before", "head_after", "new_files"}."""
    kind = case["kind"]
    ns = rest.fresh_namespace()
    request = rest.qualify(ns, case["request"])
    result = {}
    if kind == "create-table":
        before = (rest.head(), rest.files())
        status, body = rest.iceberg("POST", f"/namespaces/{ns}/tables", request)
    elif kind == "create-view":
        before = (rest.head(), rest.files())
        status, body = rest.iceberg("POST", f"/namespaces/{ns}/views", request)
    elif kind == "register-table":
        location = rest.write_metadata(f"{ns}/t", request)
        before = (rest.head(), rest.files())
        status, body = rest.iceberg("POST", f"/namespaces/{ns}/register", {"name": "t", "metadata-location": location})
    elif kind in ("update-table", "update-view"):
        noun, route = ("tables", "register") if kind == "update-table" else ("views", "register-view")
        base = rest.qualify(ns, case["base"])
        if not isinstance(base.get("location"), str):
            pytest.fail("the base needs a location (use file:/tmp/ref/...)")
        directory = rest.local_path(base["location"]).relative_to(rest.warehouse)
        location = rest.write_metadata(str(directory), base)
        s, b = rest.iceberg("POST", f"/namespaces/{ns}/{route}", {"name": "t", "metadata-location": location})
        if s != 200:
            pytest.fail(f"the server cannot register the case's base, so the update cannot be tried: {s} {b}")
        result["registered"] = b
        before = (rest.head(), rest.files())
        status, body = rest.iceberg("POST", f"/namespaces/{ns}/{noun}/t", request)
    else:
        raise AssertionError(kind)
    after = (rest.head(), rest.files())
    result.update(status=status, body=body, head_before=before[0], head_after=after[0])
    result["new_files"] = sorted(after[1] - before[1])
    if status == 200 and isinstance(body, dict) and isinstance(body.get("metadata"), dict):
        result["metadata"] = rest.unqualify(ns, body["metadata"])
    return result


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_case(case, java, rest):
    """One corpus case: Java's outcome, the server's outcome, and their metadata."""
    expect = case["expect"]
    answer = java[case["name"]]

    # (a) The reference. A base Java cannot read is a mistake in the case, not an answer.
    assert answer["stage"] != "parse-base", f"the case's base is not valid metadata for Java: {answer['error']}"
    assert answer["stage"] != "harness", f"the Java harness could not run the case: {answer['error']}"
    java_outcome = "accepted" if answer["accepted"] else "refused"
    wanted = java_expected(case)
    assert java_outcome == wanted, (
        f"Java {java_outcome} this case but the corpus says Java {wanted} it"
        + (f": {answer['error']}" if answer["error"] else "")
        + ("" if case.get("java", "same") == "same" else f" (documented difference: {case['why']})")
    )

    # (b) The server.
    server = run_on_server(rest, case)
    status, body = server["status"], server["body"]
    assert status < 500, f"server error {status}: {body}"
    if expect["outcome"] == "accepted":
        assert status == 200, f"the server refused a valid request ({status}): {body}"
        assert "metadata" in server, f"no metadata in the server's answer: {body}"
    else:
        code = expect.get("code", 400)
        kind = expect.get("type", "BadRequestException")
        assert status != 200, "the server accepted what it must refuse" + (
            f" (Java: {answer['error']})" if answer["error"] else ""
        )
        error = (body or {}).get("error") if isinstance(body, dict) else None
        assert isinstance(error, dict), f"not an Iceberg error body ({status}): {body}"
        assert (status, error.get("type"), error.get("code")) == (code, kind, code), (
            f"expected {code} {kind}, got {status} {json.dumps(body)}"
        )
        assert expect["message"] in (error.get("message") or ""), (
            f"the message does not mention {expect['message']!r}: {error.get('message')!r}"
            + (f" (Java says: {answer['error']})" if answer["error"] else "")
        )
        # A refusal changes nothing: no commit on the branch, no file in the warehouse.
        assert server["head_after"] == server["head_before"], "a refused request moved `main`"
        assert server["new_files"] == [], f"a refused request wrote files: {server['new_files']}"

    # (c) Both accepted: the same metadata, up to what legitimately differs.
    if expect["outcome"] == "accepted" and answer["accepted"]:
        diff = metadata_diff(case["kind"], server["metadata"], answer["metadata"])
        if diff:
            pytest.fail(f"the server's metadata differs from Java's (placeholders are {PLACEHOLDER}):\n{diff}")
