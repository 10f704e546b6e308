#!/usr/bin/env python3
"""Starts and stops the PostgreSQL that the integration tests share.

    pg_fixture.py start STATE.json   initdb into a new temporary directory, start
                                     on a free loopback port, build the database
                                     `notes_template` from sql/schema.sql and
                                     sql/seed.sql, write STATE.json
    pg_fixture.py stop STATE.json    stop it and delete the directory

Each test suite copies notes_template into a database of its own, so suites
can run in parallel and never see each other's writes. PostgreSQL refuses to
run as root; as root, initdb and pg_ctl run as the `postgres` user.

The cluster's TimeZone is Asia/Kathmandu (UTC+05:45) on purpose: timestamps
then come back with a non-zero, non-whole-hour offset, and the server must
still render them as UTC.
"""
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pg_bindir():
    try:
        return subprocess.check_output(["pg_config", "--bindir"], text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
        if not dirs:
            sys.exit("pg_fixture: no PostgreSQL server binaries found")
        return dirs[-1]


def as_owner(argv):
    """Runs a server command as the unprivileged owner when we are root."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + argv
    return argv


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(state_path, template=True):
    # A cluster this state file still names is this build's own, left running: by a run
    # that stopped before pg_stop, or by `ctest --repeat`, which repeats pg_start too.
    stop(state_path)
    bindir = pg_bindir()
    if not os.path.exists(os.path.join(bindir, "initdb")):
        # Debian's pg_config may come from the client package only.
        dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
        bindir = dirs[-1]
    base = tempfile.mkdtemp(prefix="notesd-pg-")
    os.chmod(base, 0o755)
    data = os.path.join(base, "data")
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    subprocess.run(as_owner([f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres",
                             "--encoding=UTF8", "--locale=C"]),
                   check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    with open(os.path.join(data, "postgresql.conf"), "a") as conf:
        conf.write(f"""
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{base}'
timezone = 'Asia/Kathmandu'
shared_preload_libraries = 'pg_stat_statements'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
""")
    subprocess.run(as_owner([f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(base, "log"),
                             "-w", "start"]), check=True, stdout=subprocess.DEVNULL)
    state = {"base": base, "data": data, "bindir": bindir, "port": port, "host": "127.0.0.1"}
    with open(state_path, "w") as f:
        json.dump(state, f)
    print(f"pg_fixture: PostgreSQL on 127.0.0.1:{port}, data in {data}")

    if not template:
        return
    psql = [f"{bindir}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port),
            "-U", "postgres"]
    subprocess.run(psql + ["-d", "postgres", "-c", "create database notes_template"], check=True)
    for name in ("schema.sql", "seed.sql", "pg_stat_statements.sql"):
        with open(os.path.join(REPO, "sql", name)) as f:
            subprocess.run(psql + ["-d", "notes_template", "-f", "-"], stdin=f, check=True,
                           stdout=subprocess.DEVNULL)


def stop(state_path):
    try:
        with open(state_path) as f:
            state = json.load(f)
    except FileNotFoundError:
        return
    # Only a running cluster is stopped: a test may have stopped its own already,
    # and pg_ctl would complain on stderr that the PID file does not exist.
    pid_file = os.path.join(state["data"], "postmaster.pid")
    if os.path.exists(pid_file):
        stopped = subprocess.run(as_owner([f"{state['bindir']}/pg_ctl", "-D", state["data"], "-m",
                                           "immediate", "-t", "20", "-w", "stop"]),
                                 stdout=subprocess.DEVNULL).returncode == 0
        if not stopped:
            kill_cluster(pid_file)
    shutil.rmtree(state["base"], ignore_errors=True)
    os.unlink(state_path)


def kill_cluster(pid_file):
    """The postmaster did not end within pg_ctl's wait: says what its processes were
    doing (a stopped or uninterruptible one is the usual cause), then kills them all."""
    try:
        with open(pid_file) as f:
            postmaster = int(f.readline())
    except (OSError, ValueError):
        return
    pids = [postmaster]
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == postmaster:  # the parent's pid
            pids.append(int(entry))
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                print(f"pg_fixture: still running: {f.read().strip()}", file=sys.stderr)
            os.kill(pid, signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    (start if sys.argv[1] == "start" else stop)(sys.argv[2])
