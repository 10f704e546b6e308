"""bench's measured runs: per round, each subject started once (its startup timed
to the first 200) and each of its tests run by wrk, each pgbench limit run on its
own, every run with a warm-up before it; the CPU time of the server, PostgreSQL,
the load generator and the other cores around each measured run; the records
bench.json keeps, one per run.

The command lines are subjects.py's, the figures over the records bench_figures.py's.
"""
import os
import resource
import shutil
import tempfile
import time

from loadlib import pg, pgbench, procs, prom
from loadlib.commands.bench.bench_figures import DB_TESTS, MIB
from loadlib.commands.bench.subjects import PGBENCH_VARIANTS, log, pgbench_cmd, wrk_cmd
from loadlib.quantile import percentile
from loadlib.report import fmt
from loadlib.sampler import RssSampler
from loadlib.tools import run as toolrun, wrk


# ---------------------------------------------------------------- CPU around a run

def snapshot(server_pid):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"t": time.monotonic(),
            "server": procs.cpu_seconds(server_pid) if server_pid else None,
            "cpus": procs.cpu_times(), "self": ru.ru_utime + ru.ru_stime}


def begin(bench, server_pid):
    """Figures right before a measured run (PostgreSQL's once its process
    list is quiet: backends of a client that just left are reaped)."""
    bench.db.settle()
    db = bench.db.cpu()
    snap = snapshot(server_pid)
    snap["db"] = db
    return snap


def end(bench, server_pid):
    snap = snapshot(server_pid)
    bench.db.settle()
    snap["db"] = bench.db.cpu()
    return snap


def transaction_counts(bench):
    """pg.sync_counts of the bench's database now, or None. A backend reports its
    transactions to pg_stat_database at most once a second while busy, and up to ten
    seconds after it goes idle, so a server whose backends stay (a run of bench's rounds)
    is read right after its warm-up and right after its run: each time with about the
    last second of load not reported yet, at the same rate, which cancels. Where the
    backends exit (pgbench; a --compare run, stopped after it), the counts are exact."""
    return pg.sync_counts(bench.db.url) if bench.db is not None and bench.db.url else None


def cpu_deltas(before, after, rec, requests, loadgen_cpu):
    """Adds a run's CPU figures to its record: elapsed time, the server's, PostgreSQL's
    and the load generator's CPU (and per request), each core's busy share, and the
    other processes' load in cores."""
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


def ms(lag, key):
    """A lag figure from a scrape, in milliseconds, or None."""
    if not lag or lag.get(key) is None:
        return None
    return lag[key] * 1e3


def lag(port):
    m = prom.scrape(f"http://127.0.0.1:{port}/metrics", timeout=2.0) if port else None
    if not m:
        return None
    return {k: prom.value(m, f"notes_eventloop_lag_{k}_seconds") for k in ("mean", "max", "p99")}


def wrk_invalid(res, w, proc, together=False):
    """Why a wrk run does not count (None when it does): wrk failed, an answer was not
    2xx, a socket failed, nothing was answered, or the server exited. together: the
    non-2xx answers and socket errors in one reason (the sweep's and --netns's)."""
    if res["rc"] != 0 or w is None:
        return f"wrk exit {res['rc']}, no WRK_JSON line"
    if together and (w["non2xx"] or w["socket_errors"]):
        return f"{w['non2xx']} non-2xx, {w['socket_errors']} socket errors"
    if w["non2xx"]:
        return f"{w['non2xx']} non-2xx responses"
    if w["socket_errors"]:
        return f"{w['socket_errors']} socket errors"
    if not w["requests"]:
        return "no requests"
    if proc.poll() is not None:
        return "server exited"
    return None


# ---------------------------------------------------------------- one run

def run_http(bench, rnd, srv, test, reset=True):
    """One test of a server: reset (database tests, unless --no-reset or reset=False),
    warm-up, measured wrk run with the server's peak RSS, PSS and USS and event-loop lag."""
    a = bench.args
    rec = {"round": rnd, "subject": srv.subject, "label": srv.label,
           "threads": srv.threads, "test": test, "command": srv.describe()}
    if reset and test in DB_TESTS and not a.no_reset:
        bench.db.reset()
    env = dict(os.environ, MODE=test)
    warm = toolrun.run_measured(wrk_cmd(bench, test, srv.port, a.warmup), env=env,
                                timeout=a.warmup + 30)
    rec["warmup"] = wrk.json_line(warm["output"])
    lag(srv.metrics_port)  # the window restarts at every scrape
    wrk_log = os.path.join(bench.logdir, f"r{rnd}-{srv.label}-{test}.wrk.txt")
    before = begin(bench, srv.pid)
    syncs = transaction_counts(bench) if test in DB_TESTS else None
    sampler = RssSampler(srv.pid)
    sampler.start()
    res = toolrun.run_measured(wrk_cmd(bench, test, srv.port, a.duration), env=env,
                               timeout=a.duration + 30, log_path=wrk_log)
    rss = sampler.finish()
    after = end(bench, srv.pid)
    if syncs is not None:
        rec["queries_per_sync"] = pg.queries_per_sync(syncs, transaction_counts(bench))
    lags = lag(srv.metrics_port)
    w = wrk.json_line(res["output"])
    rec["wrk"] = w
    rec["wrk_command"] = "MODE=" + test + " " + " ".join(wrk_cmd(bench, test, srv.port,
                                                                 a.duration))
    reason = wrk_invalid(res, w, srv.proc)
    requests = w["requests"] if w else 0
    rec.update(valid=reason is None, invalid_reason=reason, requests=requests,
               rps=w and w["rps"], p50_ms=w and w["p50_ms"], p99_ms=w and w["p99_ms"],
               rss_peak_bytes=rss, rss_samples=sampler.samples,
               pss_peak_bytes=sampler.peak_pss, uss_peak_bytes=sampler.peak_uss,
               lag_mean_ms=ms(lags, "mean"), lag_max_ms=ms(lags, "max"),
               lag_p99_ms=ms(lags, "p99"))
    cpu_deltas(before, after, rec, requests, res["cpu_s"])
    return rec


def run_pgbench(bench, rnd, label, test):
    """One mix of a pgbench limit: reset, warm-up, measured run with per-transaction
    latencies from its --log files. pgbench plays the server: its CPU is the server's."""
    a = bench.args
    mode, where, depth = PGBENCH_VARIANTS[label]
    rec = {"round": rnd, "subject": label, "label": label, "threads": 1, "test": test,
           "mode": mode, "cpu": "db" if where == "db" else "server",
           "statements_per_tx": depth or 1}
    if not a.no_reset:
        bench.db.reset()
    warm = toolrun.run_measured(pgbench_cmd(bench, label, test, a.warmup),
                                timeout=a.warmup + 60)
    rec["warmup"] = pgbench.parse_pgbench(warm["output"])
    logdir = tempfile.mkdtemp(prefix="pgbench-log-", dir=bench.tmp)
    cmd = pgbench_cmd(bench, label, test, a.duration, os.path.join(logdir, "tx"))
    rec["command"] = " ".join(cmd)
    before = begin(bench, None)
    syncs = transaction_counts(bench)  # the warm-up's backends have exited: exact
    res = toolrun.run_measured(cmd, timeout=a.duration + 60,
                               log_path=os.path.join(bench.logdir,
                                                     f"r{rnd}-{label}-{test}.txt"))
    after = end(bench, None)
    rec["queries_per_sync"] = pg.queries_per_sync(syncs, transaction_counts(bench))
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
    cpu_deltas(before, after, rec, requests, 0.0)
    rec["loadgen_cpu_us_per_req"] = None  # no load generator apart from pgbench
    rec["server_cpu_s"] = res["cpu_s"]
    rec["server_util"] = round(res["cpu_s"] / rec["elapsed_s"], 3)
    rec["cpu_us_per_req"] = 1e6 * res["cpu_s"] / requests if requests else None
    busy = sum(a2["busy"] - before["cpus"][c]["busy"] for c, a2 in after["cpus"].items())
    ours = res["cpu_s"] + (rec["db_cpu_s"] or 0) + (after["self"] - before["self"])
    rec["other_cores"] = round((busy - ours) / rec["elapsed_s"], 3)
    return rec


def keep_record(bench, rec):
    """Keeps a run's record, prints its line, saves bench.json."""
    bench.runs.append(rec)
    if rec.get("valid"):
        extra = f"CPU {fmt(rec.get('cpu_us_per_req'))} µs/req"
        if rec.get("rss_peak_bytes"):
            extra += f", RSS {rec['rss_peak_bytes'] / MIB:.1f} MiB"
        if rec.get("uss_peak_bytes"):
            extra += f" (USS {rec['uss_peak_bytes'] / MIB:.1f})"
        if rec.get("lag_mean_ms") is not None:
            extra += f", lag {fmt(rec['lag_mean_ms'])} ms"
        if rec.get("queries_per_sync") is not None:
            extra += f", {rec['queries_per_sync']:.1f} queries/sync"
        log(f"  {rec['label']:<18} {rec['test']:<7} {fmt(rec['rps']):>9} req/s  "
            f"p99 {fmt(rec['p99_ms'])} ms  {extra}  other load "
            f"{fmt(rec.get('other_cores'), 2)}")
    else:
        log(f"  {rec['label']:<18} {rec['test']:<7} INVALID: {rec.get('invalid_reason')}")
    bench.save()


# ---------------------------------------------------------------- the rounds

def run_unit(bench, rnd, kind, unit):
    """A pgbench limit's mixes, or a server started once and each of its tests."""
    if kind == "pgbench":
        for test in [t for t in bench.tests if t in DB_TESTS]:
            keep_record(bench, run_pgbench(bench, rnd, unit, test))
        return
    srv = unit
    bench.current = srv
    if start_once(bench, srv, rnd):
        log(f"  {srv.label:<18} started: first 200 of {srv.startup_path} after "
            f"{bench.startups[-1]['startup_ms']:.1f} ms")
    else:
        srv.stop()
        bench.current = None
        for test in srv.tests:
            keep_record(bench, {"round": rnd, "subject": srv.subject, "label": srv.label,
                                "threads": srv.threads, "test": test, "valid": False,
                                "invalid_reason": f"did not start: {bench.startups[-1]['error']}"})
        return
    try:
        for test in srv.tests:
            keep_record(bench, run_http(bench, rnd, srv, test))
    finally:
        srv.stop()
        bench.current = None


def start_once(bench, srv, rnd, series=None):
    """Starts a server and records its start-up (spawn to the first 200 of its startup
    path) in bench.startups; returns True when it came up. series: the start's number in
    --starts' series (round 0), which stops it again at once."""
    rec = {"round": rnd, "subject": srv.subject, "label": srv.label, "threads": srv.threads,
           "path": srv.startup_path, "command": srv.describe()}
    if series is not None:
        rec["series"] = series
    # the previous server's backends are gone first: their exits would compete with this
    # start's connection for CPU 0 and the postmaster, more after a server that had 20
    bench.db.settle()
    try:
        rec["startup_ms"] = srv.start() * 1e3
    except (RuntimeError, OSError) as e:
        rec.update(startup_ms=None, error=str(e))
    finally:
        if series is not None:
            srv.stop()
    bench.startups.append(rec)
    return rec["startup_ms"] is not None


def run_startup_series(bench):
    """--starts: each one-thread notesd variant started and stopped again --starts times,
    the variants in turn (reversed every other time), for the start-up figures: the
    median of many starts, not of one per round."""
    units = [u for k, u in bench.units if k == "server" and u.threads == 1
             and u.subject.startswith("notesd")]
    if not units or bench.args.starts < 1:
        return
    log(f"start-up: {bench.args.starts} starts of {', '.join(u.label for u in units)}")
    for i in range(1, bench.args.starts + 1):
        for srv in (units if i % 2 else list(reversed(units))):
            bench.current = srv
            start_once(bench, srv, 0, series=i)
            bench.current = None
    for srv in units:
        values = sorted(s["startup_ms"] for s in bench.startups
                        if s.get("series") and s["label"] == srv.label and s["startup_ms"])
        if values:
            log(f"  {srv.label:<18} start-up median {fmt(values[len(values) // 2])} ms "
                f"({fmt(values[0])}–{fmt(values[-1])})")
    bench.save()


def estimate(bench):
    """Seconds the rounds will take."""
    a = bench.args
    per_round = 0
    for kind, unit in bench.units:
        n = (len([t for t in bench.tests if t in DB_TESTS]) if kind == "pgbench"
             else len(unit.tests))
        per_round += n * (a.warmup + a.duration + 3)
    return per_round * a.rounds


def run_rounds(bench):
    """Every round, the subjects in round 1's order in odd rounds, reversed in even ones."""
    if bench.args.rounds:
        log(f"{len(bench.units)} subjects × up to {len(bench.tests)} tests × "
            f"{bench.args.rounds} round(s): about {estimate(bench) / 60:.0f} min")
    for rnd in range(1, bench.args.rounds + 1):
        order = bench.units if rnd % 2 == 1 else list(reversed(bench.units))
        names = [u.label if k == "server" else u for k, u in order]
        log(f"round {rnd}/{bench.args.rounds}: {', '.join(names)}")
        for kind, unit in order:
            run_unit(bench, rnd, kind, unit)
