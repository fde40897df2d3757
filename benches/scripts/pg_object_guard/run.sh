#!/usr/bin/env bash
# The cost of guarding stored objects against collection in a PostgreSQL publish: a bare
# insert-one-object-and-move-one-ref transaction in three variants, interleaved, 8 clients.
# Usage: run.sh [postgres-url] [rounds]
set -euo pipefail
cd "$(dirname "$0")"
url="${1:-postgres://postgres@127.0.0.1:5432/test}"
rounds="${2:-6}"
psql "$url" -q <<'SQL'
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS lockbench CASCADE;
CREATE SCHEMA lockbench;
CREATE TABLE lockbench.objects (repo TEXT COLLATE "C" NOT NULL, id BYTEA NOT NULL,
    kind SMALLINT NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (repo, id));
CREATE TABLE lockbench.refs (repo TEXT COLLATE "C" NOT NULL, name TEXT NOT NULL,
    n BIGINT NOT NULL, PRIMARY KEY (repo, name));
INSERT INTO lockbench.refs SELECT 'r' || g, 'main', 0 FROM generate_series(1, 8) g;
SQL
results="$(mktemp)"
for _ in $(seq 1 "$rounds"); do
    for variant in do_nothing row_lock advisory_lock; do
        tps="$(pgbench -n -c 8 -j 2 -T 5 -f "$variant.sql" "$url" 2>/dev/null | awk '/^tps/ {print int($3)}')"
        echo "$variant $tps" >>"$results"
    done
done
for variant in do_nothing row_lock advisory_lock; do
    echo "$variant: $(awk -v v="$variant" '$1 == v {print $2}' "$results" | sort -n | tr '\n' ' ')"
done
rm -f "$results"
psql "$url" -q -c "SET client_min_messages = warning; DROP SCHEMA lockbench CASCADE"
