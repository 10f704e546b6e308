"""What loadtests/bench runs, and where: the subjects and tests, the CPUs and
ports each gets, the command lines of the servers (notesd and its variants, h2o,
the Express peer), of wrk and of pgbench (its scripts, pipelined or not), and
bench's progress lines. Nothing here measures; the runs are bench_runs.py's.

Layout: the server under test on CPU 1 (CPUs 0 and 1 at 2 threads), wrk and the
private PostgreSQL on CPU 0; pgbench, which plays the server's part, on CPU 1
("server") or beside PostgreSQL on CPU 0 ("db").
"""
import hashlib
import os
import re
import subprocess

from loadlib import mixes, server
from loadlib.commands.bench.bench_figures import DB_TESTS, HTTP_TESTS, PEERS, PIPELINE_DEPTH, label_of
from loadlib.paths import LOADTESTS
from loadlib.report import logger

log = logger("bench", clock=True)     # every part of bench prints its progress through this

BENCH_D = os.path.join(LOADTESTS, "bench.d")

ALL_SUBJECTS = ["notesd", "notesd-prepared", "notesd-pipeline", "notesd-prepared-pipeline", "h2o",
                "pgbench", "node", "bun", "deno"]
ALL_TESTS = ["json", "hello", "status", "static", "read", "write", "mixed"]
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
# pgbench as a limit: label -> (-M mode, where it runs, statements per pipeline or None).
# "server": CPU 1, the server's core: PostgreSQL's client wakes it from the other core, as
# notesd does, so these are the limits that match notesd's layout;
# "db": CPU 0 with PostgreSQL, where wrk sits in the HTTP runs: no wake-up crosses a core.
# The difference between the two is what the cross-core wake-ups cost on this machine.
PGBENCH_VARIANTS = {
    "pgbench": ("extended", "server", None),
    "pgbench-prepared": ("prepared", "server", None),
    "pgbench-dbcore": ("extended", "db", None),
    "pgbench-prepared-dbcore": ("prepared", "db", None),
    "pgbench-pipeline": ("extended", "db", PIPELINE_DEPTH),
    "pgbench-prepared-pipeline": ("prepared", "db", PIPELINE_DEPTH),
    "pgbench-pipeline-servercore": ("extended", "server", PIPELINE_DEPTH),
    "pgbench-prepared-pipeline-servercore": ("prepared", "server", PIPELINE_DEPTH),
}
PIPELINE_SUBJECTS = ("notesd-pipeline", "notesd-prepared-pipeline")
PORT_BASE, METRICS_BASE = 18300, 19300
# the benchmark's own cluster; its port is sql/localdb.sh's choice (the first free from 54329)
DEFAULT_PGDATA = "/tmp/bench-pg/pgdata"
PORT_SLOT = {"sample": 0, "notesd": 1, "notesd-prepared": 2, "h2o": 3, "node": 4, "bun": 5,
             "deno": 6, "notesd-pipeline": 7, "notesd-prepared-pipeline": 8}
# --compare's two builds take ports of their own, apart from each other's: 18331.., 18341..
COMPARE_PORT_OFFSET = {"A": 30, "B": 40}


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


# ---------------------------------------------------------------- servers

def notesd_features(path):
    """What a notesd binary's --help offers: {"threads", "pipeline"} (flags it has) and
    "vars", the environment variables of its settings."""
    helptext = sh([path, "--help"])
    return {"threads": re.search(r"^\s*--threads\b", helptext, re.M) is not None,
            "pipeline": re.search(r"^\s*--pipeline\b", helptext, re.M) is not None,
            "vars": set(re.findall(r"^\s*--[a-z-]+(?: VALUE)?\s+([A-Z][A-Z_]+)\s", helptext, re.M))}


def subject_command(bench, subject, threads, db_url, port, metrics_port, build=None):
    """(argv, env, cwd) of notesd (a variant of it) or a peer, as bench runs it: the
    settings notesd --help documents taken out of the inherited environment, the
    pool of --pool, prepared statements, pipelining and threads as the subject says.
    build: another notesd (--compare's side: .notesd, .notesd_vars) than bench's own."""
    runtime = subject if subject in PEERS else "notesd"
    binary = build.notesd if build else bench.notesd
    base = dict(os.environ)
    if runtime == "notesd":
        drop = build.notesd_vars if build else bench.notesd_vars
        base = {k: v for k, v in base.items() if k not in drop}
    env = server.target_env(runtime, base, db_url, port, metrics_port, pool_max=bench.args.pool)
    cmd, cwd = server.target_command(runtime, binary)
    if subject in ("notesd-prepared", "notesd-prepared-pipeline"):
        env["PREPARED"] = "1"
    if subject in PIPELINE_SUBJECTS:
        cmd += ["--pipeline", str(PIPELINE_DEPTH)]
    if runtime == "notesd" and threads > 1:
        cmd += ["--threads", str(threads)]
    return cmd, env, cwd


class Subject:
    """One subject that serves HTTP (notesd, h2o or a peer) at a thread count: its
    label, ports, CPUs, the tests it takes part in and its command line; start()
    and stop() run it as a ProcessUnderTest (.proc). build: one side of --compare
    (.side "A" or "B", .notesd, .notesd_vars, .source), which runs its own notesd on
    ports of its own and is labelled "A-notesd", "B-notesd-prepared", ..."""

    def __init__(self, bench, subject, threads, build=None):
        self.bench, self.subject, self.threads, self.build = bench, subject, threads, build
        self.label = label_of(subject, threads)
        slot = PORT_SLOT[subject] + (10 * (threads - 1) if threads > 1 else 0)
        if build is not None:
            self.label = f"{build.side}-{self.label}"
            slot += COMPARE_PORT_OFFSET[build.side]
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
        if subject == "h2o":
            self.cmd, self.env, self.cwd = (["h2o", "-c", h2o_config(bench, threads, self.port)],
                                            dict(os.environ), bench.tmp)
        else:
            self.cmd, self.env, self.cwd = subject_command(bench, subject, threads, bench.db.url,
                                                           self.port, self.metrics_port, build)

    def describe(self):
        """The command line with the settings that matter, as a shell would run it."""
        cpus = ",".join(str(c) for c in sorted(self.cpus))
        keys = ["SERVER_TIMING", "POOL_MAX", "PREPARED", "STATIC_DIR", "PORT"]
        env = " ".join(f"{k}={self.env[k]}" for k in keys if k in self.env)
        shown = ({self.build.notesd: self.build.source} if self.build else
                 {self.bench.notesd: self.bench.notesd_src})
        cmd = [shown.get(c, c) for c in self.cmd]
        where = f"(cd {self.cwd} && " if self.cwd == PEER_DIR else ""
        return (f"{where}{env} taskset -c {cpus} " + " ".join(cmd) + (")" if where else "")
                ).strip()

    def start(self):
        """Spawns the server pinned to its CPUs; returns seconds to the first 200.
        RuntimeError when a port is taken or it does not come up (it is stopped then)."""
        for port in (self.port, self.metrics_port):
            if port and not server.port_free(port):
                raise RuntimeError(f"port {port} is in use")
        self.proc = server.ProcessUnderTest(
            self.cmd, self.env, self.cwd, os.path.join(self.bench.logdir, f"{self.label}.log"),
            port=self.port, ready_path=self.startup_path, cpus=self.cpus, name=self.label)
        return self.proc.start_ready()

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc is not None:
            self.proc.stop()
        self.proc = None


def h2o_config(bench, threads, port):
    """h2o's configuration (bench.d/h2o.conf.in) for a thread count and port."""
    with open(os.path.join(BENCH_D, "h2o.conf.in")) as f:
        text = f.read()
    text = (text.replace("@THREADS@", str(threads)).replace("@PORT@", str(port))
            .replace("@ROOT@", bench.h2o_root))
    path = os.path.join(bench.tmp, f"h2o-{threads}t.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


# ---------------------------------------------------------------- load

def wrk_cmd(bench, mode, port, duration, connections=None, host="127.0.0.1", prefix=()):
    """wrk on the load CPU; `prefix` runs it elsewhere (inside a namespace)."""
    return list(prefix) + [
        "taskset", "-c", ",".join(str(c) for c in sorted(LOAD_CPU)), "wrk", "-t1",
        f"-c{connections or bench.args.connections}", f"-d{duration}s", "--latency", "-s",
        WRK_SCRIPT, f"http://{host}:{port}"]


def pgbench_variants(bench):
    """The pgbench limits this run needs: both cores, both modes; the pipelined
    ones when a pipelined notesd subject was asked for (even if this notesd
    cannot pipeline: the limit is worth knowing)."""
    piped = any(s in bench.args.subjects for s in PIPELINE_SUBJECTS)
    return [v for v, (_, _, depth) in PGBENCH_VARIANTS.items() if piped or depth is None]


def pipeline_script(text, depth):
    """A pgbench script that sends `depth` of the script's statements in one pipeline:
    its commands (comments dropped) repeated between \\startpipeline and \\endpipeline,
    so every statement draws its own random values and the SQL text stays the same."""
    body = [line for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("--")]
    return "\n".join(["\\startpipeline"] + body * depth + ["\\endpipeline"]) + "\n"


def pgbench_script(bench, script, depth):
    """Path of a pgbench script: the one of bench.d, or for a pipeline a copy made
    of `depth` of its statements between \\startpipeline and \\endpipeline."""
    path = os.path.join(BENCH_D, script + ".sql")
    if not depth:
        return path
    out = os.path.join(bench.tmp, f"{script}-pipeline{depth}.sql")
    if not os.path.exists(out):
        with open(path) as f:
            text = pipeline_script(f.read(), depth)
        with open(out, "w") as f:
            f.write(text)
    return out


def pgbench_cmd(bench, variant, test, duration, log_prefix=None, transactions=None):
    """pgbench as the limit `variant` on a mix: `duration` seconds, or `transactions`
    with one client (the preflight); --log into log_prefix when given."""
    db = bench.db
    mode, where, depth = PGBENCH_VARIANTS[variant]
    cpus = SERVER_CPU if where == "server" else LOAD_CPU
    cmd = ["taskset", "-c", ",".join(str(c) for c in sorted(cpus)), bench.pgbench,
           "-n", "-h", db.host, "-p", str(db.port), "-U", db.user,
           "-c", str(bench.args.pool if transactions is None else 1), "-j", "1",
           "-M", mode]
    cmd += ["-t", str(transactions)] if transactions else ["-T", str(duration)]
    for i, tag in enumerate(TAGS):
        cmd += ["-D", f"tag{i}={tag}"]
    cmd += ["-D", "title=Note from wrk thread 1 req 100000", "-D", f"body={NOTE_BODY}"]
    for script, weight in PGBENCH_MIXES[test]:
        cmd += ["-f", f"{pgbench_script(bench, script, depth)}@{weight}"]
    if log_prefix:
        cmd += ["--log", f"--log-prefix={log_prefix}"]
    return cmd + [db.dbname]
