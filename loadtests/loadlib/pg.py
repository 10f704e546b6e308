"""PostgreSQL for load tests: the private cluster of sql/localdb.sh (start, its URL
and data directory, reseed, stop), psql one-liners against any URL, and a
server's postmaster from its data directory.

Owns talking to the scripts and psql; which database a command may touch
(loopback only, unless told) is netcheck.py's, the cluster's processes (CPU,
pinning) are procs.py's, and the database a command runs against, all of that
together, is database.py's LocalDatabase.
"""
import os
import re
import subprocess

from . import paths

LOCALDB = paths.repo("sql", "localdb.sh")
SQL_DIR = paths.repo("sql")


class DatabaseError(RuntimeError):
    """A localdb.sh or psql step failed; the message carries its output."""


def localdb(verb, check=True):
    """Runs `sql/localdb.sh VERB` (start, status, url, reset, stop); returns its
    CompletedProcess. check: a non-zero exit raises DatabaseError with the output."""
    res = subprocess.run([LOCALDB, verb], capture_output=True, text=True)
    if check and res.returncode != 0:
        raise DatabaseError(f"sql/localdb.sh {verb} failed:\n{res.stdout}{res.stderr}")
    return res


def localdb_running():
    return localdb("status", check=False).returncode == 0


def localdb_status():
    """(url, data directory) of the running private cluster; DatabaseError when it is not running."""
    return parse_status(localdb("status", check=False))


def parse_status(res):
    """(url, data directory) from the CompletedProcess of `sql/localdb.sh status`;
    DatabaseError when it says the cluster is not running."""
    m = re.search(r"running at (\S+) \(data: (.*)\)", res.stdout + res.stderr)
    if res.returncode != 0 or not m:
        raise DatabaseError(f"cannot read sql/localdb.sh status: {(res.stdout + res.stderr).strip()}")
    return m.group(1), m.group(2)


def psql(url, *args, check=True):
    """psql -X -q -v ON_ERROR_STOP=1 -d URL ARGS, warnings off; CalledProcessError when check fails."""
    return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, *args],
                          capture_output=True, text=True, check=check,
                          env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"})


def server_version(url):
    """`show server_version` of the database at URL, or None when it cannot be asked."""
    try:
        return psql(url, "-tA", "-c", "show server_version").stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def reset(url, private):
    """Puts the seeded notes table back: through localdb.sh for the private cluster (a
    copy of its seeded template), else with sql/reset.sql (and pg_stat_statements enabled and reset, when the
    server allows it)."""
    if private:
        localdb("reset")
        return
    try:
        psql(url, "-f", os.path.join(SQL_DIR, "reset.sql"))
    except subprocess.CalledProcessError as e:
        raise DatabaseError(f"resetting the notes table failed:\n{e.stderr}") from None
    # statistics are a nicety: a server without pg_stat_statements is fine
    psql(url, "-f", os.path.join(SQL_DIR, "pg_stat_statements.sql"), check=False)
    psql(url, "-c", "select pg_stat_statements_reset()", check=False)


# The statements on the notes table (notesd's and pgbench's scripts), and the transactions
# the database ended, committed or rolled back: one per sync point an extended-protocol
# client sends (an implicit transaction), so calls / transactions is queries per sync.
SYNC_COUNTS_SQL = (
    "select coalesce((select sum(calls) from pg_stat_statements where dbid = d.oid and "
    "query ~* '\\m(from|into|update)\\s+notes\\M'), 0), "
    "(select xact_commit + xact_rollback from pg_stat_database where datid = d.oid) "
    "from pg_database d where d.datname = current_database()")


def sync_counts(url):
    """{"calls", "transactions"} of the database at URL now (pg_stat_statements and
    pg_stat_database), or None when it cannot say (no pg_stat_statements). A backend
    reports its transactions at most once a second while busy, and within a second once
    idle or when it exits; pg_stat_statements counts each statement as it ends."""
    try:
        out = psql(url, "-tA", "-F", " ", "-c", SYNC_COUNTS_SQL).stdout.split()
        return {"calls": int(out[0]), "transactions": int(out[1])}
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return None


def queries_per_sync(before, after):
    """Statements per transaction between two sync_counts(), or None."""
    if not before or not after:
        return None
    tx = after["transactions"] - before["transactions"]
    calls = after["calls"] - before["calls"]
    return calls / tx if tx > 0 and calls > 0 else None


def data_directory(url):
    """The data directory the server at URL reports (`show data_directory`: a superuser
    or pg_read_all_settings may ask), or None."""
    try:
        return psql(url, "-tA", "-c", "show data_directory").stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def postmaster_pid(datadir):
    """The postmaster's pid from its postmaster.pid, or None."""
    try:
        with open(os.path.join(datadir, "postmaster.pid")) as f:
            return int(f.readline())
    except (OSError, ValueError):
        return None
