"""Clone, fetch and push between two fresh servers, one on SQLite and one on PostgreSQL sharing
a warehouse, with a catalog whose history is N table creations (docs/benchmarks.md, "Fetch
and push between servers"): python3 remotes.py PANGOLIN_BINARY N, with `requests` installed
and PostgreSQL at PANGOLIN_TEST_POSTGRES_URL (default: the local one, database `test`).

The baseline, measured in the same run, is the clone: every object of the catalog through the
same client and routes. Each fetch and push after it carries only what the other side lacks,
and finds it without walking the catalog's history."""
import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import requests

BIN = sys.argv[1]
N = int(sys.argv[2])
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}


def port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def serve(extra):
    d = tempfile.mkdtemp(prefix="rb-")
    p = port()
    proc = subprocess.Popen(
        [BIN, "serve", "--no-auth", "--listen", f"127.0.0.1:{p}", "--data-dir", d, *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{p}"
    for _ in range(300):
        try:
            if requests.get(f"{url}/ready", timeout=1).status_code == 200:
                break
        except Exception:
            pass
        time.sleep(0.1)
    return proc, url


def tables(url, names, threads=8):
    s = requests.Session()

    def mk(name):
        s.post(f"{url}/v1/default/namespaces/db/tables", json={"name": name, "schema": SCHEMA}).raise_for_status()

    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(mk, names))


ENV = {**os.environ, "PANGOLIN_CONFIG_DIR": tempfile.mkdtemp(), "PANGOLIN_CATALOG": "default"}


def cli(server, *args):
    """Runs the client against `server`; (seconds, parsed --json answer)."""
    t0 = time.time()
    done = subprocess.run([BIN, *args, "--server", server, "--json"], check=True, env=ENV, capture_output=True, text=True)
    return time.time() - t0, json.loads(done.stdout)


warehouse = tempfile.mkdtemp(prefix="rb-wh-")
database = os.environ.get("PANGOLIN_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
a, origin = serve(["--warehouse", f"file://{warehouse}/"])
b, mirror = serve(["--warehouse", f"file://{warehouse}/", "--database-url", database, "--database-schema", f"t_{uuid.uuid4().hex}"])
try:
    requests.post(f"{origin}/v1/default/namespaces", json={"namespace": ["db"]}).raise_for_status()
    t0 = time.time()
    tables(origin, [f"t{i}" for i in range(N)])
    print(f"created {N} tables on the origin (SQLite) in {time.time() - t0:.1f}s")

    took, cloned = cli(mirror, "clone", origin, "--from", "default")
    print(f"| clone (baseline) | {N + 1:,} | {cloned['fetch']['objects'] + cloned['import']['objects']:,} | {took:.2f} s |")
    for k in (1, 100):
        tables(origin, [f"new{k}_{i}" for i in range(k)], threads=1)
        took, fetched = cli(mirror, "fetch", "origin")
        print(f"| fetch after {k} commit(s) on the origin | {k} | {fetched['objects']:,} | {took:.2f} s |")
    cli(mirror, "pull", "origin", "main")
    tables(mirror, ["pushed"], threads=1)
    took, pushed = cli(mirror, "push", "origin", "main")
    print(f"| push of 1 commit | 1 | {pushed['objects']:,} | {took:.2f} s |")
finally:
    for p in (a, b):
        p.terminate()
        p.wait()
