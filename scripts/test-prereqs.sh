#!/usr/bin/env bash
# Runs before `npm test` (npm's pretest hook): tools the suite drives that a fresh development machine lacks.
# Chromium (the dashboard browser tests) and Prometheus (promtool and a real server, for the shipped alert rules).
# Installed from Debian when we can (root with apt); otherwise the message says what to install.
set -euo pipefail

chromium_path="${CHROMIUM_PATH:-/usr/bin/chromium}"
missing=()
[ -x "$chromium_path" ] || missing+=(chromium)
{ command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; } || missing+=(prometheus)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "[pretest] installing Debian's ${missing[*]} for the browser and alert-rule tests" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  missing=()
  [ -x "$chromium_path" ] || missing+=(chromium)
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  [ ${#missing[@]} -eq 0 ] && exit 0
fi

for package in "${missing[@]}"; do
  case "$package" in
    chromium) echo "[pretest] the dashboard browser test needs Chromium at $chromium_path: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary" >&2 ;;
    prometheus) echo "[pretest] the alert-rule tests need promtool and prometheus: install them (Debian: apt-get install prometheus)" >&2 ;;
  esac
done
exit 1
