"""Sequential loadTable requests for instruction counts under callgrind (docs/benchmarks.md,
"Metrics and request ids"): python3 loadtable.py PORT N against a fresh `serve --no-auth`."""
import http.client, json, sys, time, urllib.request
port = int(sys.argv[1]); n = int(sys.argv[2])
base = f"http://127.0.0.1:{port}"
for _ in range(600):
    try:
        urllib.request.urlopen(base + "/ready", timeout=1); break
    except Exception: time.sleep(0.2)
def post(path, body):
    r = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    return urllib.request.urlopen(r).read()
post("/v1/default/namespaces", {"namespace": ["b"]})
post("/v1/default/namespaces/b/tables", {"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}})
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(n):
    c.request("GET", "/v1/default/namespaces/b/tables/t"); r = c.getresponse(); r.read(); assert r.status == 200
print("done")
