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
NOTICE_HTTP_PORT=0 cli dashboard & pids+=($!)
cli demo --rate "${DEMO_RATE:-5}" --room --activity & pids+=($!)
cat >&2 <<MSG
pipeline running (Ctrl-C stops it):
  dashboard   http://127.0.0.1:13200/admin/queues  and  /admin/notices
  fake-im     http://127.0.0.1:${FAKE_IM_PORT:-18080}/_fake/messages
  metrics     http://127.0.0.1:13109/metrics   readiness  /readyz
MSG
wait -n
