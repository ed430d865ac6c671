#!/usr/bin/env bash
# The whole pipeline on this machine, against fake-im (never the real Tencent IM):
# migrate (with owner fixtures), fake-im on :18080, ingest+deliver in one process, and a demo writer.
# Needs MariaDB/MySQL on 127.0.0.1:3306 and Redis on 127.0.0.1:6379. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d node_modules ] || npm ci
CONFIG="${NOTICE_CONFIG:-configs/dev.yaml}"
cli() { node bin/notice-service.js "$@" --config "$CONFIG"; }

cli migrate --owner-fixtures
pids=()
cleanup() { kill -TERM "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

cli fake-im --port "${FAKE_IM_PORT:-18080}" & pids+=($!)
sleep 1
cli all & pids+=($!)
cli demo --rate "${DEMO_RATE:-5}" & pids+=($!)
echo "pipeline running: fake-im received list at http://127.0.0.1:${FAKE_IM_PORT:-18080}/_fake/messages" >&2
wait -n
