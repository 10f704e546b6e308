"""loadtests/bench: notesd against its physical limits and its peers, in one run.

  loadtests/bench [--rounds 3] [--duration 20s] [--warmup 5s] [--connections 100]
                  [--subjects notesd,notesd-prepared,notesd-pipeline,...,pgbench,node,bun,deno]
                  [--tests json,hello,status,static,read,write,mixed]
                  [--threads 1,2] [--starts 11] [--out DIR] [--quick]
                  [--sweep] [--netns [--delays 0.25,1,5]] [--cleanup]
  loadtests/bench --compare REV|BASE..NEW [--tests ...] [--variants plain,prepared] [--quick]

Limits: h2o's own server (Debian's h2o 2.2.5) serving notesd's bytes from
files for /json, /, /status and /static; pgbench running notesd's statements
with as many connections as notesd's pool for the read, write and mixed mixes,
on the server's core and on the database's core, plain and pipelined, and the
modelled ceiling of the database's core. Peers: the Express app of
loadtests/peers on Node, Bun and Deno. After the rounds, --sweep (1 to 1000
connections; sweep.py) and --netns (three network namespaces with a
network delay; bench_netns.py).

Layout: the server under test on CPU 1, wrk and the private PostgreSQL on CPU 0
(pgbench, which plays the server's part, on CPU 1). Every subject starts once
per round (startup timed to its first 200), then each of its tests gets a
warm-up run and a measured run; rounds alternate the subjects' order. The
report (stdout and OUT/report.md) gives medians with their range over the rounds,
the ratios and the targets with PASS/MISS; OUT/bench.json keeps every raw figure.

--compare runs nothing of that: it builds another revision and measures this
notesd against it in interleaved pairs of short runs, with a verdict per figure
only where the difference stands out of the noise (compare.py).

The command is split by phase, each a module of its own: subjects.py (what
runs where, the command lines), setup.py (before the rounds: tools, notesd,
peers, database, units, preflight), bench_runs.py (the rounds and their records, the
start-up series), sweep.py and bench_netns.py (after the rounds), bench_figures.py,
headline.py and bench_report.py (the figures and the Markdown), revisions.py,
compare.py and compare_report.py (--compare). This module holds the run's
state, its options, and bench.json, report.md and the cleanup.

See loadtests/bench.d/README.md.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import sys
import tempfile
import time

from loadlib import cli, netns, server, stats
from loadlib.commands.bench import compare
from loadlib.commands.bench import bench_figures
from loadlib.commands.bench.compare_report import compare_markdown
from loadlib.commands.bench.headline import headline_section
from loadlib.commands.bench.bench_netns import netns_section, run_netns, teardown as netns_teardown
from loadlib.commands.bench.bench_report import bench_markdown
from loadlib.commands.bench.bench_runs import run_rounds, run_startup_series
from loadlib.commands.bench.setup import preflight, setup
from loadlib.commands.bench.subjects import (
    ALL_SUBJECTS, ALL_TESTS, DEFAULT_PGDATA, LOAD_CPU, PIPELINE_DEPTH, SERVER_CPU,
    log, sh)
from loadlib.commands.bench.sweep import run_sweep, sweep_section
from loadlib.paths import REPO
from loadlib.report import write_json
from loadlib.tools import run as toolrun, wrk

# the defaults of the load rounds, and of --quick (for --compare: compare.py's)
DEFAULTS = {"rounds": 3, "duration": 20, "warmup": 5, "starts": 11}
QUICK = {"rounds": 1, "duration": 3, "warmup": 1, "starts": 5}


# ---------------------------------------------------------------- options

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


# ---------------------------------------------------------------- the run

class Bench:
    """One run's state, which every phase reads and adds to: the options, the
    directories, what setup found (notesd, subjects, the database, the units of a
    round), and the records of every run, startup and preflight so far."""

    def __init__(self, args):
        self.args = args
        self.tests = args.tests
        self.notes = []
        self.runs, self.startups, self.preflight = [], [], {}
        self.sweep_runs, self.netns_runs, self.netns_setup = [], [], None
        self.netns_active = None  # (layout, database) while --netns has namespaces up
        self.current = None       # the server running now, for cleanup()
        self.db = None
        self.skipped = {}
        self.out = os.path.abspath(args.out)
        self.logdir = os.path.join(self.out, "logs")
        os.makedirs(self.logdir, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="notesd-bench-")
        os.chmod(self.tmp, 0o755)  # h2o drops root for nobody, which must read the docroot
        self.h2o_root = os.path.join(self.tmp, "h2o-root")
        self.started = datetime.datetime.now().astimezone()

    def save(self):
        """Writes bench.json with every figure so far (after each run)."""
        return save(self)


def run_phases(bench):
    """The phases in order: setup, preflight, the start-up series, the rounds, the sweep,
    --netns; or --compare's."""
    if bench.args.compare:
        compare.run_compare(bench)
        return
    setup(bench)
    preflight(bench)
    if bench.args.rounds:
        run_startup_series(bench)
    run_rounds(bench)
    if bench.args.sweep:
        run_sweep(bench)
    if bench.args.netns:
        run_netns(bench, SERVER_CPU, LOAD_CPU)


def stop_all(bench):
    """Stops whatever still runs: load tools, the current server, --netns's layout, the
    database (when this run started it), and removes the scratch directory."""
    toolrun.stop_live()
    if bench.current is not None:
        bench.current.stop()
        bench.current = None
    netns_teardown(bench)
    if bench.db is not None:
        bench.db.close()
    shutil.rmtree(bench.tmp, ignore_errors=True)


# ---------------------------------------------------------------- output

def meta(bench):
    """What the report says about the run: settings, host, versions, layout."""
    a = bench.args
    try:
        with open("/proc/cpuinfo") as f:
            model = re.search(r"model name\s*:\s*(.*)", f.read()).group(1)
    except (OSError, AttributeError):
        model = platform.processor()
    subjects = getattr(bench, "subjects", [])
    versions = {
        "wrk": wrk.version_line().split(" [")[0],
        "pgbench": sh([getattr(bench, "pgbench", "pgbench"), "--version"]),
        "PostgreSQL": (bench.db.version if bench.db is not None else None) or "",
    }
    if "h2o" in subjects:
        versions["h2o"] = (sh(["h2o", "--version"]).splitlines() or [""])[0]
    for p in bench_figures.PEERS:
        if p in subjects:
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
        "started": bench.started.isoformat(timespec="seconds"),
        "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "quick": a.quick, "starts": a.starts, "rounds": a.rounds, "duration_s": a.duration,
        "warmup_s": a.warmup,
        "connections": a.connections, "pool": a.pool, "tests": bench.tests,
        "threads": getattr(bench, "thread_counts", [1]),
        "order": [u.label if k == "server" else u for k, u in getattr(bench, "units", [])],
        "skipped": bench.skipped,
        "pipeline_depth": PIPELINE_DEPTH,
        "host": {"cpu_model": model, "cpus": os.cpu_count(), "kernel": platform.release(),
                 "loadavg": open("/proc/loadavg").read().split()[:3]},
        "notesd": {"path": getattr(bench, "notesd_src", a.notesd),
                   "sha256": getattr(bench, "notesd_sha256", ""),
                   "threads_flag": getattr(bench, "notesd_threads", False)},
        "git": git, "layout": layout, "versions": versions,
        "h2o_json_sample": (bench.samples["json"][2].decode("utf-8", "replace")
                            if hasattr(bench, "samples") else None),
        "database": {"url": bench.db.url, "pinned_cpus": bench.db.pinned}
        if bench.db is not None else None,
        "argv": a.argv,
    }


def save(bench):
    """bench.json: the raw records and the figures over them (--compare: its own)."""
    if bench.args.compare:
        data = compare.compare_data(bench)
        write_json(os.path.join(bench.out, "bench.json"), data, indent=1, ensure_ascii=False)
        return data
    summary = bench_figures.summarize(bench.runs, bench.startups)
    threads = getattr(bench, "thread_counts", [1])
    data = {"meta": meta(bench), "notes": bench.notes, "preflight": bench.preflight,
            "runs": bench.runs, "startups": bench.startups, "summary": summary,
            "ratios": bench_figures.ratio_rows(summary, bench.tests),
            "targets": bench_figures.target_rows(summary, bench.tests, bench.runs, bench.args.pool),
            "scaling": bench_figures.scaling_rows(summary, bench.tests, threads),
            "ceilings": bench_figures.ceiling_rows(summary, bench.tests, bench.runs),
            "sweep": bench.sweep_runs, "netns": bench.netns_runs,
            "netns_setup": bench.netns_setup}
    write_json(os.path.join(bench.out, "bench.json"), data, indent=1, ensure_ascii=False)
    return data


def finish(bench):
    """bench.json and report.md, the report also on stdout."""
    data = save(bench)
    print(write_bench_report(data, os.path.join(bench.out, "bench.json"),
                       os.path.join(bench.out, "report.md")))
    log(f"report: {os.path.join(bench.out, 'report.md')}, raw: "
        f"{os.path.join(bench.out, 'bench.json')}")


def report_text(data, out_dir):
    """The Markdown report of a bench.json's data, figures recomputed from the raw runs;
    the sweep's charts are written into out_dir."""
    if "compare" in data["meta"]:
        return compare_markdown(data)
    runs, startups, m = data["runs"], data["startups"], data["meta"]
    tests = m["tests"]
    summary = bench_figures.summarize(runs, startups)
    extra = [sweep_section(data.get("sweep") or [], out_dir),
             netns_section(data.get("netns") or [], data.get("netns_setup"))]
    return bench_markdown(m, summary, bench_figures.ratio_rows(summary, tests),
                          bench_figures.target_rows(summary, tests, runs, m["pool"]),
                          bench_figures.scaling_rows(summary, tests, m["threads"]),
                          runs, data["notes"], ceilings=bench_figures.ceiling_rows(summary, tests, runs),
                          extra=extra, headline=headline_section(summary, runs, m))


def generated_header(json_name):
    """The first line of a report bench writes from the data in `json_name` (a path from the
    report's folder): the command's, not to be edited, and how to write it again. A page
    opening with it is a generated report, which tests/check_docs_size.py counts apart."""
    return (f"<!-- generated by loadtests/bench from {json_name}; do not edit: "
            f"loadtests/bench --report-from {json_name} writes it again -->\n")


def write_bench_report(data, json_path, md_path):
    """The report of `data`, saved at json_path, written at md_path under the line that names
    that JSON (the sweep's charts beside it); returns the report without that line."""
    folder = os.path.dirname(os.path.abspath(md_path))
    text = report_text(data, folder)
    with open(md_path, "w") as f:
        f.write(generated_header(os.path.relpath(os.path.abspath(json_path), folder)) + text)
    return text


def report_path(json_path):
    """Where --report-from writes a saved JSON's report: beside it, under the JSON's name with
    .md; a run's own bench.json gives report.md, as the run wrote it."""
    stem = os.path.splitext(os.path.abspath(json_path))[0]
    if os.path.basename(stem) == "bench":
        return os.path.join(os.path.dirname(stem), "report.md")
    return stem + ".md"


def rerender(path):
    """--report-from: the report of a saved bench.json, again (bench.d/latest-report.md is
    made so, from latest-report.json)."""
    with open(path) as f:
        data = json.load(f)
    print(write_bench_report(data, path, report_path(path)))
    return 0


# ---------------------------------------------------------------- the command

def apply_defaults(args):
    """Fills in what was not given: the defaults of the load rounds or of --compare, or
    --quick's instead (what was given stays, --rounds 0 for a run of only --sweep or
    --netns included)."""
    args.default_notesd = os.path.join(REPO, "build", "notesd")
    if args.compare:
        base = compare.QUICK if args.quick else compare.DEFAULTS
        grind = compare.CALLGRIND_QUICK if args.quick else compare.CALLGRIND_DEFAULTS
        if args.callgrind_rounds is None:
            args.callgrind_rounds = grind["rounds"]
        if args.callgrind_requests is None:
            args.callgrind_requests = grind["requests"]
    else:
        base = QUICK if args.quick else DEFAULTS
    for key in ("rounds", "duration", "warmup", "starts"):
        if getattr(args, key) is None:
            setattr(args, key, base.get(key, 0))



def private_database_env(environ):
    """The settings of the benchmark's own PostgreSQL, never server/run.sh's (it is reset
    and pinned here): its data directory, NOTESD_PGDATA when set; its port, NOTESD_PGPORT
    when set, else none, so that sql/localdb.sh takes the first free one from 54329 on (or
    finds the running cluster's), as for server/run.sh: a fixed default failed at once
    whenever another cluster (the test suite's, a second bench's) held it."""
    return {"NOTESD_PGDATA": environ.get("NOTESD_PGDATA") or DEFAULT_PGDATA}


def main(argv=None):
    """The command: argv without the program's name (default: this process's)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(
        prog="loadtests/bench", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Environment: NOTESD_PGDATA (default /tmp/bench-pg/pgdata) and NOTESD_PGPORT "
               "(default: the first free port from 54329 on, as sql/localdb.sh picks it) pick "
               "the benchmark's private PostgreSQL (sql/localdb.sh); it is started if needed "
               "(and then stopped at the end), reseeded between runs and pinned to CPU 0. "
               "See loadtests/bench.d/README.md.")
    p.add_argument("--rounds", type=int, help="rounds (default 3; --compare: 8 pairs)")
    p.add_argument("--duration", type=cli.whole_seconds,
                   help="measured run (default 20s; --compare: 3s)")
    p.add_argument("--warmup", type=cli.whole_seconds,
                   help="warm-up run (default 5s; --compare: 1s)")
    p.add_argument("--connections", type=int, default=100, help="wrk connections (default 100)")
    p.add_argument("--subjects", type=listing(ALL_SUBJECTS), default=ALL_SUBJECTS,
                   help=",".join(ALL_SUBJECTS))
    p.add_argument("--tests", type=listing(ALL_TESTS), default=ALL_TESTS,
                   help=",".join(ALL_TESTS))
    p.add_argument("--threads", type=thread_list, default=[1, 2],
                   help="notesd thread counts for the scaling curve (default 1,2)")
    p.add_argument("--out", help="output directory (default /tmp/notesd-bench-TIMESTAMP)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test, indicative only: 1 round, 3 s runs, 1 s warm-up, 5 starts "
                        "(--compare: 6 pairs of 1 s runs, callgrind 2 rounds of 500 requests)")
    p.add_argument("--starts", type=int,
                   help="start-ups of each notesd variant for the start-up figures (default 11)")
    p.add_argument("--compare", metavar="REV|BASE..NEW",
                   help="run nothing else: build REV (any git revision of this repository) in a "
                        "temporary tree and measure this working tree's notesd (A) against it "
                        "(B) in interleaved pairs of short runs; BASE..NEW builds both")
    p.add_argument("--variants", type=listing(list(compare.VARIANTS)),
                   default=["plain", "prepared"],
                   help="--compare: the database mixes' query variants (default plain,prepared; "
                        "also pipeline, prepared-pipeline)")
    p.add_argument("--confidence", type=float, default=stats.DEFAULT_CONFIDENCE,
                   help="--compare: the intervals' confidence (default 0.95)")
    p.add_argument("--seed", type=int, default=stats.DEFAULT_SEED,
                   help="--compare: the bootstrap's seed (kept in bench.json)")
    p.add_argument("--callgrind-rounds", type=int,
                   help="--compare: callgrind rounds per build (default 3; 0: none)")
    p.add_argument("--callgrind-requests", type=int,
                   help="--compare: requests per callgrind run (default 2000)")
    p.add_argument("--callgrind-clients", type=int, default=1,
                   help="--compare: keep-alive connections asking at once in a callgrind run "
                        "(default 1; more let a pipelined notesd batch)")
    p.add_argument("--pool", type=int, default=20,
                   help="POOL_MAX of every server and pgbench -c (default 20)")
    p.add_argument("--notesd", default=os.path.join(REPO, "build", "notesd"),
                   help="notesd binary (default build/notesd; built if missing; --compare "
                        "brings build/ up to date first)")
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
                        "the report again, written beside it (bench.json: report.md; "
                        "NAME.json: NAME.md)")
    args = p.parse_args(argv)
    args.argv = argv
    if args.report_from:
        return rerender(args.report_from)
    if args.cleanup:
        for line in netns.cleanup() or ["nothing to remove"]:
            print(f"bench --cleanup: {line}")
        return 0
    apply_defaults(args)
    if args.connections < 1 or args.pool < 1 or args.netns_connections < 1:
        p.error("--connections, --netns-connections and --pool must be positive")
    if args.compare and (args.sweep or args.netns):
        p.error("--compare runs alone: no --sweep or --netns with it")
    if args.compare and not 0.5 <= args.confidence < 1:
        p.error("--confidence is a fraction such as 0.95")
    if args.rounds < 0 or (args.rounds == 0 and not (args.sweep or args.netns)):
        p.error("--rounds must be positive (0 only with --sweep or --netns: just those)")
    if os.cpu_count() < 2:
        p.error("needs 2 CPUs (server on CPU 1, load and PostgreSQL on CPU 0)")
    if not args.out:
        args.out = "/tmp/notesd-bench-" + time.strftime("%Y%m%d-%H%M%S")

    # the benchmark's own PostgreSQL, never server/run.sh's: it is reset and pinned here
    os.environ.update(private_database_env(os.environ))
    bench = Bench(args)

    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    status = 0
    try:
        run_phases(bench)
    except KeyboardInterrupt:
        bench.notes.append("interrupted: the figures are partial")
        log("interrupted")
        status = 130
    finally:
        stop_all(bench)
    finish(bench)
    return status

