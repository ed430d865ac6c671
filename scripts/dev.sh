#!/usr/bin/env bash
# The whole pipeline on this machine, against fake-im (never the real Tencent IM):
# migrate (with owner fixtures), fake-im on :18080, ingest+deliver in one process, the dashboard and a demo writer.
# Needs MariaDB/MySQL on 127.0.0.1:3306 and Redis on 127.0.0.1:6379. Logs are pretty-printed for people
# (DEV_PRETTY=0 keeps the JSON lines production writes), with a summary line every DEV_SUMMARY_EVERY seconds.
# Ctrl-C, or a SIGTERM to npm or to this script (a process manager, `timeout`), stops every process it started.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d node_modules ] || npm ci
CONFIG="${NOTICE_CONFIG:-configs/dev.yaml}"
FAKE_IM_PORT="${FAKE_IM_PORT:-18080}"
HTTP_PORT="${NOTICE_HTTP_PORT:-13109}"
# Read by configs/dev.yaml too, so the banner below prints the port the dashboard really listens on.
export NOTICE_DASHBOARD_PORT="${NOTICE_DASHBOARD_PORT:-13200}"

if [ "${DEV_PRETTY:-1}" = 1 ] && [ -x node_modules/.bin/pino-pretty ]; then
  # One line per log record: time, level, role, event id when there is one, message; the rest of the record after it.
  exec > >(node_modules/.bin/pino-pretty --colorize --translateTime 'SYS:HH:MM:ss.l' --ignore 'pid,hostname,service,role,event_id' \
    --messageFormat '{role} {if event_id}[{event_id}] {end}{msg}' --singleLine) 2>&1
fi

pids=()
stopping=0
# Every child is started as `node … &` directly, so $! is the node process itself (a shell function run in the
# background would be a subshell, and killing it left node running and holding its ports).
start() { node bin/notice-service.js "$@" --config "$CONFIG" & pids+=($!); }
cleanup() {
  [ "$stopping" = 1 ] && return
  stopping=1
  trap - INT TERM EXIT
  kill -TERM "${pids[@]}" 2>/dev/null || true
  # Each process stops within its shutdown_timeout; anything still there after 15 s is killed.
  for _ in $(seq 1 150); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT

node bin/notice-service.js migrate --owner-fixtures --config "$CONFIG"
FAKE_IM_URL="http://127.0.0.1:${FAKE_IM_PORT}" start fake-im --port "$FAKE_IM_PORT"
sleep 1
FAKE_IM_URL="http://127.0.0.1:${FAKE_IM_PORT}" NOTICE_HTTP_PORT="$HTTP_PORT" start all
FAKE_IM_URL="http://127.0.0.1:${FAKE_IM_PORT}" NOTICE_HTTP_PORT=0 start dashboard
start demo --rate "${DEMO_RATE:-5}" --room --activity

# A line a person can follow: totals from the ingest+deliver process's own metrics, every interval, even when they
# cannot be read (an outage is when the rhythm matters).
summary() {
  local metrics
  if ! metrics="$(curl -fsS --max-time 3 "http://127.0.0.1:${HTTP_PORT}/metrics" 2>&1)"; then
    echo "[dev] metrics did not answer: ${metrics:0:120}"
    return
  fi
  awk '
    /^notice_ingest_events_total\{/ && /result="ingested"/ { ingested += $NF }
    /^notice_deliveries_total\{/ && /outcome="delivered"/ { delivered += $NF; if ($0 ~ /channel="tencent_im_c2c"/) c2c += $NF; if ($0 ~ /channel="inbox"/) inbox += $NF; if ($0 ~ /channel="tencent_push"/) push += $NF }
    /^notice_deliveries_total\{/ && /outcome="failed"/ { failed += $NF }
    /^notice_deliveries_total\{/ && /outcome="superseded"/ { superseded += $NF }
    /^notice_ingest_lag_ms\{/ { if ($NF > lag) lag = $NF }
    /^notice_ready / { ready = $NF }
    /^notice_scrape_stale\{/ && $NF == 1 { stale = 1 }
    END { if (NR > 0) printf "[dev] facts ingested %d · deliveries %d, one per fact and channel (C2C %d, inbox %d, push %d) · superseded %d · failed %d · ingest lag %d ms%s\n", ingested, delivered, c2c, inbox, push, superseded, failed, lag, (ready != "" && ready == 0 ? " · NOT READY (see /readyz)" : "") (stale ? " · some gauges stale" : "") }' <<<"$metrics"
}
( while sleep "${DEV_SUMMARY_EVERY:-5}"; do summary || true; done ) & pids+=($!)

cat <<MSG
pipeline running (Ctrl-C stops it):
  dashboard   http://127.0.0.1:${NOTICE_DASHBOARD_PORT}/admin/notices  failures /admin/failures  timeline /admin/timeline  queues /admin/queues
  fake-im     http://127.0.0.1:${FAKE_IM_PORT}/_fake/messages  and pushes  /_fake/pushes
  metrics     http://127.0.0.1:${HTTP_PORT}/metrics   readiness  /readyz
  inbox API   127.0.0.1:${NOTICE_INBOX_API_PORT:-13010} (gRPC, plaintext on loopback: npm run -s grpc -- --addr 127.0.0.1:${NOTICE_INBOX_API_PORT:-13010} list)
MSG
# Until any process exits (then everything stops: a dev loop with a dead part would mislead).
wait -n
