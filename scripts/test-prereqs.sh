#!/usr/bin/env bash
# Runs before `npm test` (npm's pretest hook): the suite drives the dashboard in a real Chromium, which a fresh
# development machine does not have. Install Debian's package when we can (root with apt), otherwise say what to do.
set -euo pipefail

chromium_path="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$chromium_path" ]; then exit 0; fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "[pretest] $chromium_path is missing: installing Debian's chromium for the dashboard browser test" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  [ -x "$chromium_path" ] && exit 0
fi

echo "[pretest] the dashboard browser test needs Chromium at $chromium_path:" \
  "install it (Debian: apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary" >&2
exit 1
