#!/usr/bin/env bash
# smoke.sh: a few seconds of every wrk mode against a server on this machine.
#
#   loadtests/wrk/smoke.sh                              # http://127.0.0.1:8080
#   BASE_URL=http://127.0.0.1:9000 SECONDS_PER_MODE=5 loadtests/wrk/smoke.sh
#   MODES="read json" loadtests/wrk/smoke.sh
#
# Runs notes.lua once per mode with one thread and 10 connections and prints
# the WRK_JSON line of each run (the full wrk output goes to stderr when
# VERBOSE=1). Exits non-zero when a run had socket errors or non-2xx
# responses. Only loopback targets are accepted.
#
# Environment:
#   BASE_URL          server under test      (http://127.0.0.1:8080)
#   SECONDS_PER_MODE  length of each run     (3)
#   MODES             modes to run           (read write mixed json hello status primes static)
#   MAX_ID            largest note id        (200000)
#   THREADS, CONNECTIONS                     (1, 10)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BASE_URL="${BASE_URL:-http://127.0.0.1:8080}"
SECONDS_PER_MODE="${SECONDS_PER_MODE:-3}"
MODES="${MODES:-read write mixed json hello status primes static}"
THREADS="${THREADS:-1}"
CONNECTIONS="${CONNECTIONS:-10}"

command -v wrk >/dev/null || { echo "smoke.sh: wrk not found (apt-get install -y wrk)" >&2; exit 1; }

# scheme://host[:port][/...] -> host, with [v6] brackets kept
hostport="${BASE_URL#*://}"
hostport="${hostport%%/*}"
case "$hostport" in
  \[*\]*) host="${hostport%%]*}]" ;;
  *) host="${hostport%%:*}" ;;
esac
case "$BASE_URL" in http://*) ;; *) echo "smoke.sh: BASE_URL must be http://, got $BASE_URL" >&2; exit 2 ;; esac
case "$host" in
  localhost|\[::1\]) ;;
  127.*)
    if ! [[ "$host" =~ ^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]]; then
      echo "smoke.sh: refusing $BASE_URL: not a loopback address" >&2; exit 2
    fi ;;
  *) echo "smoke.sh: refusing $BASE_URL: only loopback targets (127.0.0.0/8, localhost, [::1])" >&2; exit 2 ;;
esac
[[ "$SECONDS_PER_MODE" =~ ^[1-9][0-9]*$ ]] && [ "$SECONDS_PER_MODE" -le 600 ] \
  || { echo "smoke.sh: SECONDS_PER_MODE must be 1..600" >&2; exit 2; }

status=0
for mode in $MODES; do
  out="$(MODE="$mode" timeout $((SECONDS_PER_MODE + 30)) \
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_PER_MODE}s" --timeout 10s -s "$here/notes.lua" "$BASE_URL" 2>&1)" || {
    echo "smoke.sh: wrk failed in mode $mode:" >&2
    echo "$out" >&2
    status=1
    continue
  }
  [ "${VERBOSE:-0}" = 1 ] && echo "$out" >&2
  line="$(grep '^WRK_JSON ' <<<"$out" || true)"
  if [ -z "$line" ]; then
    echo "smoke.sh: no WRK_JSON line in mode $mode" >&2
    echo "$out" >&2
    status=1
    continue
  fi
  echo "$line"
  if ! grep -q '"non2xx":0,' <<<"$line" || ! grep -q '"socket_errors":0}' <<<"$line" || grep -q '"requests":0,' <<<"$line"; then
    echo "smoke.sh: mode $mode had errors, non-2xx responses or no requests" >&2
    status=1
  fi
done
exit "$status"
