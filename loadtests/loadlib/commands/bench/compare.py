"""bench --compare REV: this notesd (A) against another revision's (B), measured in
turns on the same layout, so the machine's drift falls on both alike.

Each case (a wrk MODE, and for the database mixes each query variant: unnamed,
--prepared, pipelined) runs A and B back to back in every round: a pair. The order
within a pair alternates from case to case and from round to round (AB, BA, ...),
and the cases run in the same order every round, so what comes before a pair (a
reset of the table or none, the case before it) is the same in every round, and
which build runs first in it is not tied to any of that. (Reversing the order every
other round would tie them: the rounds in which a pair follows a reset would be the
rounds in which the same build goes first. A comparison of a build with itself
showed it, one build ahead on every database mix.) Every run is a fresh start of the binary
(its start-up is timed: spawn to the first 200 of GET /notes?tag=js), a warm-up, a
measured wrk run (runs.run_http: req/s, notesd's CPU and PostgreSQL's from
/proc), and a stop. The table is reset before a pair of database runs when a run
that writes came before it (reads leave it as they found it): not between the two
runs of a pair, where a reset costs more time than it buys (the second run of a
write pair sees about 1% more rows than the first, and which build that is
alternates). Before the rounds, callgrind counts each binary's instructions per
request (tests/tools/callgrind_per_request.py: /json, and /notes/1 in each query
variant compared).

The figures and the verdicts are compare_report.py's; the builds
revisions.py's.
"""
import datetime
import json
import os
import shutil
import sys

from loadlib import pg, procs
from loadlib.commands.bench.bench_figures import DB_TESTS, HTTP_TESTS
from loadlib.commands.bench.revisions import BuildError, prepare
from loadlib.commands.bench.bench_runs import keep_record, run_http, transaction_counts
from loadlib.commands.bench.setup import check_server, open_private_database
from loadlib.commands.bench.subjects import (
    LOAD_CPU, PIPELINE_DEPTH, PIPELINE_SUBJECTS, SERVER_CPU, Subject, log)
from loadlib.paths import REPO
from loadlib.stats import DEFAULT_RESAMPLES
from loadlib.tools import run as toolrun, wrk

# --variants: the query variants of the database mixes, and the subject each runs as
VARIANTS = {"plain": "notesd", "prepared": "notesd-prepared", "pipeline": "notesd-pipeline",
            "prepared-pipeline": "notesd-prepared-pipeline"}
# rounds, measured seconds and warm-up seconds: the defaults keep every mode, with the
# plain and prepared variants, under 15 minutes on the 2-core machine; --quick is a smoke test
DEFAULTS = {"rounds": 8, "duration": 2, "warmup": 1}
QUICK = {"rounds": 6, "duration": 1, "warmup": 1}
CALLGRIND = os.path.join(REPO, "tests", "tools", "callgrind_per_request.py")
CALLGRIND_PATHS = ["/json", "/notes/1"]
# notesd's settings for each query variant, as bench's subjects set them
VARIANT_SETTINGS = {"plain": {}, "prepared": {"PREPARED": "1"},
                    "pipeline": {"PIPELINE_DEPTH": str(PIPELINE_DEPTH)},
                    "prepared-pipeline": {"PREPARED": "1", "PIPELINE_DEPTH": str(PIPELINE_DEPTH)}}
CALLGRIND_DEFAULTS = {"rounds": 3, "requests": 1000}
CALLGRIND_QUICK = {"rounds": 2, "requests": 500}
WRITES = ("write", "mixed")


def make_cases(tests, variants, pipelined):
    """The cases, in order: the HTTP tests once (plain notesd), each database mix once per
    variant ("read", "read, prepared", ...); pipelined variants only when both builds
    have --pipeline (`pipelined`). Returns (cases, what was left out and why)."""
    cases, skipped = [], []
    for test in tests:
        if test in HTTP_TESTS:
            cases.append({"case": test, "test": test, "subject": "notesd", "variant": "plain"})
            continue
        for v in variants:
            subject = VARIANTS[v]
            if subject in PIPELINE_SUBJECTS and not pipelined:
                skipped.append(f"{test}, {v}: one of the builds has no --pipeline")
                continue
            cases.append({"case": test if v == "plain" else f"{test}, {v}", "test": test,
                          "subject": subject, "variant": v})
    return cases, skipped


def pair_order(rnd, index):
    """Which side runs first in round `rnd` (from 1) for the case at `index`: A when
    rnd + index is odd. Over two rounds every case runs AB once and BA once."""
    return ("A", "B") if (rnd + index) % 2 else ("B", "A")


def round_cases(cases, rnd):
    """(index, case) in the order round `rnd` runs them: the same in every round (see
    the module's comment)."""
    return list(enumerate(cases))


# ---------------------------------------------------------------- before the rounds

def setup_compare(bench):
    """The two builds, the database, one server per side and subject, each checked once."""
    a = bench.args
    os.sched_setaffinity(0, LOAD_CPU)  # this script stays off the server's CPU
    for tool in ("wrk", "taskset", "git", "tar"):
        if not shutil.which(tool):
            sys.exit(f"bench --compare: {tool} not found")
    try:
        bench.sides = dict(zip("AB", prepare(bench, a.compare)))
    except BuildError as e:
        sys.exit(f"bench --compare: {e}")
    for side in bench.sides.values():
        log(f"{side.side}: {side.describe} (sha256 {side.sha256[:12]}…)")
    pipelined = all(s.pipeline for s in bench.sides.values())
    bench.cases, skipped = make_cases(bench.tests, a.variants, pipelined)
    bench.notes += skipped
    if not bench.cases:
        sys.exit("bench --compare: no case to run")
    bench.db = open_private_database(None if a.pg_cpus == "all" else LOAD_CPU)
    bench.table_dirty = True          # whatever ran before us may have written
    bench.compare_subjects = {}
    for side, build in bench.sides.items():
        for subject in dict.fromkeys(c["subject"] for c in bench.cases):
            bench.compare_subjects[(side, subject)] = Subject(bench, subject, 1, build=build)
    log("preflight: each build and variant once, routes checked")
    for key, srv in bench.compare_subjects.items():
        try:
            srv.start()
            problems = check_server(srv)
        except (RuntimeError, OSError) as e:
            problems = [str(e)]
        finally:
            srv.stop()
        bench.preflight[srv.label] = problems or "ok"
        if problems:
            sys.exit(f"bench --compare: {srv.label} failed its preflight: {'; '.join(problems)} "
                     f"(log: {bench.logdir}/{srv.label}.log)")
    bench.table_dirty = True          # the preflight wrote a note


def callgrind_groups(cases):
    """[(variant, paths)]: /json and /notes/1 plain, and /notes/1 in every other query
    variant the cases compare; a figure is labelled "/notes/1, prepared" and so on."""
    variants = dict.fromkeys(c["variant"] for c in cases if c["test"] in DB_TESTS)
    groups = [("plain", CALLGRIND_PATHS)]
    groups += [(v, ["/notes/1"]) for v in variants if v != "plain"]
    return groups


def callgrind_label(variant, path):
    return path if variant == "plain" else f"{path}, {variant}"


def run_callgrind(bench):
    """Instructions per request of both builds, callgrind's count, rounds alternating
    the builds (tests/tools/callgrind_per_request.py, with a PostgreSQL of its own),
    once per query variant. bench.callgrind: {"paths" (labels), "rounds", "requests",
    "clients", "A": {label: [per round]}, "B": ...}."""
    a = bench.args
    if a.callgrind_rounds < 1:
        return
    if not shutil.which("valgrind"):
        bench.notes.append("valgrind not found: no instruction counts (apt-get install valgrind)")
        return
    groups = callgrind_groups(bench.cases)
    labels = [callgrind_label(v, p) for v, paths in groups for p in paths]
    bench.callgrind = {"paths": labels, "rounds": a.callgrind_rounds,
                       "requests": a.callgrind_requests, "clients": a.callgrind_clients,
                       "commands": [], "A": {}, "B": {}}
    log(f"callgrind: {a.callgrind_rounds} round(s) of {a.callgrind_requests} requests on "
        f"{a.callgrind_clients} connection(s) per path and build ({', '.join(labels)})")
    python = shutil.which("python3", path="/usr/bin") or sys.executable  # Debian's: psycopg2
    for variant, paths in groups:
        out = os.path.join(bench.tmp, f"callgrind-{variant}.json")
        cmd = ["taskset", "-c", ",".join(str(c) for c in sorted(LOAD_CPU | SERVER_CPU)),
               python, CALLGRIND, "--rounds", str(a.callgrind_rounds),
               "--requests", str(a.callgrind_requests), "--clients", str(a.callgrind_clients),
               "--json", out]
        for side in "AB":
            cmd += ["--bin", bench.sides[side].notesd]
        for path in paths:
            cmd += ["--path", path]
        for name, value in VARIANT_SETTINGS[variant].items():
            cmd += ["--env", f"{name}={value}"]
        bench.callgrind["commands"].append(" ".join(cmd))
        res = toolrun.run_measured(cmd, timeout=1800,
                                   log_path=os.path.join(bench.logdir, f"callgrind-{variant}.txt"))
        try:
            with open(out) as f:
                counts = json.load(f)["per_request"]
        except (OSError, ValueError, KeyError):
            tail = res["output"].strip().splitlines()[-3:]
            bench.callgrind["error"] = f"exit {res['rc']}: {' | '.join(tail) or 'no output'}"
            bench.notes.append(f"callgrind failed: {bench.callgrind['error']}")
            log(f"callgrind failed: {bench.callgrind['error']}")
            return
        for side in "AB":
            binary = bench.sides[side].notesd
            for p in paths:
                bench.callgrind[side][callgrind_label(variant, p)] = counts[binary][p]
            log(f"  {side}: " + ", ".join(f"{callgrind_label(variant, p)} {counts[binary][p]}"
                                          for p in paths))
        bench.save()


# ---------------------------------------------------------------- the rounds

def reset_if_written(bench, case):
    """Before a pair of database runs: reseeds the table when a run wrote to it since
    the last reset."""
    if case["test"] in DB_TESTS and bench.table_dirty and not bench.args.no_reset:
        bench.db.reset()
        bench.table_dirty = False


def run_side(bench, rnd, case, side, first):
    """One run of a case by one side: start (timed), warm-up and measured run, stop.
    The record of runs.run_http with the side, the case, whether it went first in
    its pair, and the start-up."""
    srv = bench.compare_subjects[(side, case["subject"])]
    test = case["test"]
    head = {"round": rnd, "subject": srv.subject, "label": srv.label, "threads": 1,
            "test": test, "side": side, "case": case["case"], "first": first}
    bench.current = srv
    bench.db.settle()   # the previous run's backends have exited: they would slow this start
    syncs = transaction_counts(bench) if test in DB_TESTS else None
    try:
        try:
            startup = srv.start()
        except (RuntimeError, OSError) as e:
            return dict(head, valid=False, invalid_reason=f"did not start: {e}", startup_ms=None)
        rec = run_http(bench, rnd, srv, test, reset=False)
    finally:
        srv.stop()
        bench.current = None
        if test in WRITES:
            bench.table_dirty = True
    if syncs is not None:
        # the server's backends have exited and reported everything: exact, over its life
        bench.db.settle()
        rec["queries_per_sync"] = pg.queries_per_sync(syncs, transaction_counts(bench))
    rec.update(head, startup_ms=startup * 1e3)
    return rec


def run_pairs(bench):
    """Every round: each case as a pair of runs, A and B in the order pair_order gives."""
    a = bench.args
    per_run = a.warmup + a.duration + 1
    resets = sum(1 for c in bench.cases if c["test"] in WRITES) + 1
    log(f"{len(bench.cases)} cases × 2 builds × {a.rounds} rounds: about "
        f"{(len(bench.cases) * 2 * per_run + resets * 3) * a.rounds / 60:.0f} min")
    for rnd in range(1, a.rounds + 1):
        log(f"round {rnd}/{a.rounds}")
        for index, case in round_cases(bench.cases, rnd):
            order = pair_order(rnd, index)
            reset_if_written(bench, case)
            for side in order:
                keep_record(bench, run_side(bench, rnd, case, side, side == order[0]))


def run_compare(bench):
    """The phases of --compare: builds and preflight, callgrind, the paired rounds."""
    setup_compare(bench)
    run_callgrind(bench)
    run_pairs(bench)


# ---------------------------------------------------------------- bench.json

def compare_meta(bench):
    """What the report says about the comparison: both builds, the settings, the
    statistics' parameters (the seed makes the intervals reproducible), host, layout."""
    a = bench.args
    return {
        "compare": a.compare,
        "started": bench.started.isoformat(timespec="seconds"),
        "finished": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "quick": a.quick, "rounds": a.rounds, "duration_s": a.duration, "warmup_s": a.warmup,
        "connections": a.connections, "pool": a.pool, "tests": bench.tests,
        "variants": a.variants, "pipeline_depth": PIPELINE_DEPTH,
        "confidence": a.confidence, "seed": a.seed, "resamples": DEFAULT_RESAMPLES,
        "sides": {k: s.meta() for k, s in getattr(bench, "sides", {}).items()},
        "host": dict(procs.machine_info(), loadavg=procs.loadavg()),
        "versions": {"wrk": wrk.version_line().split(" [")[0],
                     "PostgreSQL": (bench.db.version if bench.db is not None else None) or ""},
        "layout": ("notesd on CPU 1 (`taskset -c 1`), wrk -t1 and PostgreSQL (all its "
                   "processes) on CPU 0, this script on CPU 0; POOL_MAX="
                   f"{a.pool}, SERVER_TIMING=0"),
        "argv": a.argv,
        "scratch": bench.tmp,   # removed at the end, with the temporary trees and the copies
    }


def compare_data(bench):
    """bench.json of a comparison: the raw runs and callgrind counts; the figures are
    recomputed from them (compare_report.py), so a report can be made again."""
    return {"meta": compare_meta(bench), "notes": bench.notes, "preflight": bench.preflight,
            "cases": getattr(bench, "cases", []), "runs": bench.runs,
            "callgrind": getattr(bench, "callgrind", None)}
