"""What durable metadata files cost this disk (docs/benchmarks.md): `python3 sync_costs.py DIR [N]`
creates N (default 300) small files under DIR for each case, as the catalog does, and prints the
median and mean time of their syncs, one after another and issued at once from a thread pool:

- `new table`: a file in two new directories (`<table>/metadata/`), so four syncs: the file's
  data, its directory, the table's directory and the directory above it;
- `commit`: a file in a directory that exists: the file's data and its directory;
- `append`: the data of a file that only grows, as a database's write-ahead log does.

The figures are the floor under one writer's create and commit on this disk, before any of the
catalog's own work."""
import concurrent.futures
import os
import statistics
import sys
import time
import uuid

root = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
body = b"x" * 3000
pool = concurrent.futures.ThreadPoolExecutor(4)


def sync(fd, data_only):
    (os.fdatasync if data_only else os.fsync)(fd)


def timed(fds, together):
    """Syncs the first descriptor's data and the others whole; returns seconds."""
    start = time.perf_counter()
    if together:
        list(pool.map(lambda i: sync(fds[i], i == 0), range(len(fds))))
    else:
        for i, fd in enumerate(fds):
            sync(fd, i == 0)
    elapsed = time.perf_counter() - start
    for fd in fds:
        os.close(fd)
    return elapsed


def new_table(together):
    table = os.path.join(root, "tables", uuid.uuid4().hex)
    metadata = os.path.join(table, "metadata")
    os.makedirs(metadata)
    fd = os.open(os.path.join(metadata, "00000.metadata.json"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.write(fd, body)
    dirs = [os.open(d, os.O_RDONLY) for d in (metadata, table, os.path.dirname(table))]
    return timed([fd] + dirs, together)


def commit(together):
    metadata = os.path.join(root, "commits")
    fd = os.open(os.path.join(metadata, uuid.uuid4().hex), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.write(fd, body)
    return timed([fd, os.open(metadata, os.O_RDONLY)], together)


def show(name, seconds):
    print(f"{name:<28} p50 {statistics.median(seconds) * 1e3:.3f} ms   mean {statistics.mean(seconds) * 1e3:.3f} ms")


os.makedirs(os.path.join(root, "tables"), exist_ok=True)
os.makedirs(os.path.join(root, "commits"), exist_ok=True)
for together in (False, True):
    way = "at once" if together else "one after another"
    show(f"new table, {way}", [new_table(together) for _ in range(count)])
    show(f"commit, {way}", [commit(together) for _ in range(count)])
log = os.open(os.path.join(root, "log"), os.O_CREAT | os.O_WRONLY | os.O_APPEND)
appended = []
for _ in range(count):
    os.write(log, body)
    start = time.perf_counter()
    os.fdatasync(log)
    appended.append(time.perf_counter() - start)
os.close(log)
show("append", appended)
