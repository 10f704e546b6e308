#!/bin/bash
# Entrypoint of the offline PostgreSQL stand-in (docker/offline/Dockerfile).
#
# Does what docker/compose.yaml relies on from the official image, no more: on
# the first start (empty PGDATA) it runs initdb with POSTGRES_INITDB_ARGS and
# POSTGRES_PASSWORD, creates POSTGRES_DB, and runs the *.sql files of
# /docker-entrypoint-initdb.d in name order against a temporary server that
# listens on the Unix socket only, so a TCP health check stays unhealthy until
# the seeded database is really up. Then it execs the command.
set -euo pipefail

if [[ ${1:-} == postgres && ! -s $PGDATA/PG_VERSION ]]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
  db="${POSTGRES_DB:-postgres}"
  pwfile="$(mktemp)"
  printf '%s' "$POSTGRES_PASSWORD" >"$pwfile"
  # shellcheck disable=SC2086  # POSTGRES_INITDB_ARGS is a list of flags
  initdb -D "$PGDATA" -U postgres --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 ${POSTGRES_INITDB_ARGS:-} >/dev/null
  rm -f "$pwfile"
  # Connections from anywhere need the password (the image's own is the same).
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"

  socket="$(mktemp -d)"
  pg_ctl -D "$PGDATA" -w -s -o "-c listen_addresses='' -c unix_socket_directories=$socket" start
  psql=(psql -X -q -v ON_ERROR_STOP=1 -h "$socket" -U postgres)
  if [[ $db != postgres ]]; then
    "${psql[@]}" -d postgres -c "create database \"$db\""
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) echo "postgres-entrypoint: running $f"; "${psql[@]}" -d "$db" -f "$f" >/dev/null ;;
      *) echo "postgres-entrypoint: ignoring $f (only *.sql is supported)" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -w -s -m fast stop
  rmdir "$socket"
  echo "postgres-entrypoint: database $db initialised"
fi

exec "$@"
