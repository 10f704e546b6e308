"""calibrate: is the load tool telling the truth? Known-latency runs against notesd.

    loadtests/calibrate [--out report.md] [--json raw.json] [--seconds 5]
    loadtests/calibrate --base-url http://127.0.0.1:8080 [--metrics-url http://127.0.0.1:9091/metrics]
    loadtests/calibrate --tools all|h2load,ab,... [--smoke] [--out report.md] [--json raw.json]
    loadtests/calibrate --ws all|k6,artillery,tsung [--out ws.md] [--json ws.json]

Without --base-url it starts build/notesd itself on 127.0.0.1:18220 (metrics
on 19220; --port, --metrics-port), pinned to CPU 1 with `taskset -c 1`, and
stops it at the end; wrk and the Python generator run pinned to CPU 0. The
routes used (/delay, /primes, /status) never touch the database, so no
PostgreSQL is needed (DB_URL only has to parse).

Sections of the Markdown report (stdout, and --out FILE):

 1. /delay/50 at 1, 10 and 50 connections, and ?jitter=20 at 10 and 50:
    wrk's percentiles and req/s against the truth (p50 = 50 ms; with jitter J
    uniform on [50-J, 50+J]: p90 = 50+0.8J, p99 = 50+0.98J; req/s = c / 50 ms).
 2. The server's own view: Server-Timing `total` of a few sequential
    requests against what the client measured, and the delta of the
    http_request_duration_seconds histogram for path /delay/:ms.
 3. Saturation: /primes at 1 and 50 connections (latency = queueing, Little's
    law), and /delay/50 measured while /primes saturates the loop.
 4. Coordinated omission: /delay/0 while a /primes request stalls the loop
    every --stall-every seconds: wrk (closed), a raw closed model and an open
    model at --open-rate (loadtests/calibration/openload.py), with the open
    model's expected p99 computed from the measured stalls. The stalling
    request's ?below= is sized to take about --stall-ms first.

Every run is bounded (--seconds each, about 60 s in all at the default) and
only loopback targets are accepted.

--tools LIST replaces those sections with the load-tool conformance matrix
(calibrate_matrix.py runs and judges it, calibrate_scorecard.py writes it): every
listed tool ("all": every adapter in loadlib/tools) through the same checks against
a notesd started for it, a scorecard on stdout and in
loadtests/results/calibrate-<UTC time>/ (scorecard.md, scorecard.json, SVG charts).
--smoke runs the counts check alone, two seconds per tool. The scorecard gains the
WebSocket column (calibrate_ws.py) for the listed tools that speak WebSocket; --ws
LIST runs that column alone.
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from loadlib import httpc, procs, prom, quantile, server as srv
from loadlib.commands import calibrate_matrix, calibrate_scorecard, calibrate_ws
from loadlib.server import LOADTESTS, REPO
from loadlib.netcheck import is_loopback
from loadlib.quantile import median
from loadlib.report import fmt_fixed as fmt, logger
from loadlib.tools import wrk
from loadlib.tools.base import RunSpec
from loadlib.tools.run import run_measured

LATENCY_LUA = os.path.join(LOADTESTS, "calibration", "latency.lua")
OPENLOAD = os.path.join(LOADTESTS, "calibration", "openload.py")
DELAY_PATH = "/delay/:ms"
SETTLE = 0.3  # seconds between the end of a run and its closing scrape
DELAY_ROWS = [(0, 1), (0, 10), (0, 50), (20, 10), (20, 50)]  # (jitter, connections) of section 1


# ------------------------------------------------------------------ metrics

def scrape(url):
    """The samples of the metrics page; None without a URL or an answer."""
    return prom.scrape(url)


def histogram_delta(before, after, path=DELAY_PATH):
    """count, mean_ms and cumulative buckets of http_request_duration_seconds for one
    route (all methods and statuses) between two scrapes."""
    return prom.histogram_summary(before, after, "http_request_duration_seconds",
                                  lambda labels: labels.get("path") == path)


def share_between(hist, lo, hi):
    """Fraction of a histogram delta's observations in (lo, hi] seconds."""
    cum = dict(hist["buckets"])
    below = cum.get(lo, 0.0) if lo > 0 else 0.0
    return (cum.get(hi, hist["count"]) - below) / hist["count"]


def histogram_quantile(hist, q):
    """What Prometheus' histogram_quantile() would answer for a histogram_delta(), ms."""
    v, _ = quantile.histogram_quantile(q, hist["buckets"])
    return None if v is None else v * 1000


def lag_max_ms(scrape_after):
    """notes_eventloop_lag_max_seconds: the largest lag since the previous scrape."""
    if scrape_after is None:
        return None
    v = prom.value(scrape_after, "notes_eventloop_lag_max_seconds")
    return None if v is None else v * 1000


# ------------------------------------------------------------------ load tools

class Runner:
    def __init__(self, args):
        self.args = args
        self.pin = procs.can_pin((0, 1))
        self.wrk = args.wrk or wrk.path()
        if not self.wrk:
            raise SystemExit(f"calibrate: wrk not found ({wrk.INSTALL_HINT}, or --wrk PATH)")

    def pinned(self, cmd):
        return procs.taskset(cmd, 0 if self.pin else None)

    def wrk_cmd(self, path, connections, seconds):
        """The wrk adapter's command (latency.lua), with this run's wrk binary."""
        spec = RunSpec(url=self.args.base_url + path, connections=connections, duration_s=seconds,
                       timeout_s=10, threads=1)
        argv = wrk.command(spec, None)
        return self.pinned([self.wrk, *argv[1:]])

    @staticmethod
    def parse(stdout, tag):
        data = wrk.json_line(stdout, tag)
        if data is None:
            raise RuntimeError(f"no {tag} line in:\n{stdout}")
        return data

    def wrk_run(self, path, connections, seconds=None):
        """One wrk run with a metrics scrape on each side."""
        seconds = seconds or self.args.seconds
        before = scrape(self.args.metrics_url)
        proc = run_measured(self.wrk_cmd(path, connections, seconds), timeout=seconds + 60)
        time.sleep(SETTLE)  # requests in flight when wrk stopped still finish on the server
        after = scrape(self.args.metrics_url)
        res = self.parse(proc["output"], "WRK_JSON")
        res.update(path=path, connections=connections,
                   histogram=histogram_delta(before, after), lag_max_ms=lag_max_ms(after))
        return res

    def wrk_start(self, path, connections, seconds):
        return subprocess.Popen(self.wrk_cmd(path, connections, seconds), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    def openload(self, path, seconds, rate=None, closed=None, slow_ms=100.0):
        cmd = [sys.executable, OPENLOAD, "--url", self.args.base_url + path,
               "--duration", str(seconds), "--slow-ms", f"{slow_ms:g}"]
        cmd += ["--rate", str(rate)] if rate else ["--closed", str(closed)]
        before = scrape(self.args.metrics_url)
        proc = run_measured(self.pinned(cmd), timeout=seconds + 60)
        time.sleep(SETTLE)
        after = scrape(self.args.metrics_url)
        res = self.parse(proc["output"], "OPENLOAD_JSON")
        res.update(histogram=histogram_delta(before, after), lag_max_ms=lag_max_ms(after))
        return res


class Staller(threading.Thread):
    """Every `every` seconds, one GET /primes?below=N on its own connection:
    the server computes it on its loop and answers nothing else meanwhile."""

    def __init__(self, base_url, below, every, seconds, first=0.5):
        super().__init__(daemon=True)
        u = urllib.parse.urlsplit(base_url)
        self.host, self.port = u.hostname, u.port or 80
        self.below, self.every, self.first = below, every, first
        # only stalls that start inside the measured run
        self.count = max(1, int((seconds - first) / every) + 1)
        self.stop_flag = threading.Event()
        self.stalls = []

    def run(self):
        next_at = time.monotonic() + self.first
        for _ in range(self.count):
            if self.stop_flag.wait(max(0.0, next_at - time.monotonic())):
                break
            t0 = time.perf_counter()
            try:
                httpc.request(self.port, f"/primes?below={self.below}", timeout=30, host=self.host)
                self.stalls.append(time.perf_counter() - t0)
            except OSError:
                pass
            next_at += self.every

    def stop(self):
        self.stop_flag.set()
        self.join(60)


def timed_get(base_url, path):
    """Seconds one GET takes on a fresh connection."""
    u = urllib.parse.urlsplit(base_url)
    t0 = time.perf_counter()
    httpc.request(u.port or 80, path, timeout=60, host=u.hostname)
    return time.perf_counter() - t0


def size_stall(base_url, target_ms, limit=10000000):
    """?below= for which one /primes request takes about target_ms on this server
    now (trial division costs roughly N^1.5; two refinements)."""
    below = 200000
    for _ in range(3):
        took = min(timed_get(base_url, f"/primes?below={below}") for _ in range(2)) * 1000
        below = int(min(limit, max(10000, below * (target_ms / max(took, 0.1)) ** (2 / 3))))
    return below


# ------------------------------------------------------------------ the server

def start_notesd(args, pin):
    """build/notesd on 127.0.0.1, pinned to CPU 1 when the machine allows; its log in a
    temporary file that goes away with it. Returns its ProcessUnderTest."""
    for p in (args.port, args.metrics_port):
        if not srv.port_free(p):
            raise SystemExit(f"calibrate: port {p} is taken; pick --port/--metrics-port")
    env = srv.target_env("notesd", os.environ, args.db_url, args.port, args.metrics_port)
    env.update(LOG_LEVEL="warn", SERVER_TIMING="1")     # section 2 reads Server-Timing
    argv, cwd = srv.target_command("notesd", args.notesd)
    log_path = os.path.join(tempfile.gettempdir(), f"calibrate-notesd-{os.getpid()}.log")
    server = srv.ProcessUnderTest(argv, env, cwd, log_path, port=args.port, cpus=1 if pin else None,
                                  taskset=True, tied=True, temporary_log=True)
    server.start()
    try:
        server.wait_ready(limit_s=15, poll_s=0.05)
    except srv.NotReady as e:
        text = server.log_text()
        server.stop()
        raise SystemExit(f"calibrate: notesd {e}: {text}")
    return server


# ------------------------------------------------------------------ the report

def machine_line(runner, args, started):
    load = os.getloadavg()
    wrk_version = wrk.version_line(runner.wrk) or "wrk ?"
    pin = ("server `taskset -c 1`, wrk and openload.py `taskset -c 0`" if runner.pin and started
           else "wrk and openload.py `taskset -c 0` (server not started here)" if runner.pin
           else "no pinning (taskset missing or one CPU)")
    return (f"- machine: {platform.node()}, {os.cpu_count()} CPUs, {platform.system()} "
            f"{platform.release()}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
            f"at the start\n- tools: {wrk_version}; Python {platform.python_version()}\n"
            f"- pinning: {pin}\n- target: {args.base_url}"
            + (f" (metrics {args.metrics_url})" if args.metrics_url else " (no metrics URL)")
            + f"\n- {args.seconds} s per run\n")


def truth(jitter, q):
    """The q-th percentile of /delay/50?jitter=J in ms (uniform on [50-J, 50+J])."""
    return 50.0 + (2 * q / 100.0 - 1) * jitter


def section_delay(runs, rows):
    out = ["## 1. Known latency: `/delay/50`\n",
           "wrk -t1, `--latency`, percentiles from loadtests/calibration/latency.lua. Truth: the "
           "server answers 50 ms after it reads the request; with `?jitter=J` the delay is uniform "
           "on [50−J, 50+J], so p50 = 50, p90 = 50 + 0.8J, p99 = 50 + 0.98J; a closed model with c "
           "connections can do at most c / 50 ms requests per second.\n",
           "| route | c | requests | req/s (bound) | p50 ms (truth) | p90 ms (truth) | p99 ms (truth) "
           "| max ms | p50 error ms | p99 error ms | server mean ms |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (jitter, c), r in zip(rows, runs):
        h = r.get("histogram") or {}
        t50, t90, t99 = truth(jitter, 50), truth(jitter, 90), truth(jitter, 99)
        route = "/delay/50" + (f"?jitter={jitter}" if jitter else "")
        out.append(f"| `{route}` | {c} | {r['requests']} | {r['rps']:.1f} ({c / 0.05:.0f}) | "
                   f"{r['p50_ms']:.3f} ({t50:g}) | {r['p90_ms']:.3f} ({t90:g}) | "
                   f"{r['p99_ms']:.3f} ({t99:g}) | {r['max_ms']:.3f} | "
                   f"{r['p50_ms'] - t50:+.3f} | {r['p99_ms'] - t99:+.3f} | "
                   f"{fmt(h.get('mean_ms'), 3)} |")
    out.append("")
    notes = []
    for (jitter, c), r in zip(rows, runs):
        h = r.get("histogram") or {}
        if abs(r["p50_ms"] - 50.0) > 1.0 or r["p99_ms"] - truth(jitter, 99) > 5.0:
            where = ""
            if h.get("mean_ms") is not None:
                outside = r["mean_ms"] - h["mean_ms"]
                where = (f": the server's own mean was {h['mean_ms']:.2f} ms, so "
                         f"{outside:.2f} ms of wrk's mean {r['mean_ms']:.2f} ms was spent outside "
                         f"the server's handler (loopback, kernel, and wrk's own turn on its CPU)")
            notes.append(f"- c={c}{' jitter' if jitter else ''}: p50 {r['p50_ms'] - 50:+.2f} ms, "
                         f"p99 {r['p99_ms'] - truth(jitter, 99):+.2f} ms off the truth{where}")
    if notes:
        out.append("Deviations over 1 ms at p50 or 5 ms at p99 (with c=1 a run has about 20 "
                   "samples per second, so its p99 is its worst answer or close to it):\n")
        out.append("\n".join(notes) + "\n")
    c10 = next(r for (j, c), r in zip(rows, runs) if j == 0 and c == 10)
    err = c10["p50_ms"] - 50.0
    verdict = "met" if abs(err) <= 1.0 else "NOT met"
    out.append(f"\n**Target** (wrk p50 of `/delay/50` at 10 connections within 1 ms of 50 ms): "
               f"measured {c10['p50_ms']:.3f} ms, error {err:+.3f} ms — {verdict}.\n")
    bad = [r for r in runs if r["status_errors"] or r["timeouts"] or r["connect_errors"]
           or r["read_errors"] or r["write_errors"]]
    if bad:
        out.append(f"Errors in {len(bad)} run(s): "
                   + "; ".join(f"c={r['connections']} {r['path']}: status {r['status_errors']}, "
                               f"timeouts {r['timeouts']}, read {r['read_errors']}" for r in bad)
                   + "\n")
    return "\n".join(out)


def section_server_view(samples, runs, rows):
    out = ["## 2. The server's own view\n"]
    st = [(c, s) for c, s in samples if s is not None]
    if st:
        diffs = [c - s for c, s in st]
        out.append(f"`Server-Timing: total` of {len(st)} sequential `GET /delay/50` on one "
                   f"keep-alive connection (Python http.client): server total median "
                   f"{median([s for _, s in st]):.3f} ms (min {min(s for _, s in st):.3f}, max "
                   f"{max(s for _, s in st):.3f}); client-measured median "
                   f"{median([c for c, _ in st]):.3f} ms; difference (client − server: loopback, "
                   f"kernel, HTTP parsing in the client) median {median(diffs):.3f} ms, max "
                   f"{max(diffs):.3f} ms.\n")
    else:
        out.append("No `Server-Timing` header (a target without it, or `SERVER_TIMING=0`).\n")
    hist_runs = [(row, r) for row, r in zip(rows, runs) if (r.get("histogram") or {}).get("count")]
    if not hist_runs:
        out.append("No metrics URL: the server's histogram was not read.\n")
        return "\n".join(out)
    out.append("`http_request_duration_seconds{path=\"/delay/:ms\"}`, delta over each wrk run "
               "(the server counts the requests still in flight when wrk stopped, so its count "
               "can exceed wrk's by up to c):\n")
    out.append("| route | c | wrk requests | server count | server mean ms | wrk mean ms | "
               "outside the server ms | share in (50, 100] ms | histogram_quantile p50 / p99 ms |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (jitter, c), r in hist_runs:
        h = r["histogram"]
        route = "/delay/50" + (f"?jitter={jitter}" if jitter else "")
        q50, q99 = histogram_quantile(h, 0.5), histogram_quantile(h, 0.99)
        out.append(f"| `{route}` | {c} | {r['requests']} | {h['count']} | {h['mean_ms']:.3f} | "
                   f"{r['mean_ms']:.3f} | {r['mean_ms'] - h['mean_ms']:.3f} | "
                   f"{share_between(h, 0.05, 0.1) * 100:.1f}% | "
                   f"{fmt(q50, 1)} / {fmt(q99, 1)} |")
    out.append("\nThe mean (`_sum / _count`) is exact; percentiles are not: the buckets around "
               "50 ms are `0.03`, `0.05`, `0.1`, so every plain `/delay/50` answer lands in "
               "(50, 100] ms and `histogram_quantile()` interpolates inside that 50 ms wide bucket "
               "(last column). Read latency percentiles from the load tool, the mean and the "
               "counts from the server. With jitter, answers below 50 ms fall in (30, 50].\n")
    return "\n".join(out)


def section_saturation(sat):
    one, many, mixed_delay, mixed_primes = sat["c1"], sat["c50"], sat["delay"], sat["primes"]
    x = many["rps"]
    svc = 1000.0 / x if x else None
    little = 50 / x * 1000 if x else None
    row = lambda name, c, r, lag=True: (
        f"| {name} | {c} | {r['requests']} | {r['rps']:.1f} | {r['mean_ms']:.2f} | "
        f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['max_ms']:.2f} | "
        f"{fmt(r.get('lag_max_ms'), 1) if lag else ''} |")
    out = ["## 3. Saturation: the server as the bottleneck\n",
           f"`/primes?below={sat['below']}` counts primes by trial division, synchronously on the "
           f"server's only event loop. Runs: alone at 1 and 50 connections, then `/delay/50` at 10 "
           f"connections measured by a second wrk while the first keeps 50 `/primes` connections "
           f"busy.\n",
           "| run | c | requests | req/s | mean ms | p50 ms | p99 ms | max ms | server lag max ms |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
           row("`/primes` alone", 1, one),
           row("`/primes` alone", 50, many),
           row("`/primes` beside `/delay/50`", 50, mixed_primes, lag=False),
           row("`/delay/50` beside `/primes`", 10, mixed_delay),
           ""]
    out.append(
        f"At 50 connections the loop is the bottleneck: {x:.1f} req/s, i.e. {fmt(svc)} ms of "
        f"loop time per request (alone, one request took {one['mean_ms']:.2f} ms as seen by wrk; "
        f"a gap between the two means the server's CPU was shared with something else during one "
        f"of the runs). The latency is now queueing: Little's law gives mean latency = "
        f"connections / throughput = 50 / {x:.1f} = {fmt(little, 0)} ms; wrk measured a mean of "
        f"{many['mean_ms']:.0f} ms (p50 {many['p50_ms']:.0f}). Doubling the connections would "
        f"double it at the same req/s: under saturation a closed-model tool's latency describes "
        f"its own connection count, not the server's speed.\n")
    h = mixed_delay.get("histogram") or {}
    server_mean = h.get("mean_ms")
    turn = 50 * svc if svc else None
    out.append(
        f"`/delay/50` beside the saturating load: {mixed_delay['requests']} answers, mean "
        f"{mixed_delay['mean_ms']:.0f} ms, p50 {mixed_delay['p50_ms']:.0f} ms instead of 50. The "
        f"timer is exact, but one turn of the event loop runs the handler of every connection "
        f"that has a request ready — up to 50 `/primes` computations, about {fmt(turn, 0)} ms — "
        f"and a `/delay` request needs several turns: one to read it, one for the timer's "
        f"wake-up and the write. "
        + (f"The server's own histogram gives these requests a mean of {server_mean:.0f} ms "
           f"against wrk's {mixed_delay['mean_ms']:.0f} ms: its clock starts when the handler "
           f"gets the parsed request, so the time the request waited in the socket to be read is "
           f"invisible to it and only the client sees it. " if server_mean else "")
        + "A tool that reported about 50 ms here would be wrong; the excess is the server's "
        "queueing, and both wrk and the event-loop lag (last column) show it.\n")
    return "\n".join(out)


def open_p99_truth(stalls, seconds):
    """x with sum(max(0, s - x)) = 1% of the run: the p99 an open model must see
    when stalls of these lengths (seconds) are the only delay; ms, or None."""
    budget = 0.01 * seconds
    if sum(stalls) <= budget:
        return None
    lo, hi = 0.0, max(stalls)
    for _ in range(60):
        mid = (lo + hi) / 2
        if sum(max(0.0, s - mid) for s in stalls) > budget:
            lo = mid
        else:
            hi = mid
    return lo * 1000


def section_co(co, args):
    by_run = co["stalls"]
    stalls = [x for run in by_run.values() for x in run]
    s_ms = (sum(stalls) / len(stalls) * 1000) if stalls else 0.0
    every_ms = args.stall_every * 1000
    frac = s_ms / every_ms if every_ms else 0
    truths = {name: open_p99_truth(run, args.seconds) for name, run in by_run.items()}
    expected_open_p99 = truths.get("open")
    wrk_c, raw_c, open_ = co["wrk"], co["closed"], co["open"]
    out = ["## 4. Coordinated omission\n",
           f"Route `/delay/0` (answers at once) while a separate client sends "
           f"`/primes?below={args.stall_below}` every {args.stall_every:g} s"
           + (f" (sized to take about {args.stall_ms:g} ms just before)" if args.stall_sized
              else "") + ": each blocks the "
           f"server's loop for {s_ms:.0f} ms on average (client-measured; "
           + "; ".join(f"{name} run: {', '.join(f'{x * 1000:.0f}' for x in run)} ms"
                       for name, run in by_run.items())
           + f"). So for about {frac * 100:.0f}% of the time nothing is answered.\n",
           f"Truth for an open model: a request arriving during a stall waits for the rest of it "
           f"(uniform 0..{s_ms:.0f} ms), so P(latency > x) ≈ {frac:.2f} · (1 − x / {s_ms:.0f}) "
           f"and p99 ≈ S − 0.01 · period; with the open run's own stalls "
           f"(Σ max(0, sᵢ − x) = 0.01 · {args.seconds} s) that is "
           + (f"{expected_open_p99:.0f} ms." if expected_open_p99 else
              "below the stall-free latency (stalls too rare to reach p99).")
           + (" The stalls took more than half of the time, so the backlog of one stall is still "
              "being served when the next begins; the formula then understates the open model's "
              "p99 (the machine was busier than the stall was sized for)." if frac > 0.5 else "")
           + "\n",
           "| model | tool | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | answers ≥ "
           f"{args.slow_ms:g} ms | open-model p99 for this run's stalls |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
           f"| closed, c={args.co_connections} | wrk (with its `stats_correct`) | "
           f"{wrk_c['requests']} | {wrk_c['rps']:.0f} | {wrk_c['p50_ms']:.3f} | "
           f"{wrk_c['p90_ms']:.3f} | {wrk_c['p99_ms']:.3f} | {wrk_c['max_ms']:.1f} | n/a | "
           f"{fmt(truths['wrk'], 0)} |",
           f"| closed, c={args.co_connections} | openload.py `--closed` (raw samples) | "
           f"{raw_c['ok']} | {raw_c['achieved_rps']:.0f} | {raw_c['p50_ms']:.3f} | "
           f"{raw_c['p90_ms']:.3f} | {raw_c['p99_ms']:.3f} | {raw_c['max_ms']:.1f} | "
           f"{raw_c['slow']} ({raw_c['slow'] / max(raw_c['ok'], 1) * 100:.2f}%) | "
           f"{fmt(truths['closed'], 0)} |",
           f"| open, {args.open_rate:g}/s | openload.py `--rate`, from the intended send | "
           f"{open_['ok']} | {open_['achieved_rps']:.0f} | {open_['p50_ms']:.3f} | "
           f"{open_['p90_ms']:.3f} | {open_['p99_ms']:.3f} | {open_['max_ms']:.1f} | "
           f"{open_['slow']} ({open_['slow'] / max(open_['ok'], 1) * 100:.2f}%) | "
           f"{fmt(truths['open'], 0)} |",
           f"| open, {args.open_rate:g}/s | the same requests, from the actual send | "
           f"{open_['ok']} | | {open_['service_p50_ms']:.3f} | | {open_['service_p99_ms']:.3f} "
           f"| | | |",
           "",
           "Stall lengths vary from run to run (the server's CPU is shared with the rest of the "
           "machine), so each run is compared with the p99 an open model would see for its own "
           "stalls (last column).\n"]
    closed_p99 = raw_c["p99_ms"]
    interval = 1000 * args.co_connections / max(wrk_c["rps"], 1)
    out.append(f"**coordinated omission: closed-model p99 {closed_p99:.1f} ms vs open-model p99 "
               f"{open_['p99_ms']:.1f} ms** (wrk's closed-model p99 after its own correction: "
               f"{wrk_c['p99_ms']:.1f} ms"
               + (f"; expected open-model p99 ≈ {expected_open_p99:.0f} ms" if expected_open_p99
                  else "") + ").\n")
    slow_share = raw_c["slow"] / max(raw_c["ok"], 1)
    out.append(
        f"The closed model sends a request only after the previous answer: during a stall each "
        f"of its {args.co_connections} connections records one slow sample and then sends "
        f"nothing, while between stalls it records fast ones as quickly as it can — "
        f"{raw_c['slow']} of its {raw_c['ok']} samples "
        f"({slow_share * 100:.2f}%) show a stall, so its p99 "
        f"{'hides them' if slow_share < 0.01 else 'catches only the tail of them'}. "
        f"The open model keeps sending at {args.open_rate:g}/s; every request due "
        f"during a stall waits, and {open_['slow'] / max(open_['ok'], 1) * 100:.1f}% of its "
        f"samples are ≥ {args.slow_ms:g} ms, as a population of users arriving at that rate "
        f"would see. Measured from the actual send instead of the intended one, the open "
        f"model's p99 is {open_['service_p99_ms']:.1f} ms. "
        + (f"The generator kept its schedule (start lag p99 {open_['send_lag_p99_ms']:.1f} ms, "
           f"max {open_['send_lag_max_ms']:.1f} ms) by opening connections "
           f"({open_['connections']} at most): requests went out on time and waited in the "
           f"server's socket queues.\n"
           if open_["send_lag_max_ms"] < 0.2 * max(s_ms, 1) else
           f"The generator itself fell behind its schedule (start lag p99 "
           f"{open_['send_lag_p99_ms']:.1f} ms, max {open_['send_lag_max_ms']:.1f} ms, "
           f"{open_['connections']} connections at most): that lag is counted in its latencies "
           f"(they are measured from the intended time), so its figures are if anything "
           f"pessimistic; a lower --open-rate or a less busy CPU 0 tightens them.\n"))
    out.append(
        f"wrk 4 corrects after the fact: every sample longer than twice the mean interval "
        f"between a connection's requests is replayed at that interval below itself (the "
        f"requests the connection would have sent). With a mean interval of "
        f"{interval:.2f} ms here, each stall sample of {s_ms:.0f} ms stands for about "
        f"{s_ms / max(interval, 1e-9):.0f}, which is why wrk's p99 ({wrk_c['p99_ms']:.1f} ms) is "
        + ("close to what an open model would see for the stalls of its run "
           f"({fmt(truths.get('wrk'), 0)} ms)"
           if truths.get("wrk") and abs(wrk_c["p99_ms"] - truths["wrk"]) < 0.25 * truths["wrk"]
           else "not the raw closed model's: it moved towards an open model's, here to "
           f"{wrk_c['p99_ms']:.0f} ms against {fmt(truths.get('wrk'), 0)} ms expected for its "
           "stalls") +
        ". The correction assumes the mean rate is the intended rate; it is an estimate, not a "
        "measurement, and wrk's req/s still counts only what it sent. For latency at a given "
        "load, use an open-model tool that measures from the intended send time (wrk2 `-R`, "
        "k6 `constant-arrival-rate` as in `loadtests/k6/notes-open.js`, or openload.py).\n")
    h = open_.get("histogram") or {}
    if h.get("count"):
        out.append(f"The server's own histogram over the open-model run: {h['count']} requests, "
                   f"mean {h['mean_ms']:.2f} ms, {share_between(h, 0.1, math.inf) * 100:.1f}% over "
                   f"100 ms, against the client's mean {open_['mean_ms']:.2f} ms. Requests that "
                   f"arrived during a stall were read only after it, so the server timed them as "
                   f"fast: a server-side histogram is blind to its own accept queue, like a closed "
                   f"model (event-loop lag max over the run: "
                   f"{fmt(open_.get('lag_max_ms'), 0)} ms, which does show the stalls).\n")
    return "\n".join(out)


def parse_args():
    """The options; (parser, args), the parser for the errors main() still finds."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--base-url", help="a running target; default: start build/notesd")
    p.add_argument("--metrics-url", help="its /metrics (default with a started notesd: its own)")
    p.add_argument("--notesd", default=os.path.join(REPO, "build", "notesd"))
    p.add_argument("--db-url", default="postgresql://calibrate@127.0.0.1:9/unused",
                   help="DB_URL for the started notesd (never connected to by these routes)")
    p.add_argument("--port", type=int, default=18220)
    p.add_argument("--metrics-port", type=int, default=19220)
    p.add_argument("--seconds", type=int, default=5, help="length of each run (1..30)")
    p.add_argument("--primes-below", type=int, default=100000,
                   help="the saturation route's ?below= (default 100000)")
    p.add_argument("--stall-ms", type=float, default=250.0,
                   help="target length of one stall; --stall-below is sized to it (default 250)")
    p.add_argument("--stall-below", type=int,
                   help="?below= of the stalling /primes request (default: sized to --stall-ms)")
    p.add_argument("--stall-every", type=float, default=1.0, help="seconds between stalls")
    p.add_argument("--co-connections", type=int, default=10)
    p.add_argument("--open-rate", type=float, default=250.0,
                   help="requests per second of the open model (default 250)")
    p.add_argument("--slow-ms", type=float, default=100.0)
    p.add_argument("--samples", type=int, default=20, help="Server-Timing samples")
    p.add_argument("--wrk", help="path of wrk (default: from PATH)")
    p.add_argument("--out", help="also write the Markdown report here")
    p.add_argument("--json", help="write the raw figures here")
    p.add_argument("--ws", help="the WebSocket column alone: 'all' or a comma list of tools "
                   "with a loadlib/tools/ws_* adapter (k6, artillery, tsung)")
    p.add_argument("--tools", help="the conformance matrix instead: 'all' or a comma list of "
                   "load tools (loadlib/tools adapters)")
    p.add_argument("--smoke", action="store_true",
                   help="with --tools: the counts check only, about 2 s per tool")
    args = p.parse_args()
    if args.ws and args.tools:
        p.error("--ws runs the WebSocket column alone; --tools adds it to the matrix")
    if args.smoke and not args.tools:
        p.error("--smoke goes with --tools")
    if args.tools and args.base_url:
        p.error("--tools starts its own notesd (it needs TLS and h2c variants); drop --base-url")
    if not 1 <= args.seconds <= 30:
        p.error("--seconds must be in 1..30")
    if args.stall_every < 0.2:
        p.error("--stall-every must be at least 0.2")

    return p, args


log = logger("calibrate")


# Each experiment below runs one section's measurements and returns its raw
# figures; the section_*() functions above turn them into the report's text.
# A new section is one more pair, called from main() in report order.

def measure_delay(runner):
    """Section 1: wrk against /delay/50 at every (jitter, connections) of DELAY_ROWS."""
    runs = []
    for jitter, c in DELAY_ROWS:
        path = "/delay/50" + (f"?jitter={jitter}" if jitter else "")
        log(f"wrk -c{c} {path}")
        runs.append(runner.wrk_run(path, c))
    return runs


def measure_server_view(args):
    """Section 2: Server-Timing of sequential requests (the histogram comes with section 1's runs)."""
    log("Server-Timing samples")
    return srv.server_timing_samples(args.base_url, "/delay/50", args.samples)


def measure_saturation(runner, args):
    """Section 3: /primes at c=1 and c=50, then /delay/50 while /primes saturates the loop."""
    below = args.primes_below
    log(f"saturation: /primes?below={below} at c=1 and c=50")
    sat = {"below": below,
           "c1": runner.wrk_run(f"/primes?below={below}", 1, max(2, args.seconds // 2)),
           "c50": runner.wrk_run(f"/primes?below={below}", 50)}
    log("saturation: /delay/50 c=10 while /primes c=50")
    before = scrape(args.metrics_url)
    primes = runner.wrk_start(f"/primes?below={below}", 50, args.seconds + 1)
    time.sleep(0.5)
    sat["delay"] = runner.wrk_run("/delay/50", 10)
    out, _ = primes.communicate(timeout=args.seconds + 60)
    sat["primes"] = runner.parse(out, "WRK_JSON")
    sat["delay"]["histogram"] = histogram_delta(before, scrape(args.metrics_url))
    return sat


def measure_co(runner, args):
    """Section 4: /delay/0 under periodic stalls, by wrk, a raw closed model and an open model."""
    args.stall_sized = not args.stall_below
    if args.stall_sized:
        log(f"sizing the stall to about {args.stall_ms:g} ms")
        args.stall_below = size_stall(args.base_url, args.stall_ms)
    co = {}
    for name in ("wrk", "closed", "open"):
        log(f"coordinated omission: {name}")
        staller = Staller(args.base_url, args.stall_below, args.stall_every, args.seconds)
        staller.start()
        try:
            if name == "wrk":
                co[name] = runner.wrk_run("/delay/0", args.co_connections)
            elif name == "closed":
                co[name] = runner.openload("/delay/0", args.seconds,
                                           closed=args.co_connections, slow_ms=args.slow_ms)
            else:
                co[name] = runner.openload("/delay/0", args.seconds, rate=args.open_rate,
                                           slow_ms=args.slow_ms)
        finally:
            staller.stop()
        co.setdefault("stalls", {})[name] = staller.stalls
        time.sleep(0.3)
    return co


def start_target(p, args, runner):
    """Fills in args.base_url and args.metrics_url: a given target, refused unless on
    loopback, or a notesd started here, which is returned so that main() stops it."""
    server = None
    if args.base_url:
        host = urllib.parse.urlsplit(args.base_url).hostname or ""
        if not is_loopback(host):
            p.error("calibrate loads only loopback targets")
        args.base_url = args.base_url.rstrip("/")
    else:
        if not os.access(args.notesd, os.X_OK):
            p.error(f"{args.notesd} is not built (server/build.sh), or pass --base-url")
        server = start_notesd(args, runner.pin)
        args.base_url = f"http://127.0.0.1:{args.port}"
        args.metrics_url = args.metrics_url or f"http://127.0.0.1:{args.metrics_port}/metrics"
    if args.metrics_url and not is_loopback(urllib.parse.urlsplit(args.metrics_url).hostname or ""):
        p.error("--metrics-url must be on a loopback address")
    return server


def main_matrix(p, args):
    """--tools: the conformance matrix, its scorecard on stdout and in
    loadtests/results/calibrate-<UTC time>/ (and --out, --json)."""
    if not os.access(args.notesd, os.X_OK):
        p.error(f"{args.notesd} is not built (server/build.sh)")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    ws_only, tools = calibrate_ws.split(tools)
    try:
        calibrate_matrix.selected(tools)
    except ValueError as e:
        p.error(str(e))
    data = calibrate_matrix.run_matrix(tools, args.notesd, smoke=args.smoke)
    calibrate_ws.attach(data, ws_only + tools, args.notesd, args.smoke)
    outdir = os.path.join(LOADTESTS, "results", "calibrate-" + data["started"].replace(":", ""))
    print(calibrate_ws.append(calibrate_scorecard.write(data, outdir, args.out, args.json), data,
                              outdir, args.out))
    log(f"scorecard in {outdir}")
    return 0


def main():
    p, args = parse_args()
    if args.ws:
        return calibrate_ws.main_ws(args, os.path.join(LOADTESTS, "results"))
    if args.tools:
        return main_matrix(p, args)
    runner = Runner(args)
    server = start_target(p, args, runner)

    raw = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    header = machine_line(runner, args, server is not None)
    t0 = time.monotonic()
    try:
        delay_runs = measure_delay(runner)
        samples = measure_server_view(args)
        sat = measure_saturation(runner, args)
        co = measure_co(runner, args)
    finally:
        if server:
            server.stop()

    raw.update(delay=[dict(r, jitter=j) for (j, _), r in zip(DELAY_ROWS, delay_runs)],
               server_timing=samples, saturation=sat, coordinated_omission=co,
               seconds_total=round(time.monotonic() - t0, 1))
    report = "\n".join([
        "# Load-tool calibration against notesd\n",
        header,
        section_delay(delay_runs, DELAY_ROWS),
        section_server_view(samples, delay_runs, DELAY_ROWS),
        section_saturation(sat),
        section_co(co, args),
        f"_{raw['started']}, {raw['seconds_total']} s of runs; load average at the end "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}._\n"])
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=2, default=str)
            f.write("\n")
    return 0
