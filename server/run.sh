#!/usr/bin/env bash
# Builds notesd and runs it. Without DB_URL it starts (and on first use creates
# and seeds) a private PostgreSQL in .localdb/ (sql/localdb.sh), and points
# notesd at it. Arguments are passed to notesd (see build/notesd --help).
# The private PostgreSQL listens on 127.0.0.1:54329, or on the next free port
# when another server (another checkout's, say) has that one; its line says
# which. It keeps running after notesd stops: `sql/localdb.sh stop` stops it.
# NOTESD_BIN=path runs that binary and skips the build.
#
#   server/run.sh                      API on :8080, metrics on :9091
#   PORT=3000 server/run.sh --prepared
#   server/run.sh --tls [--h2c]        also TLS (h2, http/1.1) on :8443 (TLS_PORT), with a
#                                      self-signed certificate for localhost made once
#                                      in .localdb/tls/ (curl -k or --cacert it)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NOTESD_BIN="${NOTESD_BIN:-}"
if [[ -z "$NOTESD_BIN" ]]; then
  "$REPO/server/build.sh"
  NOTESD_BIN="$REPO/build/notesd"
fi

if [[ "${1:-}" == "--tls" ]]; then
  shift
  tls_dir="$REPO/.localdb/tls"
  if [[ ! -s "$tls_dir/cert.pem" || ! -s "$tls_dir/key.pem" ]]; then
    mkdir -p "$tls_dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj /CN=localhost \
      -addext "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" \
      -keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" 2>/dev/null
    chmod 600 "$tls_dir/key.pem"
    echo "run.sh: made a self-signed certificate in $tls_dir" >&2
  fi
  export TLS_PORT="${TLS_PORT:-8443}" TLS_CERT="$tls_dir/cert.pem" TLS_KEY="$tls_dir/key.pem"
fi

private_db=""
if [[ -z "${DB_URL:-}" ]]; then
  private_db=1
  "$REPO/sql/localdb.sh" start
  DB_URL="$("$REPO/sql/localdb.sh" url)"
  export DB_URL
fi
# Seed 003's static workload: an ~88 KiB minified script under /static/.
export STATIC_DIR="${STATIC_DIR:-$REPO/loadtests/static}"

if [[ -n "$private_db" ]]; then
  echo "run.sh: starting notesd (Ctrl-C stops it; the private PostgreSQL keeps running:" \
    "sql/localdb.sh stop)" >&2
else
  echo "run.sh: starting notesd (Ctrl-C stops it)" >&2
fi
exec "$NOTESD_BIN" "$@"
