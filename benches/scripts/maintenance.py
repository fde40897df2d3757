"""What the file sweep and object collection cost on a catalog of TABLES tables with APPENDS
appends each, written by PyIceberg against a server on SQLite (docs/benchmarks.md, "The file
sweep and object collection"):

    python3 maintenance.py TABLES APPENDS PANGOLIN_BINARY [OTHER_BINARY ...]

from the test virtualenv (PyIceberg and pyarrow, pinned in tests/pyiceberg/requirements.txt).
Every append writes a data file, a manifest, a manifest list and a metadata file; one stray
file per table is left unreferenced and every file is aged past the grace period. Then, in
ROUNDS alternating rounds, each binary serves the same data directory and warehouse in turn
and runs a dry-run sweep; the baseline of each round is what any sweep must do at least: list
the warehouse and read every metadata file, manifest list and manifest once, straight from the
disk. Last, the first binary sweeps for real and runs a dry-run object collection.

With PANGOLIN_BENCH_S3_ENDPOINT set (moto, say, as scripts/test starts it) the warehouse is in
bucket PANGOLIN_BENCH_S3_BUCKET (default `pangolin-test`) on that server instead, where each
read is a round trip; files there cannot be aged, so the sweeps only mark and list (no file is
old enough to go), and the baseline reads each file once with boto3, one after another."""
import os, socket, statistics, subprocess, sys, tempfile, time, uuid
from urllib.parse import urlparse

import pyarrow as pa
import requests
from pyiceberg.catalog.rest import RestCatalog

TABLES, APPENDS, BINS = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
GRACE_MS = 3_600_000
ROUNDS = 3
S3_ENDPOINT = os.environ.get("PANGOLIN_BENCH_S3_ENDPOINT")
S3_BUCKET = os.environ.get("PANGOLIN_BENCH_S3_BUCKET", "pangolin-test")
S3_ENV = {
    "PANGOLIN_S3_ENDPOINT": S3_ENDPOINT or "",
    "PANGOLIN_S3_REGION": "us-east-1",
    "PANGOLIN_S3_ACCESS_KEY_ID": "bench",
    "PANGOLIN_S3_SECRET_ACCESS_KEY": "bench-secret",
    "PANGOLIN_S3_HAND_OUT_CREDENTIALS": "true",
}


def s3():
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=S3_ENDPOINT, region_name="us-east-1", aws_access_key_id="bench",
                        aws_secret_access_key="bench-secret", config=Config(s3={"addressing_style": "path"}))


def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


class Server:
    def __init__(self, binary, data, warehouse):
        p = port()
        env = {**os.environ, **(S3_ENV if S3_ENDPOINT else {})}
        self.proc = subprocess.Popen([binary, "serve", "--no-auth", "--listen", f"127.0.0.1:{p}", "--data-dir", data,
                                      "--warehouse", warehouse],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        self.url = f"http://127.0.0.1:{p}"
        for _ in range(300):
            try:
                if requests.get(f"{self.url}/ready", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise SystemExit("the server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

    def job(self, route, body):
        """Starts a maintenance job and waits for it: its result and the wall-clock seconds."""
        t0 = time.perf_counter()
        r = requests.post(f"{self.url}/api/v1/catalogs/default/maintenance/{route}", json=body)
        r.raise_for_status()
        job_id = r.json()["id"]
        while True:
            j = requests.get(f"{self.url}/api/v1/catalogs/default/maintenance/jobs/{job_id}").json()
            if j["state"] != "running":
                break
            time.sleep(0.01)
        elapsed = time.perf_counter() - t0
        if j["state"] != "succeeded":
            raise SystemExit(f"{route}: {j}")
        return j["result"], elapsed


def baseline(warehouse):
    """Lists every file, then reads each metadata file, manifest list and manifest once."""
    wanted = lambda f: f.endswith(".avro") or f.endswith(".metadata.json")  # noqa: E731
    t0 = time.perf_counter()
    read = 0
    if S3_ENDPOINT:
        client, prefix = s3(), urlparse(warehouse).path.lstrip("/")
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=S3_BUCKET, Prefix=prefix)
        files = [o["Key"] for page in pages for o in page.get("Contents", [])]
        for key in filter(wanted, files):
            read += len(client.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read())
    else:
        local = warehouse.removeprefix("file://")
        files = [os.path.join(d, f) for d, _, names in os.walk(local) for f in names]
        for f in filter(wanted, files):
            with open(f, "rb") as fh:
                read += len(fh.read())
    return len(files), read, time.perf_counter() - t0


def write(url, warehouse):
    catalog = RestCatalog("bench", uri=url)
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    t0 = time.perf_counter()
    for t in range(TABLES):
        table = catalog.create_table(f"db.t{t}", schema=schema)
        for a in range(APPENDS):
            table.append(pa.table({"id": [a], "name": [f"row {a}"]}, schema=schema))
        stray = f"{table.location()}/data/stray-{uuid.uuid4().hex}.parquet"
        if S3_ENDPOINT:
            s3().put_object(Bucket=S3_BUCKET, Key=urlparse(stray).path.lstrip("/"), Body=b"died")
        else:
            with open(stray.removeprefix("file://"), "wb") as fh:
                fh.write(b"written by a writer that died")
    print(f"wrote {TABLES} tables x {APPENDS} appends in {time.perf_counter() - t0:.1f} s")
    if not S3_ENDPOINT:
        old = time.time() - 2 * GRACE_MS / 1000
        for d, _, names in os.walk(warehouse.removeprefix("file://")):
            for f in names:
                os.utime(os.path.join(d, f), (old, old))


def main():
    root = tempfile.mkdtemp(prefix="pangolin-maint-")
    data = os.path.join(root, "data")
    if S3_ENDPOINT:
        warehouse = f"s3://{S3_BUCKET}/bench-{uuid.uuid4().hex[:8]}/wh"
    else:
        warehouse = f"file://{root}/wh"
        os.makedirs(warehouse.removeprefix("file://"))
    server = Server(BINS[0], data, warehouse)
    try:
        write(server.url, warehouse)
    finally:
        server.stop()

    times = {b: [] for b in BINS}
    bases = []
    for _ in range(ROUNDS):
        files, read_bytes, base = baseline(warehouse)
        bases.append(base)
        for binary in BINS:
            server = Server(binary, data, warehouse)
            try:
                dry, seconds = server.job("remove-orphan-files", {"grace-period-ms": GRACE_MS, "dry-run": True})
            finally:
                server.stop()
            assert dry["orphan-files"] == (0 if S3_ENDPOINT else TABLES), dry
            times[binary].append(seconds)
    base = statistics.median(bases)
    print(f"baseline: {files} files listed, {read_bytes / 1e6:.1f} MB of metadata read, median {base:.2f} s")
    print(f"each sweep read {dry['objects-read']} objects, {dry['metadata-files-read']} metadata files, "
          f"{dry['manifest-lists-read']} manifest lists, {dry['manifests-read']} manifests; "
          f"listed {dry['files-listed']} files; {dry['orphan-files']} orphans")
    for binary in BINS:
        t = statistics.median(times[binary])
        print(f"sweep, dry run, {binary}: median {t:.2f} s of {ROUNDS} ({t / base:.1f}x baseline)")

    server = Server(BINS[0], data, warehouse)
    try:
        swept, seconds = server.job("remove-orphan-files", {"grace-period-ms": GRACE_MS, "dry-run": False})
        print(f"sweep, {BINS[0]}: {seconds:.2f} s; {swept['deleted']} deleted")
        collected, seconds = server.job("collect-objects", {"dry-run": True})
        print(f"object collection, dry run: {seconds:.2f} s; {collected['objects']} objects listed, "
              f"{collected['unreachable-objects']} unreachable")
    finally:
        server.stop()


main()
