"""Where PostgreSQL's CPU per query goes, under pgbench and under notesd: the
backends' own CPU time, system calls and context switches per query (perf stat on
the client backends' pids), and the statements' execution time per call
(pg_stat_statements), for the read mix in each setup below.

    NOTESD_PGDATA=/tmp/bench-pg/pgdata \\
        /usr/bin/python3 loadtests/bench.d/pg_cpu_per_query.py [--seconds 3] [--notesd build/notesd]

Setups (PostgreSQL pinned to CPU 0 throughout, 20 connections):
  pgbench-prepared           pgbench -M prepared on CPU 1 (the benchmark's limit)
  pgbench-prepared+settings  the same with notesd's session settings (statement_timeout ...),
                             then with statement_timeout alone, then with the others alone
  pgbench-prepared@cpu0      pgbench on CPU 0, beside PostgreSQL, where wrk sits
  pgbench-prepared+wrk       pgbench on CPU 1 while wrk -c100 on CPU 0 loads GET /json of a
                             notesd on CPU 1: CPU 0 shared with wrk as in notesd's runs
  notesd-prepared            notesd --prepared on CPU 1, wrk -c100 on CPU 0
  notesd-prepared,timeout=0  the same with QUERY_TIMEOUT_MS=0 (no statement_timeout)
  pgbench, notesd            the same two for unnamed statements (-M extended)
  pgbench-prepared-pipeline  pgbench -M prepared on CPU 1, 16 statements per \startpipeline
                             block (bench's pgbench-prepared-pipeline-servercore)
  notesd-prepared-pipeline   notesd --prepared --pipeline 16 on CPU 1, wrk -c100 on CPU 0
  pgbench-pipeline, notesd-pipeline   the same two for unnamed statements

Besides the table: the kernel's share of the backends' CPU (/proc's stime against
utime + stime) and the client backends in use. (Queries per sync is bench's figure: a
backend reports its transactions at most once a second, too seldom for a window this
short.)

With --record DIR the window is a `perf record -g` of the backends instead (DIR/SETUP.data),
and DIR/SETUP.txt keeps `perf report`'s shares by library and by symbol: where a
backend's time goes per setup, compared side by side.

Needs root or perf_event_paranoid <= 1 for perf stat on other users' processes; runs
against the benchmark's private PostgreSQL (sql/localdb.sh, started when it is not
running). Prints one table.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOADTESTS = os.path.dirname(HERE)
sys.dont_write_bytecode = True
sys.path.insert(0, LOADTESTS)

from loadlib import mixes, paths, pg, procs, server  # noqa: E402
from loadlib.commands.bench import subjects as bench  # noqa: E402
from loadlib.database import LocalDatabase  # noqa: E402
from loadlib.quantile import median  # noqa: E402

# notesd's session settings (its startup packet), all and split in two
SETTINGS = {"all": "-c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=1 "
                   "-c statement_timeout=30000",
            "timeout": "-c statement_timeout=30000",
            "styles": "-c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=1"}
# the read mix's two statements; with --prepared pg_stat_statements keeps them under
# the text of their `prepare ... as` statement, so the match is not anchored
OURS = "%select id, title, body, tag, created_at from notes where%"


def backends(url):
    """pids of the client backends other than this psql's."""
    out = pg.psql(url, "-tA", "-c", "select pid from pg_stat_activity where backend_type = "
                  "'client backend' and pid <> pg_backend_pid()").stdout
    return [int(p) for p in out.split()]


def calls(url):
    """(calls, total execution ms) of the read mix's two statements in pg_stat_statements."""
    out = pg.psql(url, "-tA", "-F", " ", "-c", "select coalesce(sum(calls), 0), "
                  "coalesce(sum(total_exec_time), 0) from pg_stat_statements "
                  f"where query like '{OURS}'").stdout.split()
    return int(out[0]), float(out[1])


def perf_window(pids, seconds):
    """perf stat over those pids for `seconds`: {task-clock ms, syscalls, context switches}."""
    res = subprocess.run(["perf", "stat", "-x", ",", "-e",
                          "task-clock,raw_syscalls:sys_enter,context-switches",
                          "-p", ",".join(str(p) for p in pids), "--", "sleep", str(seconds)],
                         capture_output=True, text=True)
    out = {}
    for line in res.stderr.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2] in ("task-clock", "raw_syscalls:sys_enter",
                                           "context-switches"):
            try:
                out[parts[2]] = float(parts[0])
            except ValueError:
                pass
    return out


RECORD = None  # --record: the directory the profiles go to
REPORT_LINES = 40


def perf_record(pids, seconds, name):
    """perf record -g over those pids for `seconds` into RECORD/name.data; RECORD/name.txt
    gets the shares by library (dso) and the top symbols."""
    data = os.path.join(RECORD, f"{name}.data")
    subprocess.run(["perf", "record", "-g", "-o", data, "-p", ",".join(str(p) for p in pids),
                    "--", "sleep", str(seconds)], capture_output=True)
    with open(os.path.join(RECORD, f"{name}.txt"), "w") as out:
        for sort in ("dso", "dso,sym"):
            res = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                                  "-g", "none", "--percent-limit", "0.5", "--sort", sort],
                                 capture_output=True, text=True)
            lines = [line for line in res.stdout.splitlines()
                     if line.strip() and not line.startswith("#")]
            out.write(f"## {name}: perf report --sort {sort}\n\n")
            out.write("\n".join(lines[:REPORT_LINES]) + "\n\n")
    return {}


def measure(url, seconds, load, name=None):
    """Starts the load (a Popen), waits for its backends (20, or as many as a pipelined
    notesd opens: the same set for a second), measures one window."""
    deadline = time.monotonic() + 10
    pids, since = [], time.monotonic()
    while time.monotonic() < deadline:
        now = backends(url)
        if set(now) != set(pids):
            pids, since = now, time.monotonic()
        if len(pids) >= 20 or (pids and time.monotonic() - since >= 1.0):
            break
        time.sleep(0.1)
    time.sleep(0.5)  # past connection set-up and the first plans
    c0, e0 = calls(url)
    t0 = [procs.proc_stat(p) for p in pids]
    p = perf_record(pids, seconds, name) if RECORD else perf_window(pids, seconds)
    t1 = [procs.proc_stat(p) for p in pids]
    c1, e1 = calls(url)
    both = [(a, b) for a, b in zip(t0, t1) if a and b]
    cpu = sum(b["cpu_s"] - a["cpu_s"] for a, b in both)
    kernel = sum(b["sys_s"] - a["sys_s"] for a, b in both)
    load.wait(timeout=seconds + 60)
    n = c1 - c0
    if not n:
        return None
    return {"queries_per_s": n / seconds,
            # perf's task-clock, or with --record /proc's coarser ticks
            "cpu_us": 1e3 * p["task-clock"] / n if "task-clock" in p else 1e6 * cpu / n,
            "exec_us": 1e3 * (e1 - e0) / n,
            "syscalls": p.get("raw_syscalls:sys_enter", 0) / n,
            "switches": p.get("context-switches", 0) / n,
            "kernel": kernel / cpu if cpu > 0 else 0.0,
            "backends": float(len(pids))}


def script_path(script, depth):
    """A script of this folder, or a copy of it in pipelines of `depth` (as bench makes)."""
    path = os.path.join(HERE, script + ".sql")
    if not depth:
        return path
    out = os.path.join(tempfile.gettempdir(), f"pg-cpu-{script}-pipeline{depth}.sql")
    with open(path) as f, open(out, "w") as o:
        o.write(bench.pipeline_script(f.read(), depth))
    return out


def pgbench_load(db, mode, cpu, seconds, settings=None, depth=None):
    cmd = ["taskset", "-c", str(cpu), "pgbench", "-n", "-h", db.host, "-p", str(db.port),
           "-U", db.user, "-c", "20", "-j", "1", "-M", mode, "-T", str(seconds)]
    for i, tag in enumerate(mixes.TAGS):
        cmd += ["-D", f"tag{i}={tag}"]
    for script, weight in bench.PGBENCH_MIXES["read"]:
        cmd += ["-f", f"{script_path(script, depth)}@{weight}"]
    env = dict(os.environ, PGOPTIONS=SETTINGS[settings] if settings else "")
    return subprocess.Popen(cmd + [db.dbname], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def notesd_run(binary, url, prepared, timeout_ms, seconds, measure_fn, depth=None):
    env = server.target_env("notesd", dict(os.environ), url, 18490, 19490)
    if prepared:
        env["PREPARED"] = "1"
    if timeout_ms is not None:
        env["QUERY_TIMEOUT_MS"] = str(timeout_ms)
    if depth:
        env["PIPELINE_DEPTH"] = str(depth)
    proc = server.ProcessUnderTest([binary], env, paths.REPO, "/dev/null", port=18490,
                                   ready_path="/notes?tag=js", cpus=1)
    try:
        proc.start_ready()
        wrk = subprocess.Popen(["taskset", "-c", "0", "wrk", "-t1", "-c100", f"-d{seconds}s",
                                "-s", bench.WRK_SCRIPT, "http://127.0.0.1:18490"],
                               env=dict(os.environ, MODE="read"), stdout=subprocess.DEVNULL)
        return measure_fn(wrk)
    finally:
        proc.stop()


def with_wrk_beside(binary, url, seconds, measure_fn):
    """Runs measure_fn while wrk on CPU 0 keeps a database-free notesd (CPU 1) busy on
    /json: CPU 0's share of wrk, without wrk's requests reaching PostgreSQL."""
    env = server.target_env("notesd", dict(os.environ), url, 18491, 19491)
    proc = server.ProcessUnderTest([binary], env, paths.REPO, "/dev/null", port=18491,
                                   ready_path="/json", cpus=1)
    try:
        proc.start_ready()
        wrk = subprocess.Popen(["taskset", "-c", "0", "wrk", "-t1", "-c100", f"-d{seconds}s",
                                "-s", bench.WRK_SCRIPT, "http://127.0.0.1:18491"],
                               env=dict(os.environ, MODE="json"), stdout=subprocess.DEVNULL)
        try:
            return measure_fn()
        finally:
            wrk.wait(timeout=seconds + 60)
    finally:
        proc.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--setups", help="comma-separated names of the setups to run (default all)")
    p.add_argument("--repeat", type=int, default=2,
                   help="rounds over all setups, interleaved; the table shows medians")
    p.add_argument("--notesd", default=os.path.join(paths.REPO, "build", "notesd"))
    p.add_argument("--record", metavar="DIR", help="profile the backends with perf record")
    a = p.parse_args()
    global RECORD
    if a.record:
        RECORD = a.record
        os.makedirs(RECORD, exist_ok=True)
    db = LocalDatabase(pin_cpus={0}).open()
    url = db.url
    window = a.seconds
    run_s = window + 3
    rows = []
    try:
        setups = [
            ("pgbench-prepared", lambda: pgbench_load(db, "prepared", 1, run_s)),
            ("pgbench-prepared+settings", lambda: pgbench_load(db, "prepared", 1, run_s, "all")),
            ("pgbench-prepared+statement_timeout",
             lambda: pgbench_load(db, "prepared", 1, run_s, "timeout")),
            ("pgbench-prepared+styles", lambda: pgbench_load(db, "prepared", 1, run_s, "styles")),
            ("pgbench-prepared@cpu0", lambda: pgbench_load(db, "prepared", 0, run_s)),
            ("notesd-prepared", (True, None)),
            ("notesd-prepared,timeout=0", (True, 0)),
            ("pgbench-prepared+wrk", "wrk-beside"),
            ("pgbench", lambda: pgbench_load(db, "extended", 1, run_s)),
            ("notesd", (False, None)),
            ("pgbench-prepared-pipeline",
             lambda: pgbench_load(db, "prepared", 1, run_s, depth=bench.PIPELINE_DEPTH)),
            ("notesd-prepared-pipeline", (True, None, bench.PIPELINE_DEPTH)),
            ("pgbench-pipeline",
             lambda: pgbench_load(db, "extended", 1, run_s, depth=bench.PIPELINE_DEPTH)),
            ("notesd-pipeline", (False, None, bench.PIPELINE_DEPTH)),
        ]
        if a.setups:
            wanted = a.setups.split(",")
            setups = [(n, h) for n, h in setups if n in wanted]
        results = {name: [] for name, _ in setups}
        for _ in range(a.repeat):
            for name, how in setups:
                db.reset()
                if callable(how):
                    r = measure(url, window, how(), name)
                elif how == "wrk-beside":
                    r = with_wrk_beside(a.notesd, url, run_s,
                                        lambda: measure(url, window,
                                                        pgbench_load(db, "prepared", 1, run_s),
                                                        name))
                else:
                    r = notesd_run(a.notesd, url, how[0], how[1], run_s,
                                   lambda load: measure(url, window, load, name),
                                   depth=how[2] if len(how) > 2 else None)
                if r:
                    results[name].append(r)
                print(f"{name}: {r}", file=sys.stderr)
        for name, _ in setups:
            rs = results[name]
            rows.append((name, {k: median([r[k] for r in rs]) for k in rs[0]} if rs else None))
    finally:
        db.close()
    print("| setup | queries/s | backend CPU µs/query | execution µs/query "
          "(pg_stat_statements) | syscalls/query | context switches/query | kernel's share "
          "of the backends' CPU | backends |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        if r is None:
            print(f"| {name} | – | – | – | – | – | – | – |")
            continue
        print(f"| {name} | {r['queries_per_s']:,.0f} | {r['cpu_us']:.1f} | {r['exec_us']:.1f} | "
              f"{r['syscalls']:.1f} | {r['switches']:.2f} | {100 * r['kernel']:.0f}% | "
              f"{r['backends']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
