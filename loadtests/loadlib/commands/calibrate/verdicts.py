"""calibrate --tools: the verdicts of the conformance matrix. One judge_*() per
check, each reading one run as matrix.measure() recorded it (the tool's
ToolResult as a dict, the server's side of the run from its /metrics, the cores'
busy shares) and returning a record: the verdict (PASS, WARN, FAIL; SKIP when the
server lacks what the check needs), the measured error, what was seen, and the
evidence that says whose figure is right. The thresholds are the constants below,
each with the reason for its value. Nothing here runs anything.
"""

from loadlib import judgement
from loadlib.judgement import CONN_SPARE, FAIL, PASS, WARN

SKIP = "SKIP"

# The truth of the latency check: /delay/50?jitter=10 is uniform on [40, 60] ms, so the
# q-th percentile is 40 + 20q.
LATENCY_TRUTH = {"p50": 50.0, "p90": 58.0, "p99": 59.8}
# PASS within 2 ms: the timer answers within ~0.1 ms of its deadline on an idle loop,
# loopback and the kernel add ~0.5 ms, and several tools round to whole ms (1 ms).
# WARN up to 10 ms: the tool's own time shows (a shared CPU, a garbage collector),
# but the figure still tells 50 from 60. FAIL beyond: the tool's tail is its own.
LATENCY_PASS_MS = 2.0
LATENCY_WARN_MS = 10.0

# Connections: a keep-alive tool opens its c connections once. PASS up to c + CONN_SPARE
# (judgement.py's: a tool may open one probe or spare connection), WARN up to 2c
# (reconnects now and then), FAIL beyond (it reconnects per request or ignores keep-alive).

# Overhead: the side whose process used more of its pinned core was the bottleneck,
# unless neither used half of it while a core was 90% busy: then other work on the
# machine set the pace (the cores are shared), and the verdict says so.
OVERHEAD_MIN_SHARE = 0.5
OVERHEAD_FULL_CORE = 0.9

# Coordinated omission: the stall run (matrix.py's OMISSION_STALL_MS every
# OMISSION_EVERY_MS) is judged against omission_truth(), worked out from the stalls the
# server counted. A tool "shows" the stalls when its p99 reaches half the open model's extra delay at
# p99 (far above a closed model's, far below the truth's sampling noise); its max
# shows a stall when it reaches 80% of the stall's length.
OMISSION_SHOW_SHARE = 0.5
OMISSION_MAX_SHARE = 0.8
# Check 8 (the schedule and the ramp) is loadlib/judgement.py's schedule_check() and
# ramp_check(), judge's own: its thresholds are there.
# The adapters that turn RunSpec.rate into the tool's own rate option (see each
# adapter's docstring); the others (ab, h2load, siege, wrk, curl) have none.
RATE_OPTIONS = {"hey": "-q per worker", "httperf": "--rate (a connection per request)",
                "locust": "constant_throughput per user",
                "locust-distributed": "constant_throughput per user", "autocannon": "-R",
                "artillery": "arrivalRate", "loadtest": "requestsPerSecond",
                "k6": "constant-arrival-rate"}
# The adapters that turn RunSpec.ramp into a ramping open model.
RAMP_OPTIONS = {"k6": "ramping-arrival-rate"}


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
    figures = {"tool": tool, "server": seen, "difference": diff, "connections": c,
               "journal": run.get("journal")}
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



def judge_schedule(run):
    """Check 8: the arrivals the journal recorded against the rate the tool was asked for
    (judgement.schedule_check, with judge's thresholds)."""
    if run["result"] is None:
        return failed_run("schedule", run)
    j = run["journal"]
    s, rate = j["schedule"], run["spec"]["rate"]
    figures = {"rate": rate, "journal": j, "tool_requests": run["result"]["requests"],
               "server_requests": run["server"].get("requests")}
    disagrees = journal_agrees("schedule", j, figures["server_requests"], figures)
    if disagrees:
        return disagrees
    c = judgement.schedule_check(s, server_lag_ms=run["server"].get("lag_max_ms"))
    err = (round(judgement.rate_error(s) * 100, 1) if s.get("achieved_rate") is not None
           else None)
    return record("schedule", c["verdict"], err, c["figure"] + (f": {c['reason']}" if c["reason"]
                                                                 else ""),
                  "" if c["verdict"] == PASS else
                  "the journal's arrival times are the server's clock on every request; the "
                  "tool's own rate figure is an average that hides bursts and gaps", figures)


def journal_agrees(check, j, counted, figures):
    """A WARN record when the journal lost records or holds other than the counter's
    count of the run's requests (judgement.journal_check); None when it holds every
    request."""
    c = judgement.journal_check(j["records"], j["lost"], counted)
    return None if c["verdict"] == PASS else record(check, WARN, None, c["reason"], "", figures)


def judge_ramp(run):
    """Check 8's ramp: the arrivals the journal recorded against the ramp asked for
    (judgement.ramp_check)."""
    if run["result"] is None:
        return failed_run("ramp", run)
    j = run["journal"]
    figures = {"rate": run["spec"]["rate"], "ramp": run["spec"]["ramp"], "journal": j,
               "tool_requests": run["result"]["requests"],
               "server_requests": run["server"].get("requests")}
    disagrees = journal_agrees("ramp", j, figures["server_requests"], figures)
    if disagrees:
        return disagrees
    c = judgement.ramp_check(j["ramp"], j["records"])
    err = round(j["ramp"]["mean_error"] * 100, 1) if j["ramp"].get("windows") else None
    return record("ramp", c["verdict"], err, c["figure"] + (f": {c['reason']}" if c["reason"]
                                                             else ""),
                  "" if c["verdict"] == PASS else
                  "the journal's arrival times against the linear ramp between the stages "
                  "asked for", figures)
