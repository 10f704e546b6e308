"""calibrate --tools: the load-tool conformance matrix and its runs.

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
 8. schedule     GET /json at a rate, for the tools that claim one (RATE_OPTIONS): the
                 arrival times notesd's request journal recorded (loadlib/journal.py)
                 against the rate asked for, per 100 ms window, and the longest gap;
                 the connections the tool used. Its ramp: GET /json on a rising rate,
                 for the tools with a ramping model (RAMP_OPTIONS), against the linear
                 ramp per 500 ms window. And the same schedule run of this checkout's
                 own open-model generator, calibration/openload.py (own_schedule()).

The matrix is split by what each part owns: this module runs checks 1-6, each
tool's runs on one notesd (run_tools(), plain data) with the lengths, loads and
routes below; calibrate_target.py is that notesd and the server's side of a run,
verdicts.py judges each run, protocols.py runs check 7 on a
notesd of its own, and scorecard.py writes the Markdown, JSON and SVG
scorecard. calibrate_command.py's run_matrix() runs the phases in order.
"""
import dataclasses
import os
import sys
import tempfile
import threading
import time

from loadlib import journal, judgement, procs, prom, server as srv
from loadlib.paths import LOADTESTS
from loadlib.commands.calibrate.calibrate_target import lacking, server_features, server_view
from loadlib.server import Target
from loadlib.commands.calibrate.verdicts import (
    RAMP_OPTIONS, RATE_OPTIONS, judge_connections, judge_counts, judge_errors, judge_latency,
    judge_omission, judge_overhead, judge_ramp, judge_schedule, skipped)
from loadlib.report import logger
from loadlib.tools import run as toolrun, wrk
from loadlib.tools.base import RunSpec

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
# A latency run in which the server itself answered late on average (its own mean over
# 50 + this) measured the machine's other work, not the tool: it is run once more and
# the run where the server kept closer to its schedule is judged (both are in the JSON).
LATENCY_SERVER_LATE_MS = 1.0
# Coordinated omission: the server pauses its loop OMISSION_STALL_MS every
# OMISSION_EVERY_MS while the tool runs. 200 ms of every 1000 is a 20% share: an open
# model sees p90 ~ 100 ms and p99 ~ 190 ms above the stall-free latency, far from a
# closed model's p99 of a millisecond or two. Rate-driven tools (verdicts.py's
# RATE_OPTIONS) run at OMISSION_RATE/s with 10 connections (50 ms between one
# connection's requests, a quarter of a stall).
OMISSION_STALL_MS = 200
OMISSION_EVERY_MS = 1000
OMISSION_RATE = 200.0
# The schedule run: a rate well inside every tool's reach on this machine (so a gap is the
# tool's, not the server's), 20 arrivals per 100 ms window, for long enough to have 40
# windows after the first and last are trimmed. The journal's ring holds more than the
# counts run sends at c=10 for 3 s (wrk and ab about 275,000 here), 160 bytes a record.
SCHEDULE_RATE = 200.0
SCHEDULE_SECONDS = 5
SCHEDULE_CONNECTIONS = 10
JOURNAL_RECORDS = 500000
# The ramp: from 50/s to 250/s in 3 s, then 2 s at 250/s (k6's startRate, then its
# stages), 25 to 125 arrivals in each 500 ms window.
RAMP_START = 50.0
RAMP_STAGES = ((3, 250.0), (2, 250.0))
OPENLOAD = os.path.join(LOADTESTS, "calibration", "openload.py")

log = logger("calibrate")


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


# ------------------------------------------------------------------ the checks

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

    since = journal.newest(target.metrics_port) if features.get("journal") else None
    counts = go("counts", PATHS["counts"])
    if since is not None:
        # every request the counter counted has its record (the smoke test holds it)
        records, lost = json_records(target, since)
        counts["journal"] = {"records": len(records), "lost": lost}
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
    if name in RATE_OPTIONS:
        why = lacking(features, "journal")
        checks["schedule"] = skipped("schedule", why) if why else judge_schedule(
            schedule_run(name, adapter, target, runs))
    if name in RAMP_OPTIONS:
        why = lacking(features, "journal")
        checks["ramp"] = skipped("ramp", why) if why else judge_ramp(
            ramp_run(name, adapter, target, runs))
    return checks, runs


def schedule_run(name, adapter, target, runs):
    """Check 8's run: the tool at SCHEDULE_RATE, and what the journal saw of it."""
    since = journal.newest(target.metrics_port)
    spec = spec_for(adapter, target.url("/json"), SCHEDULE_CONNECTIONS, SCHEDULE_SECONDS,
                    rate=SCHEDULE_RATE)
    log(f"{name}: schedule (/json, c={spec.connections}, {SCHEDULE_RATE:g}/s)")
    run = runs["schedule"] = measure(adapter, spec, target, "/json")
    run["journal"] = schedule_view(*json_records(target, since))
    return run


def json_records(target, since):
    """(the journal's records of GET /json after `since`, records lost since then)."""
    records, lost, _ = journal.read(target.metrics_port, since)
    return journal.of_kind(records, route="/json"), lost


def schedule_view(records, lost):
    """A schedule run's journal figures, as judge_schedule reads them."""
    return {"records": len(records), "lost": lost,
            "schedule": judgement.schedule_figures([r["started_us"] for r in records],
                                                   SCHEDULE_RATE, poisson=True),
            "connections": journal.connections(records)}


def ramp_run(name, adapter, target, runs):
    """Check 8's ramp run: the tool from RAMP_START through RAMP_STAGES, and the journal's
    arrivals against the ramp."""
    since = journal.newest(target.metrics_port)
    seconds = sum(s for s, _ in RAMP_STAGES)
    spec = dataclasses.replace(
        spec_for(adapter, target.url("/json"), SCHEDULE_CONNECTIONS, seconds, rate=RAMP_START),
        ramp=RAMP_STAGES)
    log(f"{name}: ramp (/json, c={spec.connections}, {RAMP_START:g}/s to "
        f"{RAMP_STAGES[-1][1]:g}/s)")
    run = runs["ramp"] = measure(adapter, spec, target, "/json")
    records, lost = json_records(target, since)
    arrivals = [r["started_us"] for r in records]
    run["journal"] = {"records": len(records), "lost": lost, "ramp": journal.ramp_error(
        arrivals, ((0, RAMP_START),) + RAMP_STAGES, min(arrivals)) if arrivals else {}}
    return run


def own_schedule(target, pin):
    """Check 8's schedule run of calibration/openload.py (its open model, at most
    SCHEDULE_CONNECTIONS connections), in the shape measure() returns; judge_schedule
    reads it like a tool's."""
    cmd = [sys.executable, OPENLOAD, "--url", target.url("/json"), "--rate",
           f"{SCHEDULE_RATE:g}", "--duration", str(SCHEDULE_SECONDS), "--max-connections",
           str(SCHEDULE_CONNECTIONS)]
    log(f"openload.py: schedule (/json, at most {SCHEDULE_CONNECTIONS} connections, "
        f"{SCHEDULE_RATE:g}/s)")
    since = journal.newest(target.metrics_port)
    before = target.scrape()
    spec = {"url": target.url("/json"), "connections": SCHEDULE_CONNECTIONS,
            "duration_s": SCHEDULE_SECONDS, "rate": SCHEDULE_RATE}
    run = {"spec": spec, "result": None, "failure": None}
    try:
        proc = toolrun.run_measured(procs.taskset(cmd, 0 if pin else None),
                                    timeout=SCHEDULE_SECONDS + 60)
        out = wrk.json_line(proc["output"], "OPENLOAD_JSON")
        if proc["rc"] != 0 or out is None:
            run["failure"] = f"openload.py exited {proc['rc']}: {proc['output'][-300:]}"
        else:
            run["result"] = {"requests": out["sent"], "openload": out}
    except OSError as e:
        run["failure"] = str(e)
    time.sleep(SETTLE_S)
    run["server"] = server_view(before, target.scrape(), "/json")
    run["journal"] = schedule_view(*json_records(target, since))
    return run


def run_tools(data, chosen, notesd, pin, smoke):
    """Checks 1-6 of every chosen tool ([(name, adapter or None, why)], selected()'s) on
    one notesd, into `data`: its "features" and "server_timing", and one row per tool
    in data["tools"] with the tool's "checks" (records) and "runs" (raw runs)."""
    target = Target(notesd, pin, journal=JOURNAL_RECORDS)
    try:
        data["features"] = features = server_features(notesd, target)
        data["server_timing"] = srv.server_timing_samples(target.url(""), "/delay/50", 10)
        for name, adapter, why in chosen:
            row = {"tool": name, "installed": adapter is not None, "why": why,
                   "version": adapter.version() if adapter else None}
            if adapter is not None:
                row["checks"], row["runs"] = run_checks(name, adapter, target, features, smoke)
            data["tools"].append(row)
        if not smoke and not lacking(features, "journal"):
            run = own_schedule(target, pin)
            data["own_schedule"] = {"tool": "openload.py", "check": judge_schedule(run),
                                    "run": run}
    finally:
        target.stop()
