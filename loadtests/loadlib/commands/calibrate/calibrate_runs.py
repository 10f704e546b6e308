"""calibrate's measurements (the sections of the report without --tools): one
measure_*() per section, each returning that section's raw figures, which
calibrate_command.py keeps in the JSON and calibrate_report.py turns into text. Under
them the load: wrk and openload.py runs pinned to CPU 0 with a metrics scrape on
each side (Runner), the periodic /primes request that stalls the server's loop
(Staller), and the stall sized to a length on this server now (size_stall()).
"""
import os
import subprocess
import sys
import threading
import time
import urllib.parse

from loadlib import httpc, procs, prom, server as srv
from loadlib.report import logger
from loadlib.paths import LOADTESTS
from loadlib.tools import wrk
from loadlib.tools.base import RunSpec
from loadlib.tools.run import run_measured

OPENLOAD = os.path.join(LOADTESTS, "calibration", "openload.py")
DELAY_PATH = "/delay/:ms"
SETTLE = 0.3  # seconds between the end of a run and its closing scrape
DELAY_ROWS = [(0, 1), (0, 10), (0, 50), (20, 10), (20, 50)]  # (jitter, connections) of section 1

log = logger("calibrate")


# ------------------------------------------------------------------ metrics

def histogram_delta(before, after, path=DELAY_PATH):
    """count, mean_ms and cumulative buckets of http_request_duration_seconds for one
    route (all methods and statuses) between two scrapes."""
    return prom.histogram_summary(before, after, "http_request_duration_seconds",
                                  lambda labels: labels.get("path") == path)


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
        before = prom.scrape(self.args.metrics_url)
        proc = run_measured(self.wrk_cmd(path, connections, seconds), timeout=seconds + 60)
        time.sleep(SETTLE)  # requests in flight when wrk stopped still finish on the server
        after = prom.scrape(self.args.metrics_url)
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
        before = prom.scrape(self.args.metrics_url)
        proc = run_measured(self.pinned(cmd), timeout=seconds + 60)
        time.sleep(SETTLE)
        after = prom.scrape(self.args.metrics_url)
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


# ------------------------------------------------------------------ the sections

# One measure_*(runner, args) per section of the report, in report order: each runs
# that section's measurements and returns its raw figures, which calibrate_command.py keeps
# under the section's key of the JSON; calibrate_report.py's section_*() turn them into
# text. A new section is one more pair, called from calibrate_command.py's run_sections() and
# sections_markdown().

def measure_delay(runner, args):
    """Section 1: wrk against /delay/50 at every (jitter, connections) of DELAY_ROWS;
    each run with its jitter (its connections and path are wrk_run()'s)."""
    runs = []
    for jitter, c in DELAY_ROWS:
        path = "/delay/50" + (f"?jitter={jitter}" if jitter else "")
        log(f"wrk -c{c} {path}")
        runs.append(dict(runner.wrk_run(path, c), jitter=jitter))
    return runs


def measure_server_view(runner, args):
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
    before = prom.scrape(args.metrics_url)
    primes = runner.wrk_start(f"/primes?below={below}", 50, args.seconds + 1)
    time.sleep(0.5)
    sat["delay"] = runner.wrk_run("/delay/50", 10)
    out, _ = primes.communicate(timeout=args.seconds + 60)
    sat["primes"] = runner.parse(out, "WRK_JSON")
    sat["delay"]["histogram"] = histogram_delta(before, prom.scrape(args.metrics_url))
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
