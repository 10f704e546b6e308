"""calibrate --tools: the load-tool conformance matrix, the runs and the verdicts.

Every load tool with an adapter in loadlib/tools runs the same fixed experiments
against a notesd started here (pinned to CPU 1; the tool to CPU 0), and each
experiment is judged against a truth the tool cannot influence: the server's own
counters or a latency distribution the server draws itself. One record per check,
with a verdict (PASS, WARN, FAIL; SKIP when the server lacks what the check needs),
the measured error, and the evidence that says whose figure is right.

 1. counts       GET /json, c=10: the tool's completed requests against the delta
                 of http_requests_total. The server counts every response it sent;
                 the tool may miss at most the requests in flight when it stopped.
 2. latency      GET /delay/50?jitter=10, c=10: p50/p90/p99 against the exact
                 distribution (uniform on [40, 60] ms: 50 / 58 / 59.8 ms).
 3. errors       GET /fault/503?every=4: the server fails exactly every 4th request;
                 the tool's error count against the server's 503 count.
 4. connections  the counts run's notes_http_connections_accepted_total delta against
                 the c connections a keep-alive tool needs.
 5. overhead     GET /json, c=100: req/s, the tool's CPU per request (its cpu_s) and
                 notesd's (process_cpu_seconds_total), and which core was busier.
 6. omission     GET /delay/0 while the server stalls its loop (GET /stall): does the
                 tool's p99 show the stalls or hide them (coordinated omission)?
 7. protocols    the counts and latency checks again over HTTP/2 with TLS and h2c, for
                 the tools that speak HTTP/2.

This module runs and judges (run_matrix() returns plain data); the Markdown, JSON
and SVG scorecard is calibrate_scorecard.py. Thresholds are the constants below,
each with the reason for its value.
"""
import dataclasses
import os
import subprocess
import tempfile
import threading
import time

from loadlib import httpc, procs, prom, server as srv
from loadlib.report import logger
from loadlib.server import REPO, free_port
from loadlib.tools import run as toolrun
from loadlib.tools.base import RunSpec

PASS, WARN, FAIL, SKIP = "PASS", "WARN", "FAIL", "SKIP"
CHECKS = ("counts", "latency", "errors", "connections", "overhead", "omission")
SMOKE_CHECKS = ("counts",)

# ------------------------------------------------------------------ the runs

# Seconds per run. The latency run needs about a thousand samples for its p99 to be
# stable to ~0.1 ms (10 connections x 20 answers/s x 5 s); the stall run needs several
# stalls (one per OMISSION_EVERY_MS). With tool start-up (artillery takes seconds)
# this puts `--tools all` at 6-7.5 minutes on this machine, inside the 15-minute budget.
SECONDS = {"counts": 3, "latency": 5, "errors": 3, "overhead": 5, "omission": 6}
SMOKE_SECONDS = 2
CONNECTIONS = {"counts": 10, "latency": 10, "errors": 10, "overhead": 100, "omission": 10}
SMOKE_CONNECTIONS = 4
PATHS = {"counts": "/json", "latency": "/delay/50?jitter=10", "errors": "/fault/503?every=4",
         "overhead": "/json", "omission": "/delay/0"}
# the route label http_requests_total uses for each path (http_request_duration_seconds too)
LABELS = {"/json": "/json", "/delay/50?jitter=10": "/delay/:ms", "/delay/0": "/delay/:ms"}
# Tools that run a count, not a duration (httperf, curl): a count sized to about the
# duration at a rate each reaches on this machine.
# The stall run's count is larger: a closed count tool that finished within the first
# stall or two would be judged on too few of them (curl reaches 5,000-12,000/s there).
COUNT_RPS = {"counts": 1500, "latency": 200, "errors": 1500, "overhead": 4000, "omission": 6000}
SETTLE_S = 0.3          # after a run, before the closing scrape: in-flight requests land
# Artillery needs 5-25 s to start on this machine (more when the cores are shared), on top
# of its run: a run is stopped only when it outlives its length by this much more.
TOOL_START_S = 90
STALL_POLL_S = 0.02     # how often the omission run looks for the tool's first request

# The truth of the latency check: /delay/50?jitter=10 is uniform on [40, 60] ms, so the
# q-th percentile is 40 + 20q.
LATENCY_TRUTH = {"p50": 50.0, "p90": 58.0, "p99": 59.8}
# PASS within 2 ms: the timer answers within ~0.1 ms of its deadline on an idle loop,
# loopback and the kernel add ~0.5 ms, and several tools round to whole ms (1 ms).
# WARN up to 10 ms: the tool's own time shows (a shared CPU, a garbage collector),
# but the figure still tells 50 from 60. FAIL beyond: the tool's tail is its own.
LATENCY_PASS_MS = 2.0
LATENCY_WARN_MS = 10.0
# A latency run in which the server itself answered late on average (its own mean over
# 50 + this) measured the machine's other work, not the tool: it is run once more and
# the run where the server kept closer to its schedule is judged (both are in the JSON).
LATENCY_SERVER_LATE_MS = 1.0

# Connections: a keep-alive tool opens its c connections once. PASS up to c + 2 (a
# tool may open one probe or spare connection), WARN up to 2c (reconnects now and
# then), FAIL beyond (it reconnects per request or ignores keep-alive).
CONN_SPARE = 2

# Overhead: the side whose process used more of its pinned core was the bottleneck,
# unless neither used half of it while a core was 90% busy: then other work on the
# machine set the pace (the cores are shared), and the verdict says so.
OVERHEAD_MIN_SHARE = 0.5
OVERHEAD_FULL_CORE = 0.9

# Coordinated omission: the server pauses its loop OMISSION_STALL_MS every
# OMISSION_EVERY_MS while the tool runs. 200 ms of every 1000 is a 20% share: an open
# model sees p90 ~ 100 ms and p99 ~ 190 ms above the stall-free latency, far from a
# closed model's p99 of a millisecond or two. Rate-driven tools run at OMISSION_RATE/s
# with 10 connections (50 ms between one connection's requests, a quarter of a stall).
OMISSION_STALL_MS = 200
OMISSION_EVERY_MS = 1000
OMISSION_RATE = 200.0
# A tool "shows" the stalls when its p99 reaches half the open model's extra delay at
# p99 (far above a closed model's, far below the truth's sampling noise); its max
# shows a stall when it reaches 80% of the stall's length.
OMISSION_SHOW_SHARE = 0.5
OMISSION_MAX_SHARE = 0.8
# The adapters that turn RunSpec.rate into the tool's own rate option (see each
# adapter's docstring); the others (ab, h2load, siege, wrk, curl) have none.
RATE_OPTIONS = {"hey": "-q per worker", "httperf": "--rate (a connection per request)",
                "locust": "constant_throughput per user",
                "locust-distributed": "constant_throughput per user", "autocannon": "-R",
                "artillery": "arrivalRate", "loadtest": "requestsPerSecond",
                "k6": "constant-arrival-rate"}

# Protocols: the tools whose adapters speak HTTP/2, and over what ("tls": h2 by ALPN on
# the TLS port; "h2c": prior knowledge on the cleartext port).
HTTP2_TOOLS = {"h2load": ("tls", "h2c"), "curl": ("tls", "h2c"), "hey": ("tls",),
               "k6": ("tls",)}
PROTOCOL_SECONDS = {"counts": 3, "latency": 4}


# ------------------------------------------------------------------ the server

class Target:
    """A notesd for the matrix on free loopback ports, pinned to CPU 1 when the machine
    allows, without a database (the routes used never query one; DB_URL only has to
    parse), with Server-Timing on. extra: more flags (TLS, h2c). stop() ends it."""

    def __init__(self, notesd, pin, extra=()):
        self.port, self.metrics_port = free_port(), free_port()
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        env = dict(os.environ, DB_URL="postgresql://calibrate@127.0.0.1:9/unused",
                   LOG_LEVEL="warn", SERVER_TIMING="1")
        argv = [os.path.abspath(notesd), "--host", "127.0.0.1", "--port", str(self.port), "--metrics-host",
                "127.0.0.1", "--metrics-port", str(self.metrics_port), *extra]
        log_path = tempfile.mktemp(prefix="calibrate-matrix-notesd-", suffix=".log")
        self.process = srv.ProcessUnderTest(argv, env, REPO, log_path, port=self.port,
                                            cpus=1 if pin else None, taskset=True, tied=True,
                                            temporary_log=True)
        self.process.start()
        try:
            self.process.wait_ready(limit_s=15, poll_s=0.05)
        except srv.NotReady as e:
            text = self.process.log_text().strip()
            self.stop()
            raise RuntimeError(f"notesd {e}: {text}") from None

    def url(self, path, scheme="http", port=None):
        return f"{scheme}://127.0.0.1:{port or self.port}{path}"

    def scrape(self):
        return prom.scrape(self.metrics_url)

    def get(self, path):
        """(status, body) of one GET on the API port."""
        status, _, body = httpc.request(self.port, path, timeout=5)
        return status, body.decode("utf-8", "replace")

    def stop(self):
        self.process.stop(10)


def server_features(notesd, target):
    """What the started server offers of the fixture API: {feature: bool}. Routes are
    probed with a request they must refuse (400 when the route exists, 404 when not),
    counters read from /metrics, options from --help."""
    helptext = subprocess.run([notesd, "--help"], capture_output=True, text=True).stdout
    samples = target.scrape() or []
    names = {n for n, _, _ in samples}
    return {
        "fault": target.get("/fault/503?every=0")[0] != 404,
        "stall": target.get("/stall?ms=0")[0] != 404,
        "connections_counter": "notes_http_connections_accepted_total" in names,
        "stall_counters": "notes_stalls_total" in names,
        "tls": "--tls-port" in helptext,
        "h2c": "--h2c" in helptext,
    }


LACKS = {"fault": "the /fault route", "stall": "the /stall route",
         "connections_counter": "notes_http_connections_accepted_total",
         "stall_counters": "notes_stalls_total", "tls": "--tls-port", "h2c": "--h2c"}


def lacking(features, *needed):
    """'SKIP (server lacks …)' text for the features missing, or None."""
    missing = [LACKS[f] for f in needed if not features.get(f)]
    return f"server lacks {', '.join(missing)}" if missing else None


def server_view(before, after, label):
    """The server's side of one run: requests (all but /stall's) and 503s, connections
    accepted, CPU seconds, stalls, and its own latency mean for the route `label`."""
    if before is None or after is None:
        return {}
    reqs = prom.deltas(before, after, "http_requests_total")
    view = {"requests": 0, "status_503": 0, "by_status": {}}
    for key, v in reqs.items():
        labels = dict(key)
        if labels.get("path") == "/stall":
            continue
        view["requests"] += int(v)
        status = labels.get("status_code", "")
        view["by_status"][status] = view["by_status"].get(status, 0) + int(v)
        if status == "503":
            view["status_503"] += int(v)

    def delta(name):
        a, b = prom.value(after, name), prom.value(before, name)
        return None if a is None or b is None else a - b

    accepted = delta("notes_http_connections_accepted_total")
    view["connections_accepted"] = None if accepted is None else int(accepted)
    view["cpu_s"] = delta("process_cpu_seconds_total")
    stalls = delta("notes_stalls_total")
    view["stalls"] = None if stalls is None else int(stalls)
    view["stall_s"] = delta("notes_stall_seconds_total")
    hist = prom.histogram_summary(before, after, "http_request_duration_seconds",
                                  lambda labels: labels.get("path") == label) or {}
    view["mean_ms"] = hist.get("mean_ms")
    return view


# ------------------------------------------------------------------ one run

def spec_for(adapter, url, connections, seconds, rate=None, http2=False, count_rps=1000):
    """The RunSpec of one run; a tool that runs only counts (its command() refuses a
    duration) gets a count sized to about `seconds` at `count_rps` (or at the rate)."""
    spec = RunSpec(url=url, connections=connections, duration_s=seconds, rate=rate,
                   http2=http2, timeout_s=10)
    with tempfile.TemporaryDirectory(prefix="calibrate-spec-") as scratch:
        try:
            adapter.command(spec, scratch)
        except ValueError:
            spec = dataclasses.replace(spec, requests=int((rate or count_rps) * seconds))
    return spec


def run_limit(spec):
    """Seconds a run may take before it is stopped: its length (a count at the rate
    COUNT_RPS assumed, or the duration) plus TOOL_START_S for the slowest start-up."""
    seconds = spec.duration_s or 0
    if spec.requests:
        seconds = max(seconds, spec.requests / (spec.rate or 200))
    return seconds + spec.timeout_s + TOOL_START_S


def measure(adapter, spec, target, label, during=None):
    """One tool run pinned to CPU 0 with a scrape on each side: {"spec", "result" (the
    ToolResult as a dict, None when the tool failed), "failure", "server", "wall_s"}.
    during(target, before): called in this thread while the tool runs (the stall run)."""
    before = target.scrape()
    cores_before = procs.cpu_times()
    t0 = time.monotonic()
    box = {}

    def go():
        try:
            box["result"] = toolrun.run_tool(adapter, spec, cpu=0 if procs.can_pin((0, 1))
                                             else None, timeout=run_limit(spec))
        except (toolrun.ToolFailed, ValueError, OSError) as e:
            box["failure"] = str(e)

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    if during:
        box["during"] = during(target, before, worker)
    worker.join()
    if during:
        # a tool that ran a count may end before the schedule: stalls after it would be
        # counted against it, and would hit the next run
        target.get("/stall?for_ms=0")
    wall = time.monotonic() - t0
    cores = procs.cpu_busy_delta(cores_before, procs.cpu_times(), wall)
    time.sleep(SETTLE_S)
    after = target.scrape()
    result = box.get("result")
    return {"spec": dataclasses.asdict(spec), "result": result.to_dict() if result else None,
            "failure": box.get("failure"), "server": server_view(before, after, label),
            "wall_s": round(wall, 3), "cores": cores, "during": box.get("during")}


def start_stalls(seconds):
    """The omission run's `during`: waits for the tool's first request to reach the
    server (tools take from milliseconds to seconds to start), then starts the stall
    schedule for the rest of the run. Returns what was asked, or why nothing was."""
    def during(target, before, worker):
        base = sum(v for k, v in prom.series(before or [], "http_requests_total").items()
                   if dict(k).get("path") != "/stall")
        first = None
        while worker.is_alive():
            now = target.scrape() or []
            seen = sum(v for k, v in prom.series(now, "http_requests_total").items()
                       if dict(k).get("path") != "/stall")
            if seen > base:
                first = time.monotonic()
                break
            time.sleep(STALL_POLL_S)
        if first is None:
            return {"asked": None, "why": "the tool sent nothing"}
        # the rest of the run, less the last stall's length so the tool sees it end
        for_ms = max(OMISSION_EVERY_MS, int(seconds * 1000 - OMISSION_STALL_MS))
        path = f"/stall?ms={OMISSION_STALL_MS}&every_ms={OMISSION_EVERY_MS}&for_ms={for_ms}"
        status, body = target.get(path)
        return {"asked": path, "status": status, "answer": body.strip()}
    return during


# ------------------------------------------------------------------ verdicts

def record(check, verdict, error, detail, evidence="", figures=None):
    return {"check": check, "verdict": verdict, "error": error, "detail": detail,
            "evidence": evidence, "figures": figures or {}}


def skipped(check, why):
    return record(check, SKIP, None, why)


def failed_run(check, run):
    return record(check, FAIL, None, f"the tool did not run: {run['failure']}")


def judge_counts(run, check="counts"):
    if run["result"] is None:
        return failed_run(check, run)
    res, server, c = run["result"], run["server"], run["spec"]["connections"]
    tool, seen = res["requests"], server.get("requests")
    if seen is None:
        return skipped(check, "no metrics scrape")
    diff = seen - tool
    figures = {"tool": tool, "server": seen, "difference": diff, "connections": c}
    if tool == 0:
        return record(check, FAIL, diff, "the tool counted no requests", "", figures)
    lost = {k: v for k, v in res["errors"].items() if v and k != "non2xx"}
    if lost:
        figures["failed"] = lost
        kinds = ", ".join(f"{v} {k}" for k, v in lost.items())
        return record(check, FAIL, diff, f"tool {tool}, server {seen}; {sum(lost.values())} "
                      f"requests failed without an answer ({kinds})",
                      f"the server's figure is right: it answered every request that reached it "
                      f"({seen}); the failures are the tool's own"
                      + ("; " + "; ".join(n for n in res.get("notes", []) if "known" in n)
                         if any("known" in n for n in res.get("notes", [])) else ""), figures)
    if 0 <= diff <= c:
        return record(check, PASS, diff,
                      f"tool {tool}, server {seen}: {diff} answered after the tool stopped "
                      f"counting (at most the {c} in flight)", "", figures)
    if diff < 0:
        evidence = (f"the server's figure is right: http_requests_total counts every response "
                    f"it wrote, and it wrote {seen}; the tool counted {-diff} it never got")
    else:
        evidence = (f"the server's figure is right: it answered {seen}; the tool dropped "
                    f"{diff - c} or more answers beyond the {c} it could have had in flight")
    return record(check, FAIL, diff, f"tool {tool}, server {seen}", evidence, figures)


def judge_latency(run, check="latency"):
    if run["result"] is None:
        return failed_run(check, run)
    lat, server = run["result"]["latency"], run["server"]
    errors = {q: (None if lat.get(q) is None else round(lat[q] - truth, 3))
              for q, truth in LATENCY_TRUTH.items()}
    figures = {"tool": {q: lat.get(q) for q in ("mean", "p50", "p90", "p99", "max")},
               "truth": LATENCY_TRUTH, "error_ms": errors, "server_mean_ms": server.get("mean_ms")}
    reported = {q: e for q, e in errors.items() if e is not None}
    missing = [q for q, e in errors.items() if e is None]
    text = ", ".join(f"{q} {lat[q]:.2f} ({e:+.2f})" for q, e in reported.items())
    if missing:
        text += ("; " if text else "") + ", ".join(missing) + " not reported"
    other = run.get("other_run")
    if other:
        text += (f" (of two runs, the one where the server kept closer to its schedule; in the "
                 f"other its mean was {other['server'].get('mean_ms') or 0:.2f} ms)")
    if not reported:
        mean = lat.get("mean")
        text += f"; mean {mean:.2f} ms against 50" if mean is not None else "; no mean either"
        return record(check, WARN, None, text, "", figures)
    worst = max(abs(e) for e in reported.values())
    verdict = PASS if worst <= LATENCY_PASS_MS else WARN if worst <= LATENCY_WARN_MS else FAIL
    evidence = ""
    smean = server.get("mean_ms")
    if verdict != PASS and smean is not None:
        cores = run.get("cores") or {}
        cpu0, cpu1 = (cores.get(c, {}).get("busy") for c in ("0", "1"))
        res = run["result"]
        share = res["cpu_s"] / run["wall_s"] if res.get("cpu_s") and run["wall_s"] else None
        late = smean - 50.0
        evidence = (f"the server kept to the distribution: its own mean over these requests "
                    f"(http_request_duration_seconds, the clock of Server-Timing's total) was "
                    f"{smean:.2f} ms against a true 50"
                    + (f" (it ran {late:.2f} ms late on average: CPU 1 was "
                       f"{(cpu1 or 0) * 100:.0f}% busy)" if late > 0.5 else "")
                    + f", so the tool's worst error of {worst:.1f} ms is time spent outside the "
                    f"server's handler: in the tool, the kernel, or waiting for CPU 0, which was "
                    f"{(cpu0 or 0) * 100:.0f}% busy during the run"
                    + (f" (the tool itself used {share * 100:.0f}% of it)" if share is not None
                       else ""))
    return record(check, verdict, round(worst, 3), text, evidence, figures)


def judge_errors(run):
    if run["result"] is None:
        return failed_run("errors", run)
    res, server, c = run["result"], run["server"], run["spec"]["connections"]
    tool_errors = sum(res["errors"].values())
    fails, total = server.get("status_503", 0), server.get("requests", 0)
    diff = tool_errors - fails
    figures = {"tool_errors": tool_errors, "tool_non2xx": res["errors"]["non2xx"],
               "server_503": fails, "server_requests": total,
               "server_share": round(fails / total, 4) if total else None}
    text = (f"tool {tool_errors} errors ({res['errors']['non2xx']} non-2xx), server {fails} "
            f"503s of {total} ({fails / total * 100 if total else 0:.1f}%)")
    if abs(diff) <= c and fails:
        return record("errors", PASS, diff, text, "", figures)
    if tool_errors == 0:
        evidence = (f"the server's figure is right: it sent {fails} 503s (every 4th request, by "
                    f"its own counter); the tool counted them as successes")
    elif diff > 0:
        evidence = (f"the server's figure is right: it sent {fails} 503s; the tool counted "
                    f"{diff} failures more than were sent")
    else:
        evidence = (f"the server's figure is right: it sent {fails} 503s; the tool missed "
                    f"{-diff} of them beyond the {c} in flight")
    return record("errors", FAIL, diff, text, evidence, figures)


def judge_connections(run):
    if run["result"] is None:
        return failed_run("connections", run)
    accepted = run["server"].get("connections_accepted")
    c, requests = run["spec"]["connections"], run["result"]["requests"]
    figures = {"accepted": accepted, "connections": c, "requests": requests}
    text = f"{accepted} connections accepted for {requests} requests at c={c}"
    if accepted <= c + CONN_SPARE:
        return record("connections", PASS, accepted - c, text, "", figures)
    per = requests / accepted if accepted else 0
    evidence = (f"notes_http_connections_accepted_total counts every accept(): the tool opened "
                f"{accepted} connections, one per {per:.1f} requests, where keep-alive needs {c}")
    verdict = WARN if accepted <= 2 * c else FAIL
    return record("connections", verdict, accepted - c, text, evidence, figures)


def judge_overhead(run):
    if run["result"] is None:
        return failed_run("overhead", run)
    res, server = run["result"], run["server"]
    seconds = res["duration_s"] or run["wall_s"]
    tool_us = res["cpu_s"] / res["requests"] * 1e6 if res["requests"] and res["cpu_s"] else None
    server_us = (server["cpu_s"] / server["requests"] * 1e6
                 if server.get("requests") and server.get("cpu_s") is not None else None)
    tool_busy = min(1.0, res["cpu_s"] / seconds) if seconds and res["cpu_s"] else None
    server_busy = (min(1.0, server["cpu_s"] / seconds) if seconds and
                   server.get("cpu_s") is not None else None)
    cores = run.get("cores") or {}
    core_busy = {cpu: cores.get(cpu, {}).get("busy") for cpu in ("0", "1")}
    figures = {"rps": res["rps"], "tool_cpu_us_per_request": tool_us,
               "server_cpu_us_per_request": server_us, "tool_core_busy": tool_busy,
               "server_core_busy": server_busy, "cpu0_busy": core_busy["0"],
               "cpu1_busy": core_busy["1"]}
    text = (f"{res['rps']:.0f} req/s; CPU per request: tool "
            f"{'n/a' if tool_us is None else f'{tool_us:.1f}'} µs, notesd "
            f"{'n/a' if server_us is None else f'{server_us:.1f}'} µs; busy: tool core "
            f"{'n/a' if tool_busy is None else f'{tool_busy * 100:.0f}%'}, notesd core "
            f"{'n/a' if server_busy is None else f'{server_busy * 100:.0f}%'}")
    shared = [f"CPU {cpu} {b * 100:.0f}%" for cpu, b in core_busy.items()
              if b is not None and b - (tool_busy if cpu == "0" else server_busy or 0) > 0.2]
    if shared and tool_busy is not None and server_busy is not None:
        text += (f" (whole cores over the run, start-up included: {', '.join(shared)}: other "
                 f"work shared them)")
    if tool_busy is None or server_busy is None:
        return record("overhead", WARN, None, text, "", figures)
    if max(tool_busy, server_busy) < OVERHEAD_MIN_SHARE and \
            max(b or 0 for b in core_busy.values()) >= OVERHEAD_FULL_CORE:
        figures["bottleneck"] = "other work"
        return record("overhead", WARN, None, text + " — neither: other work held the cores",
                      f"neither process used {OVERHEAD_MIN_SHARE * 100:.0f}% of its core while "
                      f"the cores were full: req/s describes the machine's load, not the tool "
                      f"or notesd; the CPU per request still compares", figures)
    if server_busy >= tool_busy:
        figures["bottleneck"] = "notesd"
        return record("overhead", PASS, None, text + " — notesd was the bottleneck",
                      "the tool's req/s is the server's ceiling", figures)
    figures["bottleneck"] = "tool"
    return record("overhead", WARN, None, text + " — the tool was the bottleneck",
                  f"the req/s is the tool's ceiling on one core, not notesd's: notesd needed "
                  f"{'n/a' if server_us is None else f'{server_us:.1f}'} µs per request and "
                  f"was idle {(1 - server_busy) * 100:.0f}% of the time", figures)


def omission_truth(stalls, stall_s, run_s, connections, requests):
    """What the stalls must do to latency (ms above the stall-free latency), from the
    stalls the server counted. Open model: a request due during a stall waits for the
    rest of it, so P(extra > x) = sum(max(0, s_i - x)) / run, i.e. x_q = s - (1 - q) *
    run / n for n stalls of s; mean extra = n s^2 / (2 run). Closed model: only the c
    requests in flight when a stall starts wait, c*n of the N requests."""
    s = stall_s / stalls * 1000
    run_ms = run_s * 1000
    x = lambda q: max(0.0, s - (1 - q) * run_ms / stalls)
    return {"stall_ms": round(s, 1), "stalls": stalls, "share": round(stalls * s / run_ms, 3),
            "open_p90_extra_ms": round(x(0.90), 1), "open_p99_extra_ms": round(x(0.99), 1),
            "open_mean_extra_ms": round(stalls * s * s / (2 * run_ms), 1),
            "closed_delayed_share": round(min(1.0, connections * stalls / requests), 5)
            if requests else None}


def judge_omission(run, tool):
    if run["result"] is None:
        return failed_run("omission", run)
    res, server = run["result"], run["server"]
    during = run.get("during") or {}
    if not server.get("stalls"):
        why = during.get("why") or f"the server counted no stall ({during.get('answer', '')})"
        return record("omission", FAIL, None, f"no stall during the run: {why}")
    rate = run["spec"].get("rate")
    truth = omission_truth(server["stalls"], server["stall_s"], res["duration_s"] or run["wall_s"],
                           run["spec"]["connections"], res["requests"])
    lat = res["latency"]
    base = lat.get("p50") or 0.0
    figures = {"truth": truth, "tool": lat, "rate": rate, "rate_option": RATE_OPTIONS.get(tool)}
    # judged on p90 and p99 where reported (a tool that loses its schedule may still
    # catch the 1% tail but not the 10%), on the mean where not
    if lat.get("p99") is not None:
        seen, want, what = lat["p99"] - base, truth["open_p99_extra_ms"], "p99"
        shows = seen >= OMISSION_SHOW_SHARE * want
        if lat.get("p90") is not None:
            shows = shows and lat["p90"] - base >= OMISSION_SHOW_SHARE * truth["open_p90_extra_ms"]
    elif lat.get("mean") is not None:
        seen, want, what = lat["mean"] - base, truth["open_mean_extra_ms"], "mean"
        shows = seen >= OMISSION_SHOW_SHARE * want
    else:
        return record("omission", WARN, None, "the tool reports no latency", "", figures)
    max_shows = None if lat.get("max") is None else \
        lat["max"] >= OMISSION_MAX_SHARE * truth["stall_ms"]
    error = round(seen - want, 1)
    p90 = (f"p90 {lat['p90']:.1f} ms against {base + truth['open_p90_extra_ms']:.1f}, "
           if what == "p99" and lat.get("p90") is not None else "")
    text = (p90 + f"{what} {base + seen:.1f} ms against {base + want:.1f} ms for an open model "
            f"({truth['stalls']} stalls of {truth['stall_ms']:.0f} ms, "
            f"{truth['share'] * 100:.0f}% of the run)"
            + (f"; max {lat['max']:.0f} ms" if lat.get("max") is not None else ""))
    closed_share = truth["closed_delayed_share"]
    if shows:
        how = (f"measured at {rate:g}/s with {RATE_OPTIONS[tool]}" if rate
               else "a closed model whose figures correct for the stalls" if tool == "wrk"
               else "closed, but slow enough that the stalls reach its tail")
        return record("omission", PASS, error, text + f": shows the stalls ({how})", "", figures)
    if rate:
        return record("omission", FAIL, error, text + ": hides the stalls, wholly or in part",
                      f"coordinated omission: asked for {rate:g}/s with "
                      f"{RATE_OPTIONS[tool]}, the tool waited for answers and timed each "
                      f"request from its actual send, not its intended one; the server's "
                      f"notes_stalls_total shows {truth['stalls']} stalls of "
                      f"{truth['stall_ms']:.0f} ms, which delay {truth['share'] * 100:.0f}% of "
                      f"an open schedule", figures)
    if max_shows is False:
        return record("omission", FAIL, error, text + ": neither p99 nor max shows them",
                      "the server counted the stalls; the tool's timing missed them", figures)
    return record("omission", WARN, error, text + f": its {what} hides the stalls (closed model)",
                  f"a closed model only delays the {run['spec']['connections']} requests in "
                  f"flight per stall: {closed_share * 100:.2f}% of its {res['requests']} "
                  f"requests, " + ("below" if closed_share < 0.01 else "about") +
                  " the 1% a p99 can see; " + ("its max shows the stall; " if max_shows else "")
                  + "read latency under stalls from an open-model tool", figures)


# ------------------------------------------------------------------ the matrix

log = logger("calibrate")


def selected(tools):
    """[(name, module or None, why)] of the tools asked for ("all" or names) in the
    order of toolrun.adapters(); unknown names raise ValueError."""
    every = toolrun.adapters()
    if tools == ["all"]:
        return every
    names = {name for name, _, _ in every}
    unknown = [t for t in tools if t not in names]
    if unknown:
        raise ValueError(f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    return [row for row in every if row[0] in tools]


def run_checks(name, adapter, target, features, smoke):
    """Every check of one tool against `target`: ({check: record}, {run: raw run})."""
    checks, runs = {}, {}
    seconds = lambda check: SMOKE_SECONDS if smoke else SECONDS[check]
    conns = lambda check: SMOKE_CONNECTIONS if smoke else CONNECTIONS[check]

    def go(check, path, rate=None, during=None, secs=None):
        spec = spec_for(adapter, target.url(path), conns(check), secs or seconds(check),
                        rate=rate, count_rps=COUNT_RPS[check])
        log(f"{name}: {check} ({path}, c={spec.connections}"
            + (f", {rate:g}/s" if rate else "") + ")")
        runs[check] = measure(adapter, spec, target, LABELS.get(path, path), during)
        return runs[check]

    counts = go("counts", PATHS["counts"])
    checks["counts"] = judge_counts(counts)
    if smoke:
        return checks, runs
    why = lacking(features, "connections_counter")
    checks["connections"] = skipped("connections", why) if why else judge_connections(counts)
    latency = go("latency", PATHS["latency"])
    late = lambda r: (r["server"].get("mean_ms") or 50.0) - 50.0
    if late(latency) > LATENCY_SERVER_LATE_MS:
        log(f"{name}: the server ran {late(latency):.1f} ms late on average; once more")
        first = latency
        latency = go("latency", PATHS["latency"])
        latency["other_run"] = first
        if late(first) < late(latency):
            latency, first["other_run"] = first, dict(latency, other_run=None)
        runs["latency"] = latency
    checks["latency"] = judge_latency(latency)
    why = lacking(features, "fault")
    checks["errors"] = skipped("errors", why) if why else judge_errors(go("errors",
                                                                          PATHS["errors"]))
    checks["overhead"] = judge_overhead(go("overhead", PATHS["overhead"]))
    why = lacking(features, "stall", "stall_counters")
    if why:
        checks["omission"] = skipped("omission", why)
    else:
        rate = OMISSION_RATE if name in RATE_OPTIONS else None
        checks["omission"] = judge_omission(
            go("omission", PATHS["omission"], rate=rate,
               during=start_stalls(SECONDS["omission"])), name)
    return checks, runs


def make_cert(workdir):
    """A self-signed certificate for 127.0.0.1 (openssl); (cert, key) paths."""
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key,
                    "-out", cert], check=True, capture_output=True)
    return cert, key


def run_protocols(notesd, pin, chosen, features):
    """Check 7: counts and latency over HTTP/2, per tool and protocol: [row]."""
    rows = []
    tools = [(n, a, why) for n, a, why in chosen if n in HTTP2_TOOLS]
    if not tools:
        return rows
    wanted = {p for n, _, _ in tools for p in HTTP2_TOOLS[n]}
    why_tls, why_h2c = lacking(features, "tls"), lacking(features, "h2c")
    if (why_tls or "tls" not in wanted) and (why_h2c or "h2c" not in wanted):
        for n, a, why in tools:
            for proto in HTTP2_TOOLS[n]:
                rows.append({"tool": n, "protocol": proto, "installed": a is not None,
                             "why": why, "checks": {
                                 c: skipped(c, why_tls if proto == "tls" else why_h2c)
                                 for c in ("counts", "latency")}})
        return rows
    with tempfile.TemporaryDirectory(prefix="calibrate-tls-") as workdir:
        extra = []
        tls_port = None
        if not why_tls:
            cert, key = make_cert(workdir)
            tls_port = free_port()
            extra += ["--tls-port", str(tls_port), "--tls-cert", cert, "--tls-key", key]
        if not why_h2c:
            extra.append("--h2c")
        target = Target(notesd, pin, extra)
        try:
            for n, adapter, why in tools:
                for proto in HTTP2_TOOLS[n]:
                    row = {"tool": n, "protocol": proto, "installed": adapter is not None,
                           "why": why, "checks": {}, "runs": {}}
                    rows.append(row)
                    lack = why_tls if proto == "tls" else why_h2c
                    if adapter is None or lack:
                        row["checks"] = {c: skipped(c, lack or why) for c in ("counts", "latency")}
                        continue
                    for check, path in (("counts", PATHS["counts"]), ("latency", PATHS["latency"])):
                        url = (target.url(path, "https", tls_port) if proto == "tls"
                               else target.url(path))
                        spec = spec_for(adapter, url, CONNECTIONS[check], PROTOCOL_SECONDS[check],
                                        http2=True, count_rps=COUNT_RPS[check])
                        log(f"{n}: {check} over {'h2 (TLS)' if proto == 'tls' else 'h2c'}")
                        run = measure(adapter, spec, target, LABELS[path])
                        row["runs"][check] = run
                        row["checks"][check] = (judge_counts(run) if check == "counts"
                                                else judge_latency(run))
        finally:
            target.stop()
    return rows


def run_matrix(tools, notesd, smoke=False):
    """The whole matrix: {"started", "smoke", "features", "server_timing", "tools": [...],
    "protocols": [...], "seconds_total"}. `tools`: ["all"] or adapter names."""
    t0 = time.monotonic()
    chosen = selected(tools)
    pin = procs.can_pin((0, 1))
    out = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "smoke": smoke,
           "pinning": "notesd on CPU 1, tools on CPU 0" if pin else "no pinning",
           "machine": procs.machine_info(), "loadavg_start": procs.loadavg(), "tools": [],
           "protocols": []}
    target = Target(notesd, pin)
    try:
        out["features"] = features = server_features(notesd, target)
        out["server_timing"] = srv.server_timing_samples(target.url(""), "/delay/50", 10)
        for name, adapter, why in chosen:
            row = {"tool": name, "installed": adapter is not None, "why": why,
                   "version": adapter.version() if adapter else None}
            if adapter is not None:
                row["checks"], row["runs"] = run_checks(name, adapter, target, features, smoke)
            out["tools"].append(row)
    finally:
        target.stop()
    if not smoke:
        out["protocols"] = run_protocols(notesd, pin, chosen, features)
    out["loadavg_end"] = procs.loadavg()
    out["seconds_total"] = round(time.monotonic() - t0, 1)
    return out
