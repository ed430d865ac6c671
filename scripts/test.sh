#!/usr/bin/env bash
# `npm test`: the suite against real MariaDB/MySQL and Redis. It uses TEST_MYSQL_URL / TEST_REDIS_URL (default
# root@127.0.0.1:3306 and 127.0.0.1:6379) when they answer. When one does not, it starts a private instance in a temp
# dir on a free port for this run and stops it afterwards (installing Debian's package first when run as root with
# apt); otherwise it stops at once, naming the command to run. Arguments go to vitest (`npm test -- test/x.test.ts`).
set -euo pipefail
cd "$(dirname "$0")/.."

MYSQL_URL="${TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306}"
REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
tmp=""
private_pids=()

log() { echo "[test] $*" >&2; }
cleanup() {
  for pid in "${private_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${private_pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -n "$tmp" ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT

answers_mysql() {
  node --input-type=module -e "import mysql from 'mysql2/promise'; const c = await mysql.createConnection({ uri: process.argv[1], connectTimeout: 2000 }); await c.end();" "$1" >/dev/null 2>&1
}
answers_redis() {
  node --input-type=module -e "import { Redis } from 'ioredis'; const r = new Redis(process.argv[1], { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null }); await r.connect(); await r.ping(); r.disconnect();" "$1" >/dev/null 2>&1
}
free_port() { node -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"; }
# need <command> <debian package> <what for>: the binary, installed with apt when we can.
need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing Debian's $2 ($3)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
    command -v "$1" >/dev/null 2>&1 && return 0
  fi
  log "nothing answers at $4, and $1 is not installed: install $2 (Debian: apt-get install $2) and start it, or set $5 to a server the suite may use"
  exit 1
}
tmpdir() { [ -n "$tmp" ] || tmp="$(mktemp -d "${TMPDIR:-/tmp}/notice-test-XXXXXX")"; }

if ! answers_mysql "$MYSQL_URL"; then
  need mariadbd mariadb-server "a private MariaDB for this run" "$MYSQL_URL" TEST_MYSQL_URL
  tmpdir
  port="$(free_port)"
  log "nothing answers at $MYSQL_URL: starting a private MariaDB on 127.0.0.1:$port for this run"
  mariadb-install-db --no-defaults --datadir="$tmp/mysql" --user="$(id -un)" --auth-root-authentication-method=normal --skip-test-db >"$tmp/mysql-install.log" 2>&1
  mariadbd --no-defaults --datadir="$tmp/mysql" --port="$port" --bind-address=127.0.0.1 --socket="$tmp/mysql.sock" --user="$(id -un)" \
    --skip-log-bin --innodb-buffer-pool-size=256M --max-connections=1000 --log-error="$tmp/mysql.err" &
  private_pids+=($!)
  MYSQL_URL="mysql://root@127.0.0.1:$port"
  for _ in $(seq 1 120); do answers_mysql "$MYSQL_URL" && break; sleep 0.5; done
  answers_mysql "$MYSQL_URL" || { log "the private MariaDB did not start; $tmp/mysql.err:"; tail -20 "$tmp/mysql.err" >&2; exit 1; }
fi

if ! answers_redis "$REDIS_URL"; then
  need redis-server redis-server "a private Redis for this run" "$REDIS_URL" TEST_REDIS_URL
  tmpdir
  port="$(free_port)"
  log "nothing answers at $REDIS_URL: starting a private Redis on 127.0.0.1:$port for this run"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --maxmemory-policy noeviction --dir "$tmp" --logfile "$tmp/redis.log" &
  private_pids+=($!)
  REDIS_URL="redis://127.0.0.1:$port"
  for _ in $(seq 1 60); do answers_redis "$REDIS_URL" && break; sleep 0.5; done
  answers_redis "$REDIS_URL" || { log "the private Redis did not start"; exit 1; }
fi

export TEST_MYSQL_URL="$MYSQL_URL" TEST_REDIS_URL="$REDIS_URL"
rc=0
npx vitest run "$@" || rc=$?
exit "$rc"
