"""Sequential table calls for instruction counts under callgrind (docs/benchmarks.md):
`python3 table_calls.py PORT COMMITS LOADS [CREATES]` against a fresh `serve --no-auth`
creates table `b.t`, appends COMMITS snapshots one after another as an engine does
(`add-snapshot`, `set-snapshot-ref main`, `assert-ref-snapshot-id`, the last 10 snapshots kept,
like the e2e writers), loads the table LOADS times, then creates CREATES more tables in `b`
(as the e2e `create-table` writer does). Run it twice with different counts and divide the
difference of the server's totals by the difference of the counts."""
import http.client, json, sys, time, urllib.request

port, commits, loads = (int(a) for a in sys.argv[1:4])
creates = int(sys.argv[4]) if len(sys.argv) > 4 else 0
base = f"http://127.0.0.1:{port}"
for _ in range(600):
    try:
        urllib.request.urlopen(base + "/ready", timeout=1)
        break
    except Exception:
        time.sleep(0.2)
c = http.client.HTTPConnection("127.0.0.1", port)


def call(method, path, body=None):
    headers = {"content-type": "application/json"} if body is not None else {}
    c.request(method, path, None if body is None else json.dumps(body), headers)
    r = c.getresponse()
    data = r.read()
    assert r.status == 200, (r.status, data)
    return json.loads(data)


call("POST", "/v1/default/namespaces", {"namespace": ["b"]})
schema = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": True},
    {"id": 2, "name": "item", "type": "string", "required": False}]}
table = "/v1/default/namespaces/b/tables/t"
metadata = call("POST", "/v1/default/namespaces/b/tables", {"name": "t", "schema": schema})["metadata"]
kept, main, sequence = [], None, metadata["last-sequence-number"]
for i in range(commits):
    sequence += 1
    sid = 1000 + i
    snapshot = {"snapshot-id": sid, "sequence-number": sequence,
                "timestamp-ms": int(time.time() * 1000), "schema-id": 0,
                "manifest-list": f"file:///nowhere/snap-{sid}.avro",
                "summary": {"operation": "append", "added-records": "1"}}
    if main is not None:
        snapshot["parent-snapshot-id"] = main
    updates = [{"action": "add-snapshot", "snapshot": snapshot},
               {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": sid}]
    if len(kept) >= 10:
        updates.append({"action": "remove-snapshots", "snapshot-ids": kept[:len(kept) - 9]})
        kept = kept[len(kept) - 9:]
    requirement = {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": main}
    call("POST", table, {"requirements": [requirement], "updates": updates})
    kept.append(sid)
    main = sid
for _ in range(loads):
    call("GET", table)
for i in range(creates):
    call("POST", "/v1/default/namespaces/b/tables", {"name": f"c{i}", "schema": schema})
print("done")
