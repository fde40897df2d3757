#!/usr/bin/env bash
# What vended credentials cost a hot loadTable, end to end: the release server on a warehouse
# in SeaweedFS that vends from STS, one table, and wrk loading it over 16 connections for
# 20 s with `X-Iceberg-Access-Delegation: vended-credentials` and, as the baseline in the same
# run, without it (the same route, the same table, nothing delegated). Prints both rates and
# their ratio. Needs wrk (Debian's) and the test virtualenv (scripts/test makes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="$HOME/.cache/pangolin/venv"
target="${CARGO_TARGET_DIR:-$HOME/.cache/pangolin/target}"
binary="${PANGOLIN_BIN:-$target/release/pangolin}"
duration="${DURATION:-20s}"
work="$(mktemp -d "${TMPDIR:-/tmp}/pangolin-vended-loads.XXXXXX")"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

mapfile -t weed < <("$venv/bin/python" tests/pyiceberg/sts_server.py "$venv/bin/weed" "$work")
export PANGOLIN_TEST_STS_ENDPOINT="${weed[0]}"
"${weed[@]:1}" >"$work/weed.log" 2>&1 &
pids+=($!)
"$venv/bin/python" tests/pyiceberg/sts_server.py --wait >/dev/null

port="$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"
eval "$(cd tests/pyiceberg && "$venv/bin/python" -c '
import sts_server
s = sts_server.settings()
print(f"key={s.access_key_id} secret={s.secret_access_key} role={s.role_arn} bucket={s.bucket}")')"
PANGOLIN_ROOT_PASSWORD=bench-root-password PANGOLIN_S3_SECRET_ACCESS_KEY="$secret" "$binary" serve \
    --listen "127.0.0.1:$port" --data-dir "$work/data" --warehouse "s3://$bucket/bench-$port/wh" \
    --s3-endpoint "$PANGOLIN_TEST_STS_ENDPOINT" --s3-access-key-id "$key" --s3-role-arn "$role" \
    >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "$url/ready" >/dev/null && break; sleep 0.1; done

token="$(curl -sf "$url/api/v1/login" -H 'content-type: application/json' \
    -d '{"username": "root", "password": "bench-root-password"}' | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')"
auth=(-H "Authorization: Bearer $token" -H 'content-type: application/json')
curl -sf "${auth[@]}" "$url/v1/default/namespaces" -d '{"namespace": ["bench"]}' >/dev/null
curl -sf "${auth[@]}" "$url/v1/default/namespaces/bench/tables" \
    -d '{"name": "t", "schema": {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": true}]}}' >/dev/null
table="$url/v1/default/namespaces/bench/tables/t"
curl -sf -H "Authorization: Bearer $token" -H 'X-Iceberg-Access-Delegation: vended-credentials' "$table" \
    | grep -q '"s3.session-token"' || { echo "no credentials were vended" >&2; exit 1; }

rate() { wrk -t 2 -c 16 -d "$duration" "$@" "$table" | awk '/Requests\/sec/ { print $2 }'; }
plain="$(rate -H "Authorization: Bearer $token")"
vended="$(rate -H "Authorization: Bearer $token" -H 'X-Iceberg-Access-Delegation: vended-credentials')"
echo "loadTable without delegation: $plain/s"
echo "loadTable with vended credentials: $vended/s"
"$venv/bin/python" -c "print(f'ratio: {float(\"$vended\") / float(\"$plain\"):.2f}')"
