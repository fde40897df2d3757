"""Export, verify and import of a catalog of N tables (N commits) between two fresh servers,
one on SQLite and one on PostgreSQL sharing a warehouse (docs/benchmarks.md, "Export and
import of a catalog"): python3 bundles.py PANGOLIN_BINARY N, with `requests` installed and
PostgreSQL at PANGOLIN_TEST_POSTGRES_URL (default: the local one, database `test`)."""
import os, subprocess, sys, tempfile, time, socket, uuid, json, concurrent.futures
import requests

BIN = sys.argv[1]
N = int(sys.argv[2])

def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def serve(extra):
    d = tempfile.mkdtemp(prefix="bb-")
    p = port()
    proc = subprocess.Popen([BIN, "serve", "--no-auth", "--listen", f"127.0.0.1:{p}", "--data-dir", d, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{p}"
    for _ in range(300):
        try:
            if requests.get(f"{url}/ready", timeout=1).status_code == 200: break
        except Exception: pass
        time.sleep(0.1)
    return proc, url

wh = tempfile.mkdtemp(prefix="bb-wh-")
a, ua = serve(["--warehouse", f"file://{wh}/"])
b, ub = serve(["--warehouse", f"file://{wh}/", "--database-url", os.environ.get("PANGOLIN_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test"), "--database-schema", f"t_{uuid.uuid4().hex}"])
try:
    requests.post(f"{ua}/v1/default/namespaces", json={"namespace": ["db"]}).raise_for_status()
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
    s = requests.Session()
    def mk(i):
        r = s.post(f"{ua}/v1/default/namespaces/db/tables", json={"name": f"t{i}", "schema": schema}); r.raise_for_status()
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(8) as ex: list(ex.map(mk, range(N)))
    print(f"created {N} tables in {time.time()-t0:.1f}s")
    out = tempfile.mktemp(suffix=".bundle")
    env = {**os.environ, "PANGOLIN_CONFIG_DIR": tempfile.mkdtemp()}
    t0 = time.time()
    subprocess.run([BIN, "export", "--out", out, "--server", ua, "--catalog", "default", "--json"], check=True, env=env, capture_output=True)
    te = time.time() - t0
    t0 = time.time()
    v = json.loads(subprocess.run([BIN, "bundle", "verify", out, "--json"], check=True, env=env, capture_output=True, text=True).stdout)
    tv = time.time() - t0
    t0 = time.time()
    subprocess.run([BIN, "import", out, "--server", ub, "--catalog", "default"], check=True, env=env, capture_output=True)
    ti = time.time() - t0
    print(f"objects {v['objects']} bytes {v['bytes']} export {te:.2f}s verify {tv:.2f}s import(into PostgreSQL, incl. local check) {ti:.2f}s")
finally:
    for p in (a, b):
        p.terminate(); p.wait()
