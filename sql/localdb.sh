#!/usr/bin/env bash
# Private PostgreSQL instance for notesd (used by server/run.sh and the load
# tests).  It listens only on 127.0.0.1 and on a unix socket inside its data
# directory, with trust authentication, and holds one database, `notes`,
# seeded from sql/schema.sql + sql/seed.sql.  The seeded rows are kept once more
# in `notes_seed`, a database nobody connects to, from which `notes` is copied
# file by file: a reset costs a copy of the files, not a reseed.
#
# Usage: sql/localdb.sh <command>
#   start        create the cluster + database and seed it on first use, start
#                the server if it is stopped (no-op if already running)
#   stop         fast shutdown if running
#   status       exit 0 if running, 3 if not (like pg_ctl status)
#   url          print the database URL
#   reset        copy the notes database again from notes_seed (reseed the
#                table in place while sessions are connected to it), then
#                clear pg_stat_statements
#   psql [args]  open psql on the notes database
#
# Environment:
#   NOTESD_PGDATA  data directory (default: <repo>/.localdb/pgdata)
#   NOTESD_PGPORT  TCP port (default: 54329; see below)
#
# Port: without NOTESD_PGPORT, `start` takes 54329, or the first free port of
# 54330..54399 when another server (another checkout's private PostgreSQL, say)
# already listens there, and says so. The other commands find the port again in
# the running cluster's postmaster.pid. With NOTESD_PGPORT, that port or an error.
#
# PostgreSQL refuses to run as root.  When invoked as root, initdb and pg_ctl
# run as the `postgres` user (runuser) and the data directory belongs to it.
# psql is only a client and always runs as the invoking user over TCP, so it
# reads the SQL files with the invoking user's permissions.
set -euo pipefail

SQL_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$SQL_DIR")"
DEFAULT_PORT=54329
PORT="${NOTESD_PGPORT:-$DEFAULT_PORT}"
DB=notes
SEED_DB=notes_seed   # the seeded template `notes` is copied from
HOW=""               # how reseed() put the rows back, for reset's line
PG_OS_USER=postgres   # OS account that owns the cluster when invoked as root

die() { echo "localdb: $*" >&2; exit 1; }
info() { echo "postgres: $*" >&2; }

[[ "$PORT" =~ ^[0-9]+$ ]] || die "NOTESD_PGPORT must be a number (got '$PORT')"

if [[ $(id -u) -eq 0 ]]; then AS_ROOT=1; else AS_ROOT=0; fi

# ---------------------------------------------------------------------------
# Data directory.
# ---------------------------------------------------------------------------

# Nearest existing ancestor of a path (the path itself if it exists).
existing_ancestor() {
  local p="$1"
  while [[ ! -e "$p" ]]; do p="$(dirname "$p")"; done
  printf '%s\n' "$p"
}

# True if the cluster owner can reach $1: directories that do not exist yet
# are created with mode 755 later, so only the nearest existing ancestor is
# tested (test -x on it fails if any component of its path is not searchable).
owner_can_reach() {
  [[ $AS_ROOT -eq 0 ]] && return 0
  runuser -u "$PG_OS_USER" -- test -x "$(existing_ancestor "$(dirname "$1")")"
}

# Unix socket paths are limited to 107 bytes.
socket_path_fits() {
  local sock="$1/.s.PGSQL.$PORT"
  (( ${#sock} <= 107 ))
}

FALLBACK_NOTE=""
if [[ -n "${NOTESD_PGDATA:-}" ]]; then
  DATADIR="$(realpath -m -- "$NOTESD_PGDATA")"
  owner_can_reach "$DATADIR" \
    || die "user $PG_OS_USER cannot reach NOTESD_PGDATA=$DATADIR (a parent directory is not searchable)"
  socket_path_fits "$DATADIR" \
    || die "NOTESD_PGDATA=$DATADIR is too long for a unix socket path; pick a shorter directory"
else
  DATADIR="$REPO/.localdb/pgdata"
  # Fall back to /var/tmp when the postgres user cannot reach the repo (e.g.
  # it lives under /root, mode 700) or the socket path would be too long.  The
  # fallback is derived from the repo path, so every command finds it again.
  reason=""
  if ! owner_can_reach "$DATADIR"; then
    reason="user $PG_OS_USER cannot reach $REPO"
  elif ! socket_path_fits "$DATADIR"; then
    reason="$DATADIR is too long for a unix socket path"
  fi
  if [[ -n "$reason" ]]; then
    DATADIR="/var/tmp/notesd-localdb-$(printf '%s' "$REPO" | md5sum | cut -c1-8)/pgdata"
    FALLBACK_NOTE="$reason; using data dir $DATADIR"
  fi
fi
LOGFILE="$DATADIR/postgresql.log"
SEEDED_MARK="$DATADIR/.notesd-seeded"

# ---------------------------------------------------------------------------
# PostgreSQL binaries: pg_config --bindir if it has the server tools, else the
# newest /usr/lib/postgresql/*/bin.  An existing cluster uses the binaries of
# its own major version when they are installed.
# ---------------------------------------------------------------------------
find_bindir() {
  local dir="" v
  v="$(cat "$DATADIR/PG_VERSION" 2>/dev/null || true)"
  if [[ -n "$v" && -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]]; then
    dir="/usr/lib/postgresql/$v/bin"
  fi
  if [[ -z "$dir" ]] && command -v pg_config >/dev/null 2>&1; then
    dir="$(pg_config --bindir 2>/dev/null || true)"
    [[ -x "$dir/pg_ctl" && -x "$dir/initdb" ]] || dir=""
  fi
  if [[ -z "$dir" ]]; then
    dir="$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
  fi
  [[ -n "$dir" && -x "$dir/pg_ctl" ]] || die "PostgreSQL server binaries not found (install postgresql)"
  printf '%s\n' "$dir"
}
BIN="$(find_bindir)"

# Run a server-side tool (initdb, pg_ctl, ...) as the cluster owner.  The
# subshell moves to / so the tool never starts in a directory the postgres
# user cannot read; all paths passed to it are absolute.
as_owner() {
  if [[ $AS_ROOT -eq 1 ]]; then
    (cd / && runuser -u "$PG_OS_USER" -- "$@")
  else
    "$@"
  fi
}

# ---------------------------------------------------------------------------
# Helpers.
# ---------------------------------------------------------------------------

# (root can read the owner's files directly; only writes go through as_owner.)
is_cluster() { [[ -f "$DATADIR/PG_VERSION" ]]; }

is_running() { is_cluster && as_owner "$BIN/pg_ctl" -D "$DATADIR" status >/dev/null 2>&1; }

# Port to connect to: the running server's (from postmaster.pid, in case it
# was started with another NOTESD_PGPORT), else the configured one.
ACTIVE_PORT="$PORT"
resolve_port() {
  local p=""
  if is_running; then p="$(sed -n 4p "$DATADIR/postmaster.pid" 2>/dev/null || true)"; fi
  if [[ "$p" =~ ^[0-9]+$ ]]; then ACTIVE_PORT="$p"; else ACTIVE_PORT="$PORT"; fi
}

db_url() { printf 'postgresql://postgres@127.0.0.1:%s/%s\n' "$ACTIVE_PORT" "$DB"; }

# psql as the invoking user over TCP.  -X skips ~/.psqlrc; NOTICEs (e.g.
# "table does not exist, skipping") are silenced.
run_psql() {
  local db="$1"; shift
  PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning" \
    "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$ACTIVE_PORT" -U postgres -d "$db" "$@"
}

require_running() {
  is_running || die "postgres is not running (data: $DATADIR); run: sql/localdb.sh start"
  resolve_port
}

init_cluster() {
  info "initializing cluster in $DATADIR"
  # umask 022: directories created here must stay searchable by the owner.
  (umask 022 && mkdir -p "$DATADIR")
  if [[ $AS_ROOT -eq 1 ]]; then chown "$PG_OS_USER:$PG_OS_USER" "$DATADIR"; fi
  chmod 700 "$DATADIR"
  as_owner "$BIN/initdb" -D "$DATADIR" -A trust -U postgres --encoding=UTF8 --locale=C >/dev/null
  # Port and socket directory are also passed at start (see start_server), so
  # NOTESD_PGPORT always wins; the values here document the defaults.
  as_owner tee -a "$DATADIR/postgresql.conf" >/dev/null <<EOF

# --- notesd private instance (sql/localdb.sh) ---
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DATADIR'
shared_preload_libraries = 'pg_stat_statements'
max_connections = 200
# The whole database (~65 MB) stays in shared_buffers, so random reads cost
# about as much as sequential ones.  With the default (4) the planner answers
# "where tag = \$1 order by id desc limit n" by walking notes_pkey backwards
# and filtering; with 1.1 it uses notes_tag_id as intended.
random_page_cost = 1.1
EOF
}

# True when something accepts TCP connections on 127.0.0.1:$1 (bash's /dev/tcp).
port_answers() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# The ports `start` may use: NOTESD_PGPORT alone when it is set, else the default
# and then the next 70.
candidate_ports() {
  if [[ -n "${NOTESD_PGPORT:-}" ]]; then echo "$PORT"; else seq "$DEFAULT_PORT" $((DEFAULT_PORT + 70)); fi
}

# Starts the cluster on the first candidate port that is free. A port can be
# taken between the check and the bind, so a start that fails on "Address
# already in use" moves on to the next port too.
start_server() {
  local p lines
  for p in $(candidate_ports); do
    if port_answers "$p"; then
      info "port $p is taken by another server"
      continue
    fi
    lines=0
    if [[ -f "$LOGFILE" ]]; then lines="$(wc -l <"$LOGFILE")"; fi
    if as_owner "$BIN/pg_ctl" -D "$DATADIR" -l "$LOGFILE" -w \
          -o "-p $p -k '$DATADIR'" start >/dev/null; then
      [[ "$p" == "$DEFAULT_PORT" || -n "${NOTESD_PGPORT:-}" ]] || info "listening on port $p instead of $DEFAULT_PORT"
      return 0
    fi
    if tail -n +"$((lines + 1))" "$LOGFILE" 2>/dev/null | grep -q "Address already in use"; then
      info "port $p is taken by another server"
      continue
    fi
    echo "localdb: pg_ctl start failed; last lines of $LOGFILE:" >&2
    tail -n 20 "$LOGFILE" >&2 || true
    exit 1
  done
  if [[ -n "${NOTESD_PGPORT:-}" ]]; then
    die "NOTESD_PGPORT=$PORT is taken by another server; choose another port"
  fi
  die "every port of $DEFAULT_PORT..$((DEFAULT_PORT + 70)) is taken; set NOTESD_PGPORT"
}

ensure_database() {
  local exists
  exists="$(run_psql postgres -tA -c "select 1 from pg_database where datname = '$DB'")"
  [[ "$exists" == 1 ]] || run_psql postgres -c "create database $DB"
}

# What the seeded rows are made from: notes_seed carries this digest as its
# comment and is seeded again when the SQL has changed since.
seed_digest() {
  cat "$SQL_DIR/schema.sql" "$SQL_DIR/seed.sql" "$SQL_DIR/pg_stat_statements.sql" | sha256sum | cut -c1-16
}

# notes_seed, seeded once by sql/reset.sql (which drops any partial table
# first), then closed to connections so that nothing can hold it open when it
# is copied; a template copied while a session writes to it would be torn.
ensure_template() {
  local digest have
  digest="$(seed_digest)"
  have="$(run_psql postgres -tA -c "select coalesce(shobj_description(oid, 'pg_database'), '')
                                    from pg_database where datname = '$SEED_DB'")"
  [[ "$have" == "$digest" ]] && return 0
  info "seeding database $SEED_DB (200000 rows)"
  local t0 t1
  t0="$(date +%s.%N)"
  run_psql postgres -c "drop database if exists $SEED_DB" -c "create database $SEED_DB"
  run_psql "$SEED_DB" -f "$SQL_DIR/reset.sql" >/dev/null
  run_psql "$SEED_DB" -f "$SQL_DIR/pg_stat_statements.sql" >/dev/null
  run_psql postgres -c "alter database $SEED_DB with allow_connections false" \
    -c "comment on database $SEED_DB is '$digest'"
  t1="$(date +%s.%N)"
  info "seeded in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1fs", b - a }')"
}

# notes, copied from notes_seed: file_copy copies the database's files after a
# checkpoint (about a second for its 65 MB) where wal_log would write them all
# to the WAL. Only while no session is connected to notes: a running server
# (bench resets under its targets) keeps its connections, and the table is
# reseeded in place instead, as sql/reset.sql does.
# A session that connects between the count and the drop makes the drop fail,
# leaving notes as it was: it is then reseeded in place too.
reseed() {
  local others
  others="$(run_psql postgres -tA -c "select count(*) from pg_stat_activity where datname = '$DB'")"
  if [[ "$others" == 0 ]]; then
    ensure_template
    if run_psql postgres -c "drop database if exists $DB" 2>/dev/null; then
      run_psql postgres -c "create database $DB template $SEED_DB strategy file_copy"
      HOW="copied from $SEED_DB"
      return 0
    fi
    others="some"
  fi
  run_psql "$DB" -f "$SQL_DIR/reset.sql" >/dev/null
  run_psql "$DB" -f "$SQL_DIR/pg_stat_statements.sql" >/dev/null
  HOW="reseeded in place ($others sessions open)"
}

# Seed once: on first creation, or if an earlier seeding was interrupted or
# the table was dropped.
ensure_seeded() {
  local has_table
  has_table="$(run_psql "$DB" -tA -c "select to_regclass('public.notes') is not null")"
  if [[ -f "$SEEDED_MARK" && "$has_table" == t ]]; then
    return 0
  fi
  reseed
  as_owner touch "$SEEDED_MARK"
}

# ---------------------------------------------------------------------------
# Commands.
# ---------------------------------------------------------------------------

# Idempotent: a running, seeded instance is left as is (two cheap queries
# confirm the database and table exist, which also completes an earlier start
# that was interrupted before seeding finished).
cmd_start() {
  if [[ -n "$FALLBACK_NOTE" ]]; then info "$FALLBACK_NOTE"; fi
  if ! is_running; then
    is_cluster || init_cluster
    start_server
  fi
  resolve_port
  ensure_database
  ensure_seeded
  echo "postgres: ready at $(db_url) (data: $DATADIR)"
}

# pg_ctl -w returns once postmaster.pid is gone, which the postmaster removes on
# its way out; wait (up to 10 s) for the process itself, so "stopped" means no
# postmaster holds the data directory, its memory or its CPU time any more.
wait_gone() {
  local pid="$1" i state
  for ((i = 0; i < 200; i++)); do
    [[ -r /proc/$pid/stat ]] || return 0
    state="$(sed -E 's/^.*\) ([A-Z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null || true)"
    [[ -z "$state" || "$state" == Z ]] && return 0
    sleep 0.05
  done
  echo "postgres: postmaster $pid still running 10 s after pg_ctl stop" >&2
  return 1
}

cmd_stop() {
  if is_running; then
    local pid
    pid="$(sed -n 1p "$DATADIR/postmaster.pid" 2>/dev/null || true)"
    as_owner "$BIN/pg_ctl" -D "$DATADIR" -m fast -w stop >/dev/null
    if [[ "$pid" =~ ^[0-9]+$ ]]; then wait_gone "$pid"; fi
    echo "postgres: stopped (data: $DATADIR)"
  else
    echo "postgres: not running (data: $DATADIR)"
  fi
}

cmd_status() {
  if is_running; then
    resolve_port
    echo "postgres: running at $(db_url) (data: $DATADIR)"
  else
    echo "postgres: not running (data: $DATADIR)"
    exit 3
  fi
}

cmd_reset() {
  require_running
  local t0 t1
  t0="$(date +%s.%N)"
  reseed
  run_psql "$DB" -c "select pg_stat_statements_reset()" >/dev/null
  t1="$(date +%s.%N)"
  echo "postgres: notes $HOW in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1fs", b - a }')"
}

cmd_psql() {
  require_running
  exec "$BIN/psql" -h 127.0.0.1 -p "$ACTIVE_PORT" -U postgres -d "$DB" "$@"
}

case "${1:-}" in
  start)  cmd_start ;;
  stop)   cmd_stop ;;
  status) cmd_status ;;
  url)    resolve_port; db_url ;;
  reset)  cmd_reset ;;
  psql)   shift; cmd_psql "$@" ;;
  *)
    echo "usage: $(basename "$0") {start|stop|status|url|reset|psql [args]}" >&2
    exit 2
    ;;
esac
