#!/usr/bin/env bash
# Builds notesd and runs it. Without DB_URL it starts (and on first use creates
# and seeds) a private PostgreSQL in .localdb/ (sql/localdb.sh), and points
# notesd at it. Arguments are passed to notesd (see build/notesd --help).
#
#   server/run.sh                      API on :8080, metrics on :9091
#   PORT=3000 server/run.sh --prepared
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$REPO/server/build.sh"

if [[ -z "${DB_URL:-}" ]]; then
  "$REPO/sql/localdb.sh" start
  DB_URL="$("$REPO/sql/localdb.sh" url)"
  export DB_URL
fi
# Seed 003's static workload: an ~88 KiB minified script under /static/.
export STATIC_DIR="${STATIC_DIR:-$REPO/loadtests/static}"

echo "run.sh: starting notesd (Ctrl-C stops it; the private PostgreSQL keeps running:" \
  "sql/localdb.sh stop)" >&2
exec "$REPO/build/notesd" "$@"
