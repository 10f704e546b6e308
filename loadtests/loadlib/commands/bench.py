"""loadtests/bench: notesd against its physical limits and its peers, in one run.

  loadtests/bench [--rounds 3] [--duration 20s] [--warmup 5s] [--connections 100]
                  [--subjects notesd,notesd-prepared,notesd-pipeline,...,pgbench,node,bun,deno]
                  [--tests json,hello,status,static,read,write,mixed]
                  [--threads 1,2] [--out DIR] [--quick]
                  [--sweep] [--netns [--delays 0.25,1,5]] [--cleanup]

Limits: h2o's own server (Debian's h2o 2.2.5) serving notesd's bytes from
files for /json, /, /status and /static; pgbench running notesd's statements
with as many connections as notesd's pool for the read, write and mixed mixes,
on the server's core and on the database's core, plain and pipelined, and the
modelled ceiling of the database's core. Peers: the Express app of
loadtests/peers on Node, Bun and Deno. After the rounds, --sweep (1 to 1000
connections; bench_sweep.py) and --netns (three network namespaces with a
network delay; bench_netns.py).

Layout: the server under test on CPU 1, wrk and the private PostgreSQL on CPU 0
(pgbench, which plays the server's part, on CPU 1). Every subject starts once
per round (startup timed to its first 200), then each of its tests gets a
warm-up run and a measured run; rounds alternate the subjects' order. The
report (stdout and OUT/report.md) gives medians, spread, the ratios and the
issue's targets with PASS/MISS; OUT/bench.json keeps every raw figure.

See loadtests/bench.d/README.md.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from loadlib import httpc, mixes, netns, pg, pgbench, procs, prom, server
from loadlib.commands import bench_netns as netns_bench
from loadlib.commands import bench_report as report
from loadlib.commands import bench_sweep as sweep
from loadlib.quantile import percentile
from loadlib.sampler import RssSampler
from loadlib.report import logger, write_json
from loadlib.tools import run as toolrun, wrk

LOADTESTS = server.LOADTESTS
REPO = server.REPO
BENCH_D = os.path.join(LOADTESTS, "bench.d")

ALL_SUBJECTS = ["notesd", "notesd-prepared", "notesd-pipeline", "notesd-prepared-pipeline", "h2o",
                "pgbench", "node", "bun", "deno"]
ALL_TESTS = ["json", "hello", "status", "static", "read", "write", "mixed"]
HTTP_TESTS, DB_TESTS, PEERS = report.HTTP_TESTS, report.DB_TESTS, report.PEERS
WRK_SCRIPT = os.path.join(LOADTESTS, "wrk", "notes.lua")
STATIC_DIR, PEER_DIR = server.STATIC_DIR, server.PEER_DIR
TAGS = mixes.TAGS
NOTE_BODY = mixes.NOTE_BODY
# pgbench -f script@weight per mix: loadtests/mixes.json's shares in percent
PGBENCH_MIXES = {
    "read": [("get_note", 70), ("list_by_tag", 30)],
    "write": [("insert_note", 50), ("update_note", 50)],
    "mixed": [("get_note", 56), ("list_by_tag", 24), ("insert_note", 10), ("update_note", 10)],
}
SERVER_CPU, LOAD_CPU = {1}, {0}
# queries notesd-pipeline keeps in flight per connection (--pipeline), and the
# statements per \startpipeline ... \endpipeline block of the pipelined pgbench
PIPELINE_DEPTH = 16
# pgbench as a limit: label -> (-M mode, where it runs, statements per pipeline or None).
# "server": CPU 1, the server's core (the first figure this benchmark had);
# "db": CPU 0 with PostgreSQL, exactly where wrk sits in the HTTP runs.
PGBENCH_VARIANTS = {
    "pgbench": ("extended", "server", None),
    "pgbench-prepared": ("prepared", "server", None),
    "pgbench-dbcore": ("extended", "db", None),
    "pgbench-prepared-dbcore": ("prepared", "db", None),
    "pgbench-pipeline": ("extended", "db", PIPELINE_DEPTH),
    "pgbench-prepared-pipeline": ("prepared", "db", PIPELINE_DEPTH),
}
PIPELINE_SUBJECTS = ("notesd-pipeline", "notesd-prepared-pipeline")
PORT_BASE, METRICS_BASE = 18300, 19300
DEFAULT_PGDATA, DEFAULT_PGPORT = "/tmp/bench-pg/pgdata", "55450"
log = logger("bench", clock=True)
PORT_SLOT = {"sample": 0, "notesd": 1, "notesd-prepared": 2, "h2o": 3, "node": 4, "bun": 5,
             "deno": 6, "notesd-pipeline": 7, "notesd-prepared-pipeline": 8}


def ms(lag, key):
    """A lag figure from a scrape, in milliseconds, or None."""
    if not lag or lag.get(key) is None:
        return None
    return lag[key] * 1e3


def seconds(text):
    m = re.fullmatch(r"(\d+)(s|m)?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}': whole seconds like 20s or 1m")
    n = int(m.group(1)) * (60 if m.group(2) == "m" else 1)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1s")
    return n


def listing(choices):
    def parse(text):
        items = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in items if x not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(bad) or '(empty)'}; "
                                             f"choose from {','.join(choices)}")
        return [c for c in choices if c in items]
    return parse


def thread_list(text):
    try:
        items = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("a list of thread counts like 1,2")
    if not items or items[0] < 1:
        raise argparse.ArgumentTypeError("thread counts start at 1")
    return items


def delay_list(text):
    try:
        items = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("one-way delays in milliseconds like 0.25,1,5")
    if not items or any(d < 0 or d > 1000 for d in items):
        raise argparse.ArgumentTypeError("delays from 0 to 1000 ms")
    return items


def sh(cmd, **kw):
    """Output of a short command, '' on failure."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)
        return (r.stdout + r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------- database

class Database:
    """The private PostgreSQL of sql/localdb.sh (NOTESD_PGDATA / NOTESD_PGPORT
    from the environment): started if needed (and then stopped at the end),
    reset between runs of the database tests, pinned to the load CPU."""

    def __init__(self, pin_cpus):
        self.started_here = False
        self.old_affinity = {}
        try:
            if not pg.localdb_running():
                log("starting the private PostgreSQL (sql/localdb.sh start)")
                pg.localdb("start")
                self.started_here = True
            self.url, self.datadir = pg.localdb_status()
        except pg.DatabaseError as e:
            sys.exit(f"bench: {e}")
        u = re.fullmatch(r"postgresql://([^@]+)@([^:/]+):(\d+)/(\w+)", self.url)
        self.user, self.host, self.port, self.dbname = u.groups()
        self.postmaster = pg.postmaster_pid(self.datadir)
        if self.postmaster is None:
            log("cannot read postmaster.pid: no database CPU figures, no pinning")
        self.version = pg.server_version(self.url) or ""
        self.pinned = None
        if pin_cpus is not None and self.postmaster:
            self.old_affinity = procs.set_tree_affinity(self.postmaster, pin_cpus)
            self.pinned = sorted(pin_cpus)

    def reset(self):
        pg.reset(self.url, private=True)

    def cpu(self):
        return procs.tree_cpu_seconds(self.postmaster) if self.postmaster else None

    def settle(self):
        if self.postmaster:
            procs.settle(self.postmaster)

    def close(self):
        if self.started_here:
            log("stopping the private PostgreSQL this run started")
            pg.localdb("stop", check=False)
            return
        # backends forked while pinned inherited the pin; they get all CPUs back too
        procs.restore_tree_affinity(self.old_affinity, self.postmaster)


# ---------------------------------------------------------------- servers

class Server:
    """One subject that serves HTTP: notesd, h2o or a peer, at a thread count."""

    def __init__(self, bench, subject, threads):
        self.bench, self.subject, self.threads = bench, subject, threads
        self.label = report.label_of(subject, threads)
        slot = PORT_SLOT[subject] + (10 * (threads - 1) if threads > 1 else 0)
        self.port, self.metrics_port = PORT_BASE + slot, METRICS_BASE + slot
        self.cpus = SERVER_CPU if threads == 1 else SERVER_CPU | LOAD_CPU
        self.proc = None
        self.startup_path = "/status" if subject == "h2o" else "/notes?tag=js"
        if subject == "h2o":
            self.tests = [t for t in bench.tests if t in HTTP_TESTS]
            self.metrics_port = None
        elif subject in ("notesd-prepared",) + PIPELINE_SUBJECTS:
            self.tests = [t for t in bench.tests if t in DB_TESTS]
        else:
            self.tests = list(bench.tests)
        self.cmd, self.env, self.cwd = self.command()

    def command(self):
        b = self.bench
        if self.subject == "h2o":
            conf = b.h2o_config(self.threads, self.port)
            return ["h2o", "-c", conf], dict(os.environ), b.tmp
        runtime = self.subject if self.subject in PEERS else "notesd"
        base = dict(os.environ)
        if runtime == "notesd":
            base = {k: v for k, v in base.items() if k not in b.notesd_vars}
        env = server.target_env(runtime, base, b.db.url, self.port, self.metrics_port, pool_max=b.args.pool)
        cmd, cwd = server.target_command(runtime, b.notesd)
        if self.subject in ("notesd-prepared", "notesd-prepared-pipeline"):
            env["PREPARED"] = "1"
        if self.subject in PIPELINE_SUBJECTS:
            cmd += ["--pipeline", str(PIPELINE_DEPTH)]
        if runtime == "notesd" and self.threads > 1:
            cmd += ["--threads", str(self.threads)]
        return cmd, env, cwd

    def describe(self):
        """The command line with the settings that matter, as a shell would run it."""
        cpus = ",".join(str(c) for c in sorted(self.cpus))
        keys = ["SERVER_TIMING", "POOL_MAX", "PREPARED", "STATIC_DIR", "PORT"]
        env = " ".join(f"{k}={self.env[k]}" for k in keys if k in self.env)
        cmd = [self.bench.notesd_src if c == self.bench.notesd else c for c in self.cmd]
        where = f"(cd {self.cwd} && " if self.cwd == PEER_DIR else ""
        return (f"{where}{env} taskset -c {cpus} " + " ".join(cmd) + (")" if where else "")
                ).strip()

    def start(self):
        """Spawns the server pinned to its CPUs; returns seconds to the first 200."""
        for port in (self.port, self.metrics_port):
            if port and not server.port_free(port):
                raise RuntimeError(f"port {port} is in use")
        log_path = os.path.join(self.bench.logdir, f"{self.label}.log")
        t0 = time.monotonic()
        self.proc = server.Spawned(self.cmd, self.env, self.cwd, log_path, cpus=self.cpus)
        try:
            return server.wait_ready(self.proc, self.port, self.startup_path, t0)
        except RuntimeError:
            self.stop()
            raise

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc is not None:
            self.proc.stop()
        self.proc = None


# ---------------------------------------------------------------- the benchmark

class Bench:
    def __init__(self, args):
        self.args = args
        self.tests = args.tests
        self.notes = []
        self.runs, self.startups, self.preflight = [], [], {}
        self.sweep_runs, self.netns_runs, self.netns_setup = [], [], None
        self.netns_active = None  # (layout, database) while --netns has namespaces up
        self.pipeline_depth = PIPELINE_DEPTH
        self.current = None
        self.out = os.path.abspath(args.out)
        self.logdir = os.path.join(self.out, "logs")
        os.makedirs(self.logdir, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="notesd-bench-")
        os.chmod(self.tmp, 0o755)  # h2o drops root for nobody, which must read the docroot
        self.h2o_root = os.path.join(self.tmp, "h2o-root")
        self.started = datetime.datetime.now().astimezone()

    # -------------------------------------------------------- setup

    def setup(self):
        a = self.args
        os.sched_setaffinity(0, LOAD_CPU)  # this script stays off the server's CPU
        for tool in ("wrk", "taskset"):
            if not shutil.which(tool):
                sys.exit(f"bench: {tool} not found (apt-get install -y wrk util-linux)")
        self.pgbench = shutil.which("pgbench") or "/usr/lib/postgresql/15/bin/pgbench"
        self.subjects = list(a.subjects)
        if "h2o" in self.subjects and not shutil.which("h2o"):
            sys.exit("bench: h2o not found: apt-get install -y h2o (Debian's h2o 2.2.5 server)")
        if "pgbench" in self.subjects and not os.access(self.pgbench, os.X_OK):
            sys.exit("bench: pgbench not found (apt-get install -y postgresql-contrib)")
        self.setup_notesd()
        self.skipped = {}
        if not self.notesd_pipeline:
            for s in PIPELINE_SUBJECTS:
                if s in self.subjects:
                    self.subjects.remove(s)
                    self.skipped[s] = ("notesd --help lists no --pipeline: this build has no "
                                       "pipelined mode")
                    log(f"{s}: SKIP ({self.skipped[s]})")
        self.setup_peers()
        self.db = Database(None if a.pg_cpus == "all" else LOAD_CPU)
        self.thread_counts = [1]
        if a.rounds and any(n > 1 for n in a.threads):  # no rounds (--rounds 0): no curve
            if self.notesd_threads:
                self.thread_counts = sorted({1} | set(a.threads))  # 1 thread: the targets'
            else:
                note = ("notesd --help lists no --threads: the scaling part (threads "
                        f"{','.join(str(n) for n in a.threads if n > 1)}) is skipped")
                self.notes.append(note)
                log(note)
        self.units = self.make_units()
        if "h2o" in self.subjects:
            self.make_docroot()
        self.check_all()

    def setup_notesd(self):
        src = os.path.abspath(self.args.notesd)
        if not os.path.exists(src):
            log(f"{src} missing: building with server/build.sh")
            if subprocess.run([os.path.join(REPO, "server", "build.sh")]).returncode != 0:
                sys.exit("bench: server/build.sh failed")
        # a private copy, so a rebuild during the run changes nothing
        self.notesd = os.path.join(self.tmp, "notesd")
        shutil.copy2(src, self.notesd)
        self.notesd_src, self.notesd_sha256 = src, sha256(self.notesd)
        helptext = sh([self.notesd, "--help"])
        self.notesd_threads = re.search(r"^\s*--threads\b", helptext, re.M) is not None
        self.notesd_pipeline = re.search(r"^\s*--pipeline\b", helptext, re.M) is not None
        self.notesd_vars = set(re.findall(r"^\s*--[a-z-]+(?: VALUE)?\s+([A-Z][A-Z_]+)\s",
                                          helptext, re.M))

    def setup_peers(self):
        wanted = [p for p in PEERS if p in self.subjects]
        if not wanted:
            return
        if not server.peers_ready(wanted):
            log("installing the peer app and runtimes (loadtests/peers/install.sh)")
            server.install_peers(wanted, capture=False)
        for p in wanted:
            if not server.runtime_installed(p):
                self.subjects.remove(p)
                self.notes.append(f"{p}: runtime not installed, skipped")

    def make_units(self):
        """What each round runs, in round 1's order: servers and pgbench modes."""
        units = []
        for n in self.thread_counts:
            for s in self.subjects:
                if s == "pgbench":
                    if n == 1 and self.args.rounds and any(t in DB_TESTS for t in self.tests):
                        units += [("pgbench", v) for v in self.pgbench_variants()]
                    continue
                if n > 1 and s not in ("notesd", "notesd-prepared", "h2o"):
                    continue
                srv = Server(self, s, n)
                if srv.tests:
                    units.append(("server", srv))
        return units

    def pgbench_variants(self):
        """The pgbench limits this run needs: both cores, both modes; the pipelined
        ones when a pipelined notesd subject was asked for (even if this notesd
        cannot pipeline: the limit is worth knowing)."""
        piped = any(s in self.args.subjects for s in PIPELINE_SUBJECTS)
        return [v for v, (_, _, depth) in PGBENCH_VARIANTS.items() if piped or depth is None]

    def pgbench_script(self, script, depth):
        """Path of a pgbench script: the one of bench.d, or for a pipeline a copy made
        of `depth` of its statements between \\startpipeline and \\endpipeline."""
        path = os.path.join(BENCH_D, script + ".sql")
        if not depth:
            return path
        out = os.path.join(self.tmp, f"{script}-pipeline{depth}.sql")
        if not os.path.exists(out):
            with open(path) as f:
                text = pipeline_script(f.read(), depth)
            with open(out, "w") as f:
                f.write(text)
        return out

    def h2o_config(self, threads, port):
        with open(os.path.join(BENCH_D, "h2o.conf.in")) as f:
            text = f.read()
        text = (text.replace("@THREADS@", str(threads)).replace("@PORT@", str(port))
                .replace("@ROOT@", self.h2o_root))
        path = os.path.join(self.tmp, f"h2o-{threads}t.conf")
        with open(path, "w") as f:
            f.write(text)
        return path

    def make_docroot(self):
        """Files with the bytes notesd sends: one /json sample, /, /status, the static file."""
        srv = Server(self, "sample", 1)
        try:
            srv.start()
        except (RuntimeError, OSError) as e:
            sys.exit(f"bench: notesd did not start for the h2o samples: {e} "
                     f"(see {self.logdir}/sample.log)")
        try:
            samples = {t: httpc.request(srv.port, p) for t, p in
                       (("json", "/json"), ("hello", "/"), ("status", "/status"))}
        finally:
            srv.stop()
        self.samples = samples
        root = self.h2o_root
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

    # -------------------------------------------------------- preflight

    def expect(self, srv, method, path, status, ctype=None, body=None, send=None):
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

    def check_server(self, srv):
        with open(os.path.join(STATIC_DIR, "app.min.js"), "rb") as f:
            static = f.read()
        json_ct, problems = "application/json; charset=utf-8", []
        note = json.dumps({"title": "bench preflight", "body": NOTE_BODY, "tag": "js"}).encode()
        for test in srv.tests:
            if test == "json":
                problems += self.expect(srv, "GET", "/json", 200, json_ct)
            elif test == "hello":
                problems += self.expect(srv, "GET", "/", 200, "text/html; charset=utf-8",
                                        b"Hello World!")
            elif test == "status":
                problems += self.expect(srv, "GET", "/status", 200, json_ct, b'{"status":"ok"}')
            elif test == "static":
                problems += self.expect(srv, "GET", "/static/app.min.js", 200, None, static)
            if test in ("read", "mixed"):
                problems += self.expect(srv, "GET", "/notes/1", 200, json_ct)
                problems += self.expect(srv, "GET", "/notes?tag=js", 200, json_ct)
            if test in ("write", "mixed"):
                problems += self.expect(srv, "POST", "/notes", 201, json_ct, send=note)
                problems += self.expect(srv, "PUT", "/notes/1", 200, json_ct, send=note)
        return problems

    def check_pgbench(self, variant):
        problems = []
        for test in ("read", "write"):
            res = toolrun.run_measured(self.pgbench_cmd(variant, test, None, transactions=20),
                                       timeout=60)
            if res["rc"] != 0 or pgbench.parse_pgbench(res["output"])["failed"]:
                last = res["output"].strip().splitlines()[-1:] or ["no output"]
                problems.append(f"{variant} ({test}): exit {res['rc']}: {last[0]}")
        return problems

    def check_all(self):
        """Starts every subject once (not measured: it also warms caches) and
        checks the routes of its tests; a subject that fails is left out."""
        log("preflight: every subject once, routes checked")
        keep = []
        for kind, unit in self.units:
            if kind == "pgbench":
                problems = self.check_pgbench(unit)
                name = unit
            else:
                name = unit.label
                try:
                    unit.start()
                    problems = self.check_server(unit)
                except (RuntimeError, OSError) as e:
                    problems = [str(e)]
                finally:
                    unit.stop()
            self.preflight[name] = problems or "ok"
            if problems:
                msg = f"{name} left out, preflight failed: {'; '.join(problems)}"
                self.notes.append(msg)
                log(msg)
            else:
                keep.append((kind, unit))
        self.units = keep
        self.db.reset()

    # -------------------------------------------------------- runs

    def wrk_cmd(self, mode, port, duration, connections=None, host="127.0.0.1", prefix=()):
        """wrk on the load CPU; `prefix` runs it elsewhere (inside a namespace)."""
        return list(prefix) + [
            "taskset", "-c", ",".join(str(c) for c in sorted(LOAD_CPU)), "wrk", "-t1",
            f"-c{connections or self.args.connections}", f"-d{duration}s", "--latency", "-s",
            WRK_SCRIPT, f"http://{host}:{port}"]

    def pgbench_cmd(self, variant, test, duration, log_prefix=None, transactions=None):
        db = self.db
        mode, where, depth = PGBENCH_VARIANTS[variant]
        cpus = SERVER_CPU if where == "server" else LOAD_CPU
        cmd = ["taskset", "-c", ",".join(str(c) for c in sorted(cpus)), self.pgbench,
               "-n", "-h", db.host, "-p", db.port, "-U", db.user,
               "-c", str(self.args.pool if transactions is None else 1), "-j", "1",
               "-M", mode]
        cmd += ["-t", str(transactions)] if transactions else ["-T", str(duration)]
        for i, tag in enumerate(TAGS):
            cmd += ["-D", f"tag{i}={tag}"]
        cmd += ["-D", "title=Note from wrk thread 1 req 100000", "-D", f"body={NOTE_BODY}"]
        for script, weight in PGBENCH_MIXES[test]:
            cmd += ["-f", f"{self.pgbench_script(script, depth)}@{weight}"]
        if log_prefix:
            cmd += ["--log", f"--log-prefix={log_prefix}"]
        return cmd + [db.dbname]

    def snapshot(self, server_pid):
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return {"t": time.monotonic(),
                "server": procs.cpu_seconds(server_pid) if server_pid else None,
                "cpus": procs.cpu_times(), "self": ru.ru_utime + ru.ru_stime}

    def begin(self, server_pid):
        """Figures right before a measured run (PostgreSQL's once its process
        list is quiet: backends of a client that just left are reaped)."""
        self.db.settle()
        db = self.db.cpu()
        snap = self.snapshot(server_pid)
        snap["db"] = db
        return snap

    def end(self, server_pid):
        snap = self.snapshot(server_pid)
        self.db.settle()
        snap["db"] = self.db.cpu()
        return snap

    def deltas(self, before, after, rec, requests, loadgen_cpu):
        elapsed = after["t"] - before["t"]
        server = (after["server"] - before["server"]
                  if before["server"] is not None and after["server"] is not None else None)
        db = (after["db"] - before["db"]
              if before["db"] is not None and after["db"] is not None else None)
        busy = sum(a["busy"] - before["cpus"][c]["busy"] for c, a in after["cpus"].items())
        ours = (server or 0) + (db or 0) + loadgen_cpu + (after["self"] - before["self"])
        per = (lambda s: 1e6 * s / requests if s is not None and requests else None)
        rec.update(elapsed_s=round(elapsed, 3), server_cpu_s=server, db_cpu_s=db,
                   loadgen_cpu_s=loadgen_cpu,
                   server_util=round(server / elapsed, 3) if server is not None else None,
                   cpu_us_per_req=per(server), db_cpu_us_per_req=per(db),
                   loadgen_cpu_us_per_req=per(loadgen_cpu),
                   cpu_busy=procs.cpu_busy_delta(before["cpus"], after["cpus"], elapsed),
                   other_cores=round((busy - ours) / elapsed, 3) if elapsed > 0 else None)

    def lag(self, port):
        m = prom.scrape(f"http://127.0.0.1:{port}/metrics", timeout=2.0) if port else None
        if not m:
            return None
        return {k: prom.value(m, f"notes_eventloop_lag_{k}_seconds") for k in ("mean", "max", "p99")}

    def run_http(self, rnd, srv, test):
        a = self.args
        rec = {"round": rnd, "subject": srv.subject, "label": srv.label,
               "threads": srv.threads, "test": test, "command": srv.describe()}
        if test in DB_TESTS and not a.no_reset:
            self.db.reset()
        env = dict(os.environ, MODE=test)
        warm = toolrun.run_measured(self.wrk_cmd(test, srv.port, a.warmup), env=env,
                                    timeout=a.warmup + 30)
        rec["warmup"] = wrk.json_line(warm["output"])
        self.lag(srv.metrics_port)  # the window restarts at every scrape
        wrk_log = os.path.join(self.logdir, f"r{rnd}-{srv.label}-{test}.wrk.txt")
        before = self.begin(srv.pid)
        sampler = RssSampler(srv.pid)
        sampler.start()
        res = toolrun.run_measured(self.wrk_cmd(test, srv.port, a.duration), env=env,
                                   timeout=a.duration + 30, log_path=wrk_log)
        rss = sampler.finish()
        after = self.end(srv.pid)
        lag = self.lag(srv.metrics_port)
        w = wrk.json_line(res["output"])
        rec["wrk"] = w
        rec["wrk_command"] = "MODE=" + test + " " + " ".join(self.wrk_cmd(test, srv.port,
                                                                           a.duration))
        reason = None
        if res["rc"] != 0 or w is None:
            reason = f"wrk exit {res['rc']}, no WRK_JSON line"
        elif w["non2xx"]:
            reason = f"{w['non2xx']} non-2xx responses"
        elif w["socket_errors"]:
            reason = f"{w['socket_errors']} socket errors"
        elif not w["requests"]:
            reason = "no requests"
        elif srv.proc.poll() is not None:
            reason = "server exited"
        requests = w["requests"] if w else 0
        rec.update(valid=reason is None, invalid_reason=reason, requests=requests,
                   rps=w and w["rps"], p50_ms=w and w["p50_ms"], p99_ms=w and w["p99_ms"],
                   rss_peak_bytes=rss, rss_samples=sampler.samples,
                   lag_mean_ms=ms(lag, "mean"), lag_max_ms=ms(lag, "max"),
                   lag_p99_ms=ms(lag, "p99"))
        self.deltas(before, after, rec, requests, res["cpu_s"])
        return rec

    def run_pgbench(self, rnd, label, test):
        a = self.args
        mode, where, depth = PGBENCH_VARIANTS[label]
        rec = {"round": rnd, "subject": label, "label": label, "threads": 1, "test": test,
               "mode": mode, "cpu": "db" if where == "db" else "server",
               "statements_per_tx": depth or 1}
        if not a.no_reset:
            self.db.reset()
        warm = toolrun.run_measured(self.pgbench_cmd(label, test, a.warmup),
                                    timeout=a.warmup + 60)
        rec["warmup"] = pgbench.parse_pgbench(warm["output"])
        logdir = tempfile.mkdtemp(prefix="pgbench-log-", dir=self.tmp)
        cmd = self.pgbench_cmd(label, test, a.duration, os.path.join(logdir, "tx"))
        rec["command"] = " ".join(cmd)
        before = self.begin(None)
        res = toolrun.run_measured(cmd, timeout=a.duration + 60,
                                   log_path=os.path.join(self.logdir,
                                                         f"r{rnd}-{label}-{test}.txt"))
        after = self.end(None)
        p = pgbench.parse_pgbench(res["output"])
        lat = pgbench.pgbench_log_latencies(
            [os.path.join(logdir, f) for f in os.listdir(logdir)])
        shutil.rmtree(logdir, ignore_errors=True)
        rec["pgbench"] = p
        reason = None
        if res["rc"] != 0 or p["tps"] is None:
            reason = f"pgbench exit {res['rc']}"
        elif p["failed"]:
            reason = f"{p['failed']} failed transactions"
        elif not lat:
            reason = "no per-transaction log"
        # a pipelined transaction is `depth` statements: req/s counts statements, as
        # notesd's counts requests; the latencies stay per transaction (per pipeline)
        requests = (p["transactions"] or 0) * (depth or 1)
        rec.update(valid=reason is None, invalid_reason=reason, requests=requests,
                   rps=p["tps"] * (depth or 1) if p["tps"] is not None else None,
                   p50_ms=percentile(lat, 50),
                   p95_ms=percentile(lat, 95), p99_ms=percentile(lat, 99),
                   max_ms=lat[-1] if lat else None, rss_peak_bytes=res["maxrss_bytes"],
                   lag_mean_ms=None, lag_max_ms=None)
        # pgbench is both the load and the "server": its CPU is the server figure
        self.deltas(before, after, rec, requests, 0.0)
        rec["loadgen_cpu_us_per_req"] = None  # no load generator apart from pgbench
        rec["server_cpu_s"] = res["cpu_s"]
        rec["server_util"] = round(res["cpu_s"] / rec["elapsed_s"], 3)
        rec["cpu_us_per_req"] = 1e6 * res["cpu_s"] / requests if requests else None
        busy = sum(a2["busy"] - before["cpus"][c]["busy"] for c, a2 in after["cpus"].items())
        ours = res["cpu_s"] + (rec["db_cpu_s"] or 0) + (after["self"] - before["self"])
        rec["other_cores"] = round((busy - ours) / rec["elapsed_s"], 3)
        return rec

    def record(self, rec):
        self.runs.append(rec)
        if rec.get("valid"):
            extra = f"CPU {report.fmt(rec.get('cpu_us_per_req'))} µs/req"
            if rec.get("rss_peak_bytes"):
                extra += f", RSS {rec['rss_peak_bytes'] / report.MIB:.1f} MiB"
            if rec.get("lag_mean_ms") is not None:
                extra += f", lag {report.fmt(rec['lag_mean_ms'])} ms"
            log(f"  {rec['label']:<18} {rec['test']:<7} {report.fmt(rec['rps']):>9} req/s  "
                f"p99 {report.fmt(rec['p99_ms'])} ms  {extra}  other load "
                f"{report.fmt(rec.get('other_cores'), 2)}")
        else:
            log(f"  {rec['label']:<18} {rec['test']:<7} INVALID: {rec.get('invalid_reason')}")
        self.save()

    def run_unit(self, rnd, kind, unit):
        if kind == "pgbench":
            for test in [t for t in self.tests if t in DB_TESTS]:
                self.record(self.run_pgbench(rnd, unit, test))
            return
        srv = unit
        self.current = srv
        try:
            startup = srv.start()
            self.startups.append({"round": rnd, "subject": srv.subject, "label": srv.label,
                                  "threads": srv.threads, "path": srv.startup_path,
                                  "startup_ms": startup * 1e3, "command": srv.describe()})
            log(f"  {srv.label:<18} started: first 200 of {srv.startup_path} after "
                f"{startup * 1e3:.1f} ms")
        except (RuntimeError, OSError) as e:
            self.startups.append({"round": rnd, "subject": srv.subject, "label": srv.label,
                                  "threads": srv.threads, "startup_ms": None, "error": str(e)})
            for test in srv.tests:
                self.record({"round": rnd, "subject": srv.subject, "label": srv.label,
                             "threads": srv.threads, "test": test, "valid": False,
                             "invalid_reason": f"did not start: {e}"})
            return
        try:
            for test in srv.tests:
                self.record(self.run_http(rnd, srv, test))
        finally:
            srv.stop()
            self.current = None

    def estimate(self):
        a = self.args
        per_round = 0
        for kind, unit in self.units:
            n = (len([t for t in self.tests if t in DB_TESTS]) if kind == "pgbench"
                 else len(unit.tests))
            per_round += n * (a.warmup + a.duration + 3)
        return per_round * a.rounds

    def run(self):
        if self.args.rounds:
            log(f"{len(self.units)} subjects × up to {len(self.tests)} tests × "
                f"{self.args.rounds} round(s): about {self.estimate() / 60:.0f} min")
        for rnd in range(1, self.args.rounds + 1):
            order = self.units if rnd % 2 == 1 else list(reversed(self.units))
            names = [u.label if k == "server" else u for k, u in order]
            log(f"round {rnd}/{self.args.rounds}: {', '.join(names)}")
            for kind, unit in order:
                self.run_unit(rnd, kind, unit)
        if self.args.sweep:
            sweep.run(self, Server, log)
        if self.args.netns:
            netns_bench.run(self, log, SERVER_CPU, LOAD_CPU)

    # -------------------------------------------------------- output

    def meta(self):
        a = self.args
        try:
            with open("/proc/cpuinfo") as f:
                model = re.search(r"model name\s*:\s*(.*)", f.read()).group(1)
        except (OSError, AttributeError):
            model = platform.processor()
        versions = {
            "wrk": wrk.version_line().split(" [")[0],
            "pgbench": sh([self.pgbench, "--version"]),
            "PostgreSQL": getattr(self.db, "version", ""),
        }
        if "h2o" in self.subjects:
            versions["h2o"] = (sh(["h2o", "--version"]).splitlines() or [""])[0]
        for p in PEERS:
            if p in self.subjects:
                versions[p] = server.runtime_version(p) or ""
        git = sh(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
        if sh(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"]):
            git += " + uncommitted changes"
        pg = ("unpinned" if a.pg_cpus == "all" else
              f"pinned to CPU {','.join(str(c) for c in sorted(LOAD_CPU))} with all its processes")
        layout = (f"server on CPU 1 (`taskset -c 1`; CPUs 0,1 for 2 threads, then sharing "
                  f"CPU 0 with wrk), wrk on CPU 0 (`taskset -c 0`), "
                  f"PostgreSQL {pg}, pgbench on CPU 1; notesd with SERVER_TIMING=0 "
                  f"POOL_MAX={a.pool}, peers with POOL_MAX={a.pool}; database reset before "
                  f"every run of read, write and mixed" + (" (off)" if a.no_reset else ""))
        return {
            "started": self.started.isoformat(timespec="seconds"),
            "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "rounds": a.rounds, "duration_s": a.duration, "warmup_s": a.warmup,
            "connections": a.connections, "pool": a.pool, "tests": self.tests,
            "threads": getattr(self, "thread_counts", [1]),
            "order": [u.label if k == "server" else u for k, u in getattr(self, "units", [])],
            "skipped": getattr(self, "skipped", {}),
            "pipeline_depth": PIPELINE_DEPTH,
            "host": {"cpu_model": model, "cpus": os.cpu_count(), "kernel": platform.release(),
                     "loadavg": open("/proc/loadavg").read().split()[:3]},
            "notesd": {"path": getattr(self, "notesd_src", a.notesd),
                       "sha256": getattr(self, "notesd_sha256", ""),
                       "threads_flag": getattr(self, "notesd_threads", False)},
            "git": git, "layout": layout, "versions": versions,
            "h2o_json_sample": (self.samples["json"][2].decode("utf-8", "replace")
                                if hasattr(self, "samples") else None),
            "database": {"url": getattr(self.db, "url", None),
                         "pinned_cpus": getattr(self.db, "pinned", None)}
            if hasattr(self, "db") else None,
            "argv": sys.argv[1:],
        }

    def results(self):
        summary = report.summarize(self.runs, self.startups)
        return (summary, report.ratio_rows(summary, self.tests),
                report.target_rows(summary, self.tests),
                report.scaling_rows(summary, self.tests, getattr(self, "thread_counts", [1])))

    def save(self):
        summary, ratios, targets, scaling = self.results()
        data = {"meta": self.meta(), "notes": self.notes, "preflight": self.preflight,
                "runs": self.runs, "startups": self.startups, "summary": summary,
                "ratios": ratios, "targets": targets, "scaling": scaling,
                "ceilings": report.ceiling_rows(summary, self.tests),
                "sweep": self.sweep_runs, "netns": self.netns_runs,
                "netns_setup": self.netns_setup}
        write_json(os.path.join(self.out, "bench.json"), data, indent=1, ensure_ascii=False)
        return data

    def finish(self):
        data = self.save()
        text = render(data, self.out)
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write(text)
        print(text)
        log(f"report: {os.path.join(self.out, 'report.md')}, raw: "
            f"{os.path.join(self.out, 'bench.json')}")

    def cleanup(self):
        toolrun.stop_live()
        if self.current is not None:
            self.current.stop()
            self.current = None
        netns_bench.teardown(self)
        if hasattr(self, "db"):
            self.db.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def pipeline_script(text, depth):
    """A pgbench script that sends `depth` of the script's statements in one pipeline:
    its commands (comments dropped) repeated between \\startpipeline and \\endpipeline,
    so every statement draws its own random values and the SQL text stays the same."""
    body = [line for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("--")]
    return "\n".join(["\\startpipeline"] + body * depth + ["\\endpipeline"]) + "\n"


def render(data, out_dir):
    """The Markdown report of a bench.json's data, figures recomputed from the raw runs;
    the sweep's charts are written into out_dir."""
    runs, startups, meta = data["runs"], data["startups"], data["meta"]
    tests = meta["tests"]
    summary = report.summarize(runs, startups)
    extra = [sweep.section(data.get("sweep") or [], out_dir),
             netns_bench.section(data.get("netns") or [], data.get("netns_setup"))]
    return report.markdown(meta, summary, report.ratio_rows(summary, tests),
                           report.target_rows(summary, tests),
                           report.scaling_rows(summary, tests, meta["threads"]),
                           runs, data["notes"], ceilings=report.ceiling_rows(summary, tests),
                           extra=extra)


def rerender(path):
    with open(path) as f:
        data = json.load(f)
    out_dir = os.path.dirname(os.path.abspath(path))
    text = render(data, out_dir)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def main():
    p = argparse.ArgumentParser(
        prog="loadtests/bench", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Environment: NOTESD_PGDATA (default /tmp/bench-pg/pgdata) and NOTESD_PGPORT "
               "(default 55450) pick the benchmark's private PostgreSQL (sql/localdb.sh); "
               "it is started if needed (and then stopped at the end), reseeded between "
               "runs and pinned to CPU 0. See loadtests/bench.d/README.md.")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=seconds, default=20, help="measured run (default 20s)")
    p.add_argument("--warmup", type=seconds, default=5, help="warm-up run (default 5s)")
    p.add_argument("--connections", type=int, default=100, help="wrk connections (default 100)")
    p.add_argument("--subjects", type=listing(ALL_SUBJECTS), default=ALL_SUBJECTS,
                   help=",".join(ALL_SUBJECTS))
    p.add_argument("--tests", type=listing(ALL_TESTS), default=ALL_TESTS,
                   help=",".join(ALL_TESTS))
    p.add_argument("--threads", type=thread_list, default=[1, 2],
                   help="notesd thread counts for the scaling curve (default 1,2)")
    p.add_argument("--out", help="output directory (default /tmp/notesd-bench-TIMESTAMP)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 1 round, 3 s runs, 1 s warm-up")
    p.add_argument("--pool", type=int, default=20,
                   help="POOL_MAX of every server and pgbench -c (default 20)")
    p.add_argument("--notesd", default=os.path.join(REPO, "build", "notesd"),
                   help="notesd binary (default build/notesd; built if missing)")
    p.add_argument("--pg-cpus", choices=["0", "all"], default="0",
                   help="pin the private PostgreSQL to CPU 0 (default) or leave it unpinned")
    p.add_argument("--no-reset", action="store_true",
                   help="do not reseed the notes table before each database run")
    p.add_argument("--sweep", action="store_true",
                   help="after the rounds: /json and the read mix at 1, 10, 100 and 1000 "
                        "connections for notesd and the peers (req/s, p50, p99, a chart)")
    p.add_argument("--sweep-connections", type=thread_list, default=[1, 10, 100, 1000],
                   metavar="N,N,...", help="the sweep's levels (default 1,10,100,1000)")
    p.add_argument("--netns", action="store_true",
                   help="after the rounds: the read mix with load, server and PostgreSQL in "
                        "three network namespaces joined by links with a one-way delay "
                        "(needs root and iproute2)")
    p.add_argument("--delays", type=delay_list, default=[0.25, 1.0, 5.0], metavar="MS,MS,...",
                   help="--netns: one-way delays in milliseconds (default 0.25,1,5)")
    p.add_argument("--netns-connections", type=int, default=400, metavar="N",
                   help="--netns: wrk -c (default 400: with a pool of 20 a pipelined server "
                        "can reach at most connections / (2 × pool) times a pool-capped peer, "
                        "and the 5 ms target needs 5×)")
    p.add_argument("--netns-link", choices=["auto", "netem", "delayline"], default="auto",
                   help="--netns: veth pairs with tc netem, or TUN devices and the user-space "
                        "delay line of bench.d/delayline.c (auto: netem when the kernel has it)")
    p.add_argument("--cleanup", action="store_true",
                   help="run nothing: remove what an interrupted --netns run left (the "
                        "namespaces nb-load, nb-srv, nb-db, the processes in them, the delay "
                        "line) and exit")
    p.add_argument("--report-from", metavar="BENCH_JSON",
                   help="run nothing: recompute the figures of a saved bench.json and print "
                        "the report again (written to report.md beside it)")
    args = p.parse_args()
    if args.report_from:
        return rerender(args.report_from)
    if args.cleanup:
        for line in netns.cleanup() or ["nothing to remove"]:
            print(f"bench --cleanup: {line}")
        return 0
    if args.quick:
        args.rounds, args.duration, args.warmup = (1 if args.rounds else 0), 3, 1
    if args.connections < 1 or args.pool < 1 or args.netns_connections < 1:
        p.error("--connections, --netns-connections and --pool must be positive")
    if args.rounds < 0 or (args.rounds == 0 and not (args.sweep or args.netns)):
        p.error("--rounds must be positive (0 only with --sweep or --netns: just those)")
    if os.cpu_count() < 2:
        p.error("needs 2 CPUs (server on CPU 1, load and PostgreSQL on CPU 0)")
    if not args.out:
        args.out = "/tmp/notesd-bench-" + time.strftime("%Y%m%d-%H%M%S")

    # the benchmark's own PostgreSQL, never server/run.sh's: it is reset and pinned here
    os.environ.setdefault("NOTESD_PGDATA", DEFAULT_PGDATA)
    os.environ.setdefault("NOTESD_PGPORT", DEFAULT_PGPORT)
    bench = Bench(args)

    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    status = 0
    try:
        bench.setup()
        bench.run()
    except KeyboardInterrupt:
        bench.notes.append("interrupted: the figures are partial")
        log("interrupted")
        status = 130
    finally:
        bench.cleanup()
    bench.finish()
    return status
