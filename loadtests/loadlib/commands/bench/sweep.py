"""loadtests/bench --sweep: the concurrency sweep. For /json and the read mix,
notesd and the peers under wrk with 1, 10, 100 and 1000 connections: req/s,
p50 and p99 per level, a table, a target and a latency-throughput SVG chart.

Owns the sweep's runs, its figures and its section of the report; the servers
and wrk's command line are subjects.py's, the CPU snapshots bench_runs.py's, and
bench_command.py calls run_sweep() after its rounds.
"""
import os
import resource

from loadlib import charts
from loadlib.commands.bench.bench_figures import DB_TESTS, PATHS, PEERS, check, ratio
from loadlib.commands.bench.bench_runs import begin, cpu_deltas, end, wrk_invalid
from loadlib.commands.bench.subjects import Subject, log, wrk_cmd
from loadlib.report import fmt, fmt_ratio, table
from loadlib.tools import run as toolrun, wrk

SWEEP_TESTS = ["json", "read"]
LEVELS = [1, 10, 100, 1000]
# the levels where latency is service time, not queueing: the target is decided there
SERVICE_LEVELS = (1, 10)
# notesd's p99 at those levels must be at most this share of the best peer's
P99_SHARE = 1 / 3
# subjects of the sweep, in the order of the table (whichever of them this run has)
SWEEP_SUBJECTS = ["notesd", "notesd-prepared", "notesd-pipeline", "node", "bun", "deno"]


def raise_fd_limit(connections):
    """Raises this process's RLIMIT_NOFILE (inherited by wrk and every server it
    spawns) to what `connections` sockets need on both ends plus a margin; returns
    the soft limit now. Root may raise the hard limit too."""
    need = 2 * connections + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return soft
    if hard != resource.RLIM_INFINITY and hard < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, need))
            return need
        except (ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            return hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return need


def run_sweep(bench):
    """Runs the sweep: each subject started once, then per test and level a reset
    (read), a warm-up and a measured wrk run. Records go to bench.sweep_runs."""
    a = bench.args
    levels = a.sweep_connections
    limit = raise_fd_limit(max(levels))
    if limit < 2 * max(levels):
        bench.notes.append(f"sweep: the fd limit is {limit}, too low for {max(levels)} "
                           "connections")
    subjects = [s for s in SWEEP_SUBJECTS if s in bench.subjects]
    log(f"sweep: {', '.join(subjects)} × {', '.join(SWEEP_TESTS)} × connections "
        f"{', '.join(str(n) for n in levels)}")
    for subject in subjects:
        srv = Subject(bench, subject, 1)
        tests = [t for t in SWEEP_TESTS if t in srv.tests]
        if not tests:
            continue
        bench.current = srv
        try:
            srv.start()
        except (RuntimeError, OSError) as e:
            log(f"  sweep: {subject} did not start: {e}")
            for test in tests:
                for n in levels:
                    bench.sweep_runs.append({"subject": subject, "test": test, "connections": n,
                                             "valid": False,
                                             "invalid_reason": f"did not start: {e}"})
            bench.current = None
            continue
        try:
            for test in tests:
                for n in levels:
                    rec = run_level(bench, srv, test, n)
                    bench.sweep_runs.append(rec)
                    log(f"  sweep {subject:<16} {test:<5} c{n:<5} "
                        + (f"{fmt(rec['rps']):>9} req/s  p50 {fmt(rec['p50_ms'])} "
                           f"ms  p99 {fmt(rec['p99_ms'])} ms" if rec["valid"] else
                           f"INVALID: {rec['invalid_reason']}"))
                    bench.save()
        finally:
            srv.stop()
            bench.current = None


def run_level(bench, srv, test, connections):
    a = bench.args
    rec = {"subject": srv.subject, "test": test, "connections": connections}
    if test in DB_TESTS and not a.no_reset:
        bench.db.reset()
    env = dict(os.environ, MODE=test)
    toolrun.run_measured(wrk_cmd(bench, test, srv.port, a.warmup, connections), env=env,
                         timeout=a.warmup + 30)
    cmd = wrk_cmd(bench, test, srv.port, a.duration, connections)
    before = begin(bench, srv.pid)
    res = toolrun.run_measured(cmd, env=env, timeout=a.duration + 30, log_path=os.path.join(
        bench.logdir, f"sweep-{srv.label}-{test}-c{connections}.wrk.txt"))
    after = end(bench, srv.pid)
    w = wrk.json_line(res["output"])
    reason = wrk_invalid(res, w, srv.proc, together=True)
    requests = w["requests"] if w else 0
    rec.update(valid=reason is None, invalid_reason=reason, requests=requests,
               rps=w and w["rps"], p50_ms=w and w["p50_ms"], p99_ms=w and w["p99_ms"],
               wrk_command="MODE=" + test + " " + " ".join(cmd))
    cpu_deltas(before, after, rec, requests, res["cpu_s"])
    return rec


# ---------------------------------------------------------------- figures

def grid(records):
    """{test: {subject: {connections: record}}} of the valid records (the last one wins)."""
    out = {}
    for r in records:
        if r.get("valid"):
            out.setdefault(r["test"], {}).setdefault(r["subject"], {})[r["connections"]] = r
    return out


def sweep_target_rows(records):
    """At 1 and 10 connections, per test: notesd's p99 over the best peer's (the
    lowest p99 among node, bun and deno at that level), PASS when ≤ 1/3."""
    g = grid(records)
    rows = []
    for test in SWEEP_TESTS:
        by = g.get(test, {})
        for n in SERVICE_LEVELS:
            mine = (by.get("notesd", {}).get(n) or {}).get("p99_ms")
            peers = [(p, (by.get(p, {}).get(n) or {}).get("p99_ms")) for p in PEERS]
            peers = [(p, v) for p, v in peers if v is not None]
            peer, peer_v = min(peers, key=lambda pv: pv[1]) if peers else (None, None)
            value = ratio(mine, peer_v)
            rows.append({"test": test, "connections": n, "notesd_p99_ms": mine,
                         "best_peer": peer, "peer_p99_ms": peer_v, "value": value,
                         "threshold": P99_SHARE,
                         "result": check(value, "<=", P99_SHARE)})
    return rows


def chart(test, by_subject):
    """Latency against throughput: one line per subject through its levels, p99 solid
    and p50 dashed, each point marked with its connection count."""
    series = []
    for subject in SWEEP_SUBJECTS:
        levels = by_subject.get(subject)
        if not levels:
            continue
        pts = sorted(levels.items())
        key = subject                   # charts.PALETTE has a colour per subject
        series.append((key, f"{subject} p99", [(r["rps"], r["p99_ms"], f"c{n}") for n, r in pts],
                       False))
        series.append((key, f"{subject} p50", [(r["rps"], r["p50_ms"], None) for n, r in pts],
                       True))
    title = f"Latency against throughput — {PATHS[test]}"
    return charts.line_chart(title, "wrk -t1, connections 1 / 10 / 100 / 1000 per point; "
                             "log scale", series, "req/s", "latency (ms)", log_y=True)


def sweep_section(records, out_dir):
    """The sweep's part of the report (empty without a sweep); writes sweep-TEST.svg."""
    if not records:
        return ""
    g = grid(records)
    out = ["## Concurrency sweep (`--sweep`)", ""]
    out.append("At 1 and 10 connections nothing queues: a request waits for no other, so "
               "latency is the service time of one request (the server's work, the kernel's "
               "and, for the read mix, one query). That is where the servers are compared; "
               "at 100 and 1000 connections the latency is mostly queueing behind the "
               "bottleneck (Little's law: mean latency ≈ connections / req/s).")
    out.append("")
    for test in SWEEP_TESTS:
        by = g.get(test)
        if not by:
            continue
        levels = sorted({n for s in by.values() for n in s})
        rows = []
        for subject in SWEEP_SUBJECTS:
            if subject not in by:
                continue
            cells = []
            for n in levels:
                r = by[subject].get(n)
                cells.append("–" if r is None else
                             f"{fmt(r['rps'])} / {fmt(r['p50_ms'])} / "
                             f"{fmt(r['p99_ms'])}")
            rows.append([subject] + cells)
        out.append(f"### {test} ({PATHS[test]}): req/s / p50 ms / p99 ms")
        out.append("")
        out.append(table(["subject"] + [f"{n} connection{'s' if n > 1 else ''}"
                                        for n in levels], rows))
        out.append("")
        name = f"sweep-{test}.svg"
        if out_dir:
            with open(os.path.join(out_dir, name), "w") as f:
                f.write(chart(test, by))
            out.append(f"![latency against throughput, {test}]({name})")
            out.append("")
    trows = [[r["test"], r["connections"], fmt(r["notesd_p99_ms"]),
              f"{r['best_peer'] or '–'} {fmt(r['peer_p99_ms'])}",
              fmt_ratio(r["value"]), f"<= {r['threshold']:.2f}", f"**{r['result']}**"]
             for r in sweep_target_rows(records)]
    out.append("Target: notesd's p99 ≤ 1/3 of the best peer's at 1 and 10 connections.")
    out.append("")
    out.append(table(["test", "connections", "notesd p99 ms", "best peer p99 ms",
                      "notesd / best peer", "needed", "result"], trows))
    bad = [r for r in records if not r.get("valid")]
    for r in bad:
        out.append(f"\n- invalid: {r['subject']} {r['test']} c{r['connections']}: "
                   f"{r.get('invalid_reason')}")
    return "\n".join(out)
