"""bench before the rounds: the tools it needs, a private copy of notesd and what
its --help offers (threads, pipelining), the peers installed, the database opened
and pinned, the units of a round (servers and pgbench limits), h2o's document root
with notesd's own bytes, and the preflight: every unit once, its routes checked
(not measured), the ones that fail left out."""
import json
import os
import shutil
import subprocess
import sys

from loadlib import httpc, pg, pgbench, server
from loadlib.commands.bench.bench_figures import DB_TESTS, PEERS
from loadlib.commands.bench.subjects import (
    LOAD_CPU, NOTE_BODY, PIPELINE_SUBJECTS, STATIC_DIR, Subject, log, notesd_features,
    pgbench_cmd, pgbench_variants, sha256)
from loadlib.database import LocalDatabase
from loadlib.paths import REPO
from loadlib.tools import run as toolrun


def setup(bench):
    """Everything the rounds need, on `bench`; exits when a tool or the database is missing."""
    a = bench.args
    os.sched_setaffinity(0, LOAD_CPU)  # this script stays off the server's CPU
    for tool in ("wrk", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} not found (apt-get install -y wrk util-linux)")
    bench.pgbench = shutil.which("pgbench") or "/usr/lib/postgresql/15/bin/pgbench"
    bench.subjects = list(a.subjects)
    if "h2o" in bench.subjects and not shutil.which("h2o"):
        sys.exit("bench: h2o not found: apt-get install -y h2o (Debian's h2o 2.2.5 server)")
    if "pgbench" in bench.subjects and not os.access(bench.pgbench, os.X_OK):
        sys.exit("bench: pgbench not found (apt-get install -y postgresql-contrib)")
    setup_notesd(bench)
    if not bench.notesd_pipeline:
        for s in PIPELINE_SUBJECTS:
            if s in bench.subjects:
                bench.subjects.remove(s)
                bench.skipped[s] = ("notesd --help lists no --pipeline: this build has no "
                                    "pipelined mode")
                log(f"{s}: SKIP ({bench.skipped[s]})")
    setup_peers(bench)
    bench.db = open_private_database(None if a.pg_cpus == "all" else LOAD_CPU)
    bench.thread_counts = [1]
    if a.rounds and any(n > 1 for n in a.threads):  # no rounds (--rounds 0): no curve
        if bench.notesd_threads:
            bench.thread_counts = sorted({1} | set(a.threads))  # 1 thread: the targets'
        else:
            note = ("notesd --help lists no --threads: the scaling part (threads "
                    f"{','.join(str(n) for n in a.threads if n > 1)}) is skipped")
            bench.notes.append(note)
            log(note)
    bench.units = make_units(bench)
    if "h2o" in bench.subjects:
        make_docroot(bench)


def open_private_database(pin_cpus):
    """The private PostgreSQL of sql/localdb.sh (NOTESD_PGDATA / NOTESD_PGPORT from the
    environment): started if needed (and then stopped at the end), pinned to the load
    CPU unless --pg-cpus all."""
    try:
        db = LocalDatabase(pin_cpus=pin_cpus, stop_when_done=True, log=log).open()
    except pg.DatabaseError as e:
        sys.exit(f"bench: {e}")
    if db.postmaster is None:
        log("cannot read postmaster.pid: no database CPU figures, no pinning")
    return db


def setup_notesd(bench):
    src = os.path.abspath(bench.args.notesd)
    if not os.path.exists(src):
        log(f"{src} missing: building with server/build.sh")
        if subprocess.run([os.path.join(REPO, "server", "build.sh")]).returncode != 0:
            sys.exit("bench: server/build.sh failed")
    # a private copy, so a rebuild during the run changes nothing
    bench.notesd = os.path.join(bench.tmp, "notesd")
    shutil.copy2(src, bench.notesd)
    bench.notesd_src, bench.notesd_sha256 = src, sha256(bench.notesd)
    features = notesd_features(bench.notesd)
    bench.notesd_threads, bench.notesd_pipeline = features["threads"], features["pipeline"]
    bench.notesd_vars = features["vars"]


def setup_peers(bench):
    wanted = [p for p in PEERS if p in bench.subjects]
    if not wanted:
        return
    if not server.peers_ready(wanted):
        log("installing the peer app and runtimes (loadtests/peers/install.sh)")
        server.install_peers(wanted, capture=False)
    for p in wanted:
        if not server.runtime_installed(p):
            bench.subjects.remove(p)
            bench.notes.append(f"{p}: runtime not installed, skipped")


def make_units(bench):
    """What each round runs, in round 1's order: servers and pgbench modes."""
    units = []
    for n in bench.thread_counts:
        for s in bench.subjects:
            if s == "pgbench":
                if n == 1 and bench.args.rounds and any(t in DB_TESTS for t in bench.tests):
                    units += [("pgbench", v) for v in pgbench_variants(bench)]
                continue
            if n > 1 and s not in ("notesd", "notesd-prepared", "h2o"):
                continue
            srv = Subject(bench, s, n)
            if srv.tests:
                units.append(("server", srv))
    return units


def make_docroot(bench):
    """Files with the bytes notesd sends: one /json sample, /, /status, the static file."""
    srv = Subject(bench, "sample", 1)
    try:
        srv.start()
    except (RuntimeError, OSError) as e:
        sys.exit(f"bench: notesd did not start for the h2o samples: {e} "
                 f"(see {bench.logdir}/sample.log)")
    try:
        samples = {t: httpc.request(srv.port, p) for t, p in
                   (("json", "/json"), ("hello", "/"), ("status", "/status"))}
    finally:
        srv.stop()
    bench.samples = samples
    root = bench.h2o_root
    os.makedirs(os.path.join(root, "static"), mode=0o755)
    for test, name in (("json", "json.json"), ("hello", "hello.html"),
                       ("status", "status.json")):
        status, headers, body = samples[test]
        if status != 200:
            sys.exit(f"bench: notesd answered {status} to the {test} sample")
        with open(os.path.join(root, name), "wb") as f:
            f.write(body)
    shutil.copy(os.path.join(STATIC_DIR, "app.min.js"), os.path.join(root, "static"))
    for d, _, files in os.walk(root):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)


# ---------------------------------------------------------------- preflight

def expect(srv, method, path, status, ctype=None, body=None, send=None):
    hdrs = {"Content-Type": "application/json"} if send is not None else None
    got, h, payload = httpc.request(srv.port, path, method=method, body=send, headers=hdrs)
    problems = []
    if got != status:
        problems.append(f"{method} {path}: status {got}, expected {status}")
    if ctype and h.get("content-type") != ctype:
        problems.append(f"{method} {path}: content-type {h.get('content-type')!r}, "
                        f"expected {ctype!r}")
    if body is not None and payload != body:
        problems.append(f"{method} {path}: body differs ({len(payload)} bytes, "
                        f"expected {len(body)})")
    return problems


def check_server(srv):
    with open(os.path.join(STATIC_DIR, "app.min.js"), "rb") as f:
        static = f.read()
    json_ct, problems = "application/json; charset=utf-8", []
    note = json.dumps({"title": "bench preflight", "body": NOTE_BODY, "tag": "js"}).encode()
    for test in srv.tests:
        if test == "json":
            problems += expect(srv, "GET", "/json", 200, json_ct)
        elif test == "hello":
            problems += expect(srv, "GET", "/", 200, "text/html; charset=utf-8", b"Hello World!")
        elif test == "status":
            problems += expect(srv, "GET", "/status", 200, json_ct, b'{"status":"ok"}')
        elif test == "static":
            problems += expect(srv, "GET", "/static/app.min.js", 200, None, static)
        if test in ("read", "mixed"):
            problems += expect(srv, "GET", "/notes/1", 200, json_ct)
            problems += expect(srv, "GET", "/notes?tag=js", 200, json_ct)
        if test in ("write", "mixed"):
            problems += expect(srv, "POST", "/notes", 201, json_ct, send=note)
            problems += expect(srv, "PUT", "/notes/1", 200, json_ct, send=note)
    return problems


def check_pgbench(bench, variant):
    problems = []
    for test in ("read", "write"):
        res = toolrun.run_measured(pgbench_cmd(bench, variant, test, None, transactions=20),
                                   timeout=60)
        if res["rc"] != 0 or pgbench.parse_pgbench(res["output"])["failed"]:
            last = res["output"].strip().splitlines()[-1:] or ["no output"]
            problems.append(f"{variant} ({test}): exit {res['rc']}: {last[0]}")
    return problems


def preflight(bench):
    """Starts every subject once (not measured: it also warms caches) and
    checks the routes of its tests; a subject that fails is left out."""
    log("preflight: every subject once, routes checked")
    keep = []
    for kind, unit in bench.units:
        if kind == "pgbench":
            problems = check_pgbench(bench, unit)
            name = unit
        else:
            name = unit.label
            try:
                unit.start()
                problems = check_server(unit)
            except (RuntimeError, OSError) as e:
                problems = [str(e)]
            finally:
                unit.stop()
        bench.preflight[name] = problems or "ok"
        if problems:
            msg = f"{name} left out, preflight failed: {'; '.join(problems)}"
            bench.notes.append(msg)
            log(msg)
        else:
            keep.append((kind, unit))
    bench.units = keep
    bench.db.reset()
