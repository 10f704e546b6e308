"""calibrate --tools: the scorecard of the conformance matrix, as Markdown, JSON and
SVG charts, from the plain data calibrate.run_matrix() returns. Nothing
here runs anything; the verdicts and their thresholds are matrix.py's.

The Markdown is made from that data alone, so `calibrate --report-from` writes the
same report again from a saved scorecard JSON; its first line says so.
"""
import functools
import json
import os

from loadlib import charts, report
from loadlib.quantile import median
from loadlib.commands.calibrate.verdicts import RAMP_OPTIONS, RATE_OPTIONS
from loadlib.commands.calibrate.ws import generated_line, rewrite_column, ws_markdown

TITLES = {"counts": "1. Counts", "latency": "2. Known latency", "errors": "3. Error accounting",
          "connections": "4. Connections", "overhead": "5. Overhead and ceiling",
          "omission": "6. Coordinated omission", "schedule": "8. Schedule"}
ORDER = ("counts", "latency", "errors", "connections", "overhead", "omission", "schedule")
CHART_LATENCY = "latency-error.svg"
CHART_CPU = "cpu-per-request.svg"
# num(figure, digits, signed=False): report.fmt_fixed with the scorecard's word for a
# figure the tool does not give
num = functools.partial(report.fmt_fixed, missing="not reported")


def cell(rec):
    """A summary cell: the verdict and its error in brackets."""
    if rec is None:
        return "—"
    err = rec.get("error")
    if rec["verdict"] == "SKIP" or err is None:
        return rec["verdict"]
    return f"{rec['verdict']} ({err:+g})" if isinstance(err, (int, float)) else rec["verdict"]


def merge(base, new):
    """A scorecard of `base` (an earlier run's data) with the rows of the tools `new` ran
    replaced by, or joined with, new's: tools and their protocol rows. The header keeps
    base's machine and start and lists under "merged" which rows came from which run."""
    names = {t["tool"] for t in new["tools"]}
    out = dict(base)
    out["tools"] = sorted([t for t in base["tools"] if t["tool"] not in names] + new["tools"],
                          key=lambda t: t["tool"])
    out["protocols"] = sorted([p for p in base.get("protocols", []) if p["tool"] not in names]
                              + new.get("protocols", []), key=lambda p: (p["tool"], p["protocol"]))
    if new.get("own_schedule") or base.get("own_schedule"):
        out["own_schedule"] = new.get("own_schedule") or base.get("own_schedule")
    runs = base.get("merged") or [{"started": base["started"],
                                   "tools": sorted(t["tool"] for t in base["tools"]),
                                   "loadavg_start": base.get("loadavg_start"),
                                   "loadavg_end": base.get("loadavg_end")}]
    runs = [dict(r, tools=[n for n in r["tools"] if n not in names]) for r in runs]
    out["merged"] = [r for r in runs if r["tools"]] + [
        {"started": new["started"],
         "tools": sorted(names | ({"openload.py"} if new.get("own_schedule") else set())), "seconds_total": new["seconds_total"],
         "loadavg_start": new.get("loadavg_start"), "loadavg_end": new.get("loadavg_end"),
         "features": new.get("features")}]
    return out


def installed(data):
    return [t for t in data["tools"] if t["installed"]]


def header(data):
    m = data.get("machine", {})
    f = data.get("features", {})
    have = [k for k, v in f.items() if v]
    lack = [k for k, v in f.items() if not v]
    lines = [f"- started {data['started']}, {data['seconds_total']:.0f} s in all"
             + (" (smoke: counts only)" if data.get("smoke") else ""),
             f"- machine: {m.get('cpu') or '?'}, {m.get('cores')} CPUs, {m.get('os') or '?'}; "
             f"load average {' '.join(f'{x:.2f}' for x in data.get('loadavg_start') or [])} at "
             f"the start, {' '.join(f'{x:.2f}' for x in data.get('loadavg_end') or [])} at the end",
             f"- pinning: {data.get('pinning')}",
             "- tools: " + ", ".join(t["version"] if (t["version"] or "").startswith(t["tool"])
                                     else f"{t['tool']} {t['version']}" for t in installed(data)),
             "- server features: " + (", ".join(have) or "none of the fixture API")
             + (f"; lacking: {', '.join(lack)}" if lack else "")]
    for r in data.get("merged") or []:
        load = lambda xs: " ".join(f"{x:.2f}" for x in xs or [])
        lines.append(f"- rows of {', '.join(r['tools'])}: the run started {r['started']} (load "
                     f"average {load(r.get('loadavg_start'))} at its start, "
                     f"{load(r.get('loadavg_end'))} at its end)")
    st = [(c, s) for c, s in data.get("server_timing") or [] if s is not None]
    if st:
        lines.append(f"- `Server-Timing: total` of {len(st)} sequential `GET /delay/50`: median "
                     f"{median([s for _, s in st]):.3f} ms; the client saw "
                     f"{median([c - s for c, s in st]):.3f} ms more (loopback, kernel, parsing)")
    return "\n".join(lines) + "\n"


def summary(data):
    rows = []
    for t in data["tools"]:
        if not t["installed"]:
            rows.append([t["tool"], "—", f"{t['why']}"] + [""] * (len(ORDER) - 1))
            continue
        checks = t.get("checks", {})
        rows.append([t["tool"], t["version"] or "?"] + [cell(checks.get(c)) for c in ORDER])
    return report.table(["tool", "version"] + [TITLES[c].split(". ")[1] for c in ORDER], rows)


def runs_of(data, check):
    """[(tool row, record, run)] of the installed tools that ran `check`."""
    out = []
    for t in installed(data):
        rec = t.get("checks", {}).get(check)
        if rec is not None:
            out.append((t, rec, t.get("runs", {}).get(check)))
    return out


def section_counts(data):
    def journal(f):
        j = f.get("journal")
        if not j:
            return "—"
        return f"{j['records']}" + (f" ({j['lost']} lost)" if j["lost"] else "")

    rows = [[t["tool"], rec["figures"].get("connections", ""), rec["figures"].get("tool", ""),
             rec["figures"].get("server", ""), journal(rec["figures"]),
             num(rec.get("error"), 0, True) if rec.get("error") is not None else "",
             rec["verdict"]]
            for t, rec, _ in runs_of(data, "counts")]
    return ("`GET /json`: the requests the tool says completed against the delta of notesd's "
            "`http_requests_total`. PASS when the server counted at least as many and at most c "
            "more (the requests in flight when the tool stopped). The journal column is the "
            "records notesd's request journal holds for the run, one per request the counter "
            "counted (the tools' smoke test requires them equal; — for a run without the journal, or "
            "older than this column).\n\n"
            + report.table(["tool", "c", "tool", "server", "journal", "server − tool",
                            "verdict"], rows))


def section_latency(data, rows_of=None):
    items = rows_of if rows_of is not None else [(t["tool"], rec) for t, rec, _ in
                                                 runs_of(data, "latency")]
    rows = []
    for name, rec in items:
        f = rec.get("figures", {})
        tool, err = f.get("tool", {}), f.get("error_ms", {})
        rows.append([name] + [f"{num(tool.get(q), 2)} ({num(err.get(q), 2, True)})"
                              if tool.get(q) is not None else "not reported"
                              for q in ("p50", "p90", "p99")]
                    + [num(tool.get("mean"), 2), num(tool.get("max"), 1),
                       num(f.get("server_mean_ms"), 2), rec["verdict"]])
    return ("`GET /delay/50?jitter=10` at c=10: the delay is uniform on [40, 60] ms, so p50 = 50, "
            "p90 = 58, p99 = 59.8 ms exactly. PASS within 2 ms at every reported percentile, WARN "
            "within 10 ms, FAIL beyond; the server's mean is its own clock over the same "
            "requests.\n\n"
            + report.table(["tool", "p50 ms (error)", "p90 ms (error)", "p99 ms (error)", "mean ms",
                            "max ms", "server mean ms", "verdict"], rows))


def section_errors(data):
    rows = []
    for t, rec, _ in runs_of(data, "errors"):
        f = rec["figures"]
        if rec["verdict"] == "SKIP":
            rows.append([t["tool"], "", "", "", "", "", f"SKIP ({rec['detail']})"])
            continue
        share = f.get("server_share")
        rows.append([t["tool"], f.get("tool_errors", ""), f.get("tool_non2xx", ""),
                     f.get("server_503", ""), "" if share is None else f"{share * 100:.1f}%",
                     num(rec.get("error"), 0, True) if rec.get("error") is not None else "",
                     rec["verdict"]])
    return ("`GET /fault/503?every=4`: the server fails exactly every 4th request by its own "
            "counter. PASS when the tool's error count is within c of the server's "
            "`http_requests_total{status_code=\"503\"}` delta.\n\n"
            + report.table(["tool", "tool errors", "of which non-2xx", "server 503s",
                            "server share", "tool − server", "verdict"], rows))


def section_connections(data):
    rows = []
    for t, rec, _ in runs_of(data, "connections"):
        f = rec["figures"]
        rows.append([t["tool"], f.get("connections", ""), f.get("accepted", ""),
                     f.get("requests", ""), rec["verdict"] if rec["verdict"] != "SKIP"
                     else f"SKIP ({rec['detail']})"])
    return ("The counts run's `notes_http_connections_accepted_total` delta against the c "
            "connections keep-alive needs. PASS up to c + 2, WARN up to 2c, FAIL beyond "
            "(reconnecting per request, or ignoring keep-alive).\n\n"
            + report.table(["tool", "c", "accepted", "requests", "verdict"], rows))


def section_overhead(data):
    rows = []
    for t, rec, _ in runs_of(data, "overhead"):
        f = rec["figures"]
        busy = lambda x: "n/a" if x is None else f"{x * 100:.0f}%"
        rows.append([t["tool"], num(f.get("rps"), 0), num(f.get("tool_cpu_us_per_request"), 1),
                     num(f.get("server_cpu_us_per_request"), 1), busy(f.get("tool_core_busy")),
                     busy(f.get("server_core_busy")), f.get("bottleneck", "?"), rec["verdict"]])
    return ("`GET /json` at c=100. The tool's CPU per request is its user + system time (from "
            "`wait4()`, start-up included) over its requests; notesd's is the delta of "
            "`process_cpu_seconds_total` over its own count. Busy is CPU time over the run's "
            "length on each pinned core. PASS when notesd's core was the busier one (the req/s "
            "is the server's ceiling), WARN when the tool's was (the req/s is the tool's).\n\n"
            + report.table(["tool", "req/s", "tool µs/req", "notesd µs/req", "tool core",
                            "notesd core", "bottleneck", "verdict"], rows))


def section_omission(data):
    rows = []
    for t, rec, _ in runs_of(data, "omission"):
        f = rec["figures"]
        if rec["verdict"] == "SKIP" or not f:
            rows.append([t["tool"], "", "", "", "", "", "", "", "", f"{rec['verdict']} "
                         f"({rec['detail']})"])
            continue
        tr, lat = f["truth"], f["tool"]
        model = (f"open-ish: {f['rate']:g}/s ({f['rate_option']})" if f.get("rate")
                 else "closed")
        base = lat.get("p50") or 0.0
        rows.append([t["tool"], model, num(lat.get("mean"), 1), num(lat.get("p50"), 1),
                     num(lat.get("p90"), 1),
                     num(lat.get("p99"), 1), num(lat.get("max"), 0),
                     f"{base + tr['open_mean_extra_ms']:.0f} / "
                     f"{base + tr['open_p90_extra_ms']:.0f} / {base + tr['open_p99_extra_ms']:.0f}",
                     f"{(tr.get('closed_delayed_share') or 0) * 100:.2f}%", rec["verdict"]])
    return ("`GET /delay/0` while `GET /stall?ms=200&every_ms=1000&for_ms=…` pauses the "
            "server's loop 200 ms of every second, started when the tool's first request "
            "reaches the server. The model, from the stalls the server counted "
            "(`notes_stalls_total`, `notes_stall_seconds_total`): an **open** model (requests "
            "due at a fixed rate whatever happened) delays every request due during a stall by "
            "the rest of it, so a share S/P = 20% of requests wait, on average S/2 = 100 ms (the "
            "mean rises by n·S²/2T = 20 ms), and the q-th percentile's extra delay is "
            "S − (1 − q)·T/n (p90 ≈ 100 ms, p99 ≈ 190 ms above the stall-free latency); a "
            "**closed** model with c connections delays only the c requests in flight per "
            "stall, c·n of its N requests, far below the 1% a p99 can see.\n\n"
            "Tools with a rate option run at 200/s and are judged against the open model, "
            "since they promise a schedule: PASS when their p90 and p99 (the mean where they "
            "report no percentiles) show at least half of the open model's extra delay, FAIL "
            "when they hide it. The other tools are closed: WARN when their percentiles hide "
            "the stalls as the model predicts and max shows them, PASS when they show them "
            "anyway (wrk's correction), FAIL when even max misses them.\n\n"
            + report.table(["tool", "model", "mean ms", "p50 ms", "p90 ms", "p99 ms", "max ms",
                            "open truth mean / p90 / p99 ms", "closed: share delayed", "verdict"],
                           rows))


def section_schedule(data):
    rows = []
    scheduled = [(t["tool"], RATE_OPTIONS.get(t["tool"], ""), rec)
                 for t, rec, _ in runs_of(data, "schedule")]
    own = data.get("own_schedule")
    if own:
        scheduled.append((own["tool"] + " (ours)", "--rate", own["check"]))
    for tool, option, rec in scheduled:
        if rec["verdict"] == "SKIP":
            rows.append([tool] + [""] * 9 + [f"SKIP ({rec['detail']})"])
            continue
        f = rec["figures"]
        j = f.get("journal") or {}
        s, c = j.get("schedule") or {}, j.get("connections") or {}
        rows.append([tool, option, num(f.get("rate"), 0),
                     f"{num(s.get('achieved_rate'), 1)} ({num(rec.get('error'), 1, True)}%)"
                     if rec.get("error") is not None else num(s.get("achieved_rate"), 1),
                     "" if s.get("windows_on_rate") is None
                     else f"{s['windows_on_rate'] * 100:.0f}%",
                     f"{num(s.get('window_rate_p5'), 0)}–{num(s.get('window_rate_p95'), 0)}",
                     num(s.get("longest_gap_ms"), 1), num(s.get("gap_cv"), 2),
                     "" if s.get("ks_p") is None else f"{s['ks_p']:.2g}",
                     f"{c.get('connections', '')} × {c.get('per_connection_median', '')}",
                     rec["verdict"]])
    return ("`GET /json` at 200/s with c=10, the rate set by each tool's own option; the arrival "
            "times are the server's (notesd's request journal, `started_us`), 100 ms windows, "
            "the first and last trimmed. The verdict is judge's (`loadlib/judgement.py`): PASS "
            "when the achieved rate, the windows within half the expected count, the longest "
            "gap, the arrivals a clump and the inter-arrival CV are all within what an open "
            "model allows (a pacing tool's bounds, widened to Poisson arrivals' and randomly "
            "phased connections' where those stray further); WARN when the rate is within 20% "
            "and 60% of the windows on it; FAIL beyond ([why](README.md#the-schedule-column)). "
            "The CV is the inter-arrival times' (0 for a metronome, 1 for Poisson arrivals), KS p "
            "the Kolmogorov-Smirnov p-value against the exponential at the asked rate (small: not "
            "Poisson, which none of these tools claims); connections × requests per connection "
            "(median) from the journal too.\n\n"
            + report.table(["tool", "rate option", "asked /s", "achieved /s (error)",
                            "windows on rate", "window /s p5–p95", "longest gap ms", "CV",
                            "KS p", "connections", "verdict"], rows)
            + ("\n\nopenload.py is this checkout's own open-model generator "
               "(`calibration/openload.py`), held to the same figures; `--max-connections 10`."
               if own else "") + section_ramp(data))


def section_ramp(data):
    """Check 8's ramp, for the tools with a ramping model: a table, or nothing."""
    rows = []
    for t, rec, _ in runs_of(data, "ramp"):
        f = rec["figures"]
        r = (f.get("journal") or {}).get("ramp") or {}
        ramp = f.get("ramp") or []
        stages = " → ".join([num(f.get("rate"), 0)] + [f"{num(rate, 0)} ({num(secs, 0)} s)"
                                                       for secs, rate in ramp])
        rows.append([t["tool"], RAMP_OPTIONS.get(t["tool"], ""), stages,
                     num((f.get("journal") or {}).get("records"), 0),
                     "" if r.get("mean_error") is None else f"{r['mean_error'] * 100:.1f}%",
                     "" if r.get("max_error") is None else f"{r['max_error'] * 100:.1f}%",
                     rec["verdict"] if rec["verdict"] != "SKIP"
                     else f"SKIP ({rec['detail']})"])
    if not rows:
        return ""
    return ("\n\n**Ramps.** `GET /json` on a rate that rises linearly between the stages "
            "asked for (/s, stage length), c=10; per 500 ms window, the achieved rate's error "
            "against the ramp at the window's middle. PASS when the mean is within 5% and no "
            "window is off by more than 20%; WARN when the mean is within 20%; FAIL beyond.\n\n"
            + report.table(["tool", "ramp option", "rate /s", "arrivals", "mean error",
                            "largest error", "verdict"], rows))


def section_protocols(data):
    rows = []
    for p in data.get("protocols", []):
        proto = "h2 over TLS" if p["protocol"] == "tls" else "h2c"
        c, lat = p["checks"].get("counts"), p["checks"].get("latency")
        if not p["installed"]:
            rows.append([p["tool"], proto, p["why"], "", "", "", ""])
            continue
        if c["verdict"] == "SKIP":
            rows.append([p["tool"], proto, f"SKIP ({c['detail']})", "", "", "", ""])
            continue
        f = lat.get("figures", {})
        err = f.get("error_ms", {})
        rows.append([p["tool"], proto, cell(c),
                     f"{c['figures'].get('tool', '')} / {c['figures'].get('server', '')}"]
                    + [num(err.get(q), 2, True) for q in ("p50", "p99")] + [cell(lat)])
    if not rows:
        return "No tool that speaks HTTP/2 was selected.\n"
    return ("The counts and latency checks over HTTP/2: TLS on notesd's `--tls-port` with a "
            "self-signed certificate made for the run, and h2c (`--h2c`) on the cleartext port, "
            "against a second notesd started with both; same thresholds as above.\n\n"
            + report.table(["tool", "protocol", "counts", "tool / server requests",
                            "p50 error ms", "p99 error ms", "latency"], rows))


def sentence(text):
    """text with its first letter in capitals, unless it starts with a name (a metric)."""
    first = text.split(" ", 1)[0]
    return text if "_" in first or not text else text[0].upper() + text[1:]


def disagreements(data):
    """Every non-PASS record with its evidence: whose figure is right, and why."""
    lines = []
    for t in installed(data):
        for check in ORDER + ("ramp",):
            rec = t.get("checks", {}).get(check)
            if rec and rec["verdict"] in ("WARN", "FAIL") and rec.get("evidence"):
                lines.append(f"- **{t['tool']}, {check}** ({rec['verdict']}): {rec['detail']}. "
                             f"{sentence(rec['evidence'])}.")
    own = (data.get("own_schedule") or {}).get("check")
    if own and own["verdict"] in ("WARN", "FAIL") and own.get("evidence"):
        lines.append(f"- **openload.py, schedule** ({own['verdict']}): {own['detail']}. "
                     f"{sentence(own['evidence'])}.")
    for p in data.get("protocols", []):
        for check, rec in p.get("checks", {}).items():
            if rec["verdict"] in ("WARN", "FAIL") and rec.get("evidence"):
                lines.append(f"- **{p['tool']} ({p['protocol']}), {check}** ({rec['verdict']}): "
                             f"{rec['detail']}. {sentence(rec['evidence'])}.")
    return "\n".join(lines) if lines else "None: every figure agreed with the server."


def caveats(data):
    """What each tool's adapter says about its own figures (ToolResult.notes): one line per
    tool, a note that only some runs carried named with those runs ("in omission")."""
    lines = []
    for t in installed(data):
        runs = [(check, r["result"]) for check, r in (t.get("runs") or {}).items()
                if r and r.get("result")]
        seen = {}
        for check, res in runs:
            for note in res.get("notes", []):
                seen.setdefault(note, []).append(check)
        if not seen:
            continue
        parts = [note if len(checks) == len(runs) else f"{note} (in {', '.join(checks)})"
                 for note, checks in seen.items()]
        lines.append(f"- **{t['tool']}**: " + "; ".join(parts) + ".")
    return "\n".join(lines) if lines else "No tool added a caveat to its figures."


def markdown(data):
    parts = ["# Load-tool conformance scorecard\n", header(data), "## Summary\n", summary(data),
             "\nA verdict's bracket holds its error: server − tool requests (counts), the worst "
             "percentile error in ms (latency), tool − server errors (errors), connections "
             "beyond c (connections), the p99's distance from the open model's in ms "
             "(omission), the achieved rate's error in % (schedule).\n"]
    sections = {"counts": section_counts, "latency": section_latency, "errors": section_errors,
                "connections": section_connections, "overhead": section_overhead,
                "omission": section_omission, "schedule": section_schedule}
    for check in ORDER:
        if check == "schedule":
            if data.get("protocols"):                     # 7 before 8
                parts += ["## 7. Protocols\n", section_protocols(data), ""]
        if any(t.get("checks", {}).get(check) for t in installed(data)) or \
                (check == "schedule" and data.get("own_schedule")):
            parts += [f"## {TITLES[check]}\n", sections[check](data), ""]
    parts += ["## Where a tool and the server disagree\n", disagreements(data), ""]
    parts += ["## What the tools say about their own figures\n", caveats(data), ""]
    return "\n".join(parts) + "\n"


def chart_latency(data):
    rows = [(t, rec) for t, rec, _ in runs_of(data, "latency") if rec["verdict"] != "SKIP"]
    if not rows:
        return None
    groups = [(t["tool"], t["tool"]) for t, _ in rows]
    series = [("p50", "p50"), ("p90", "p90"), ("p99", "p99")]
    values = {q: {t["tool"]: (None if rec["figures"]["error_ms"].get(q) is None
                              else abs(rec["figures"]["error_ms"][q])) for t, rec in rows}
              for q, _ in series}
    return charts.bar_chart("Latency error per tool", "GET /delay/50?jitter=10, c=10: "
                            "|tool − truth| (truth 50 / 58 / 59.8 ms); n/a = not reported",
                            groups, series, values, "ms")


def chart_cpu(data):
    rows = [(t, rec) for t, rec, _ in runs_of(data, "overhead") if rec["verdict"] != "SKIP"
            and rec["figures"]]
    if not rows:
        return None
    groups = [(t["tool"], t["tool"]) for t, _ in rows]
    series = [("tool", "the tool"), ("notesd", "notesd")]
    values = {"tool": {t["tool"]: rec["figures"].get("tool_cpu_us_per_request") for t, rec in rows},
              "notesd": {t["tool"]: rec["figures"].get("server_cpu_us_per_request")
                         for t, rec in rows}}
    return charts.bar_chart("CPU per request", "GET /json, c=100: user + system µs per request, "
                            "tool (start-up included) and notesd", groups, series, values, "µs")


def chart_files(data):
    """{file name: SVG} of the charts the data has figures for."""
    return {name: svg for name, svg in ((CHART_LATENCY, chart_latency(data)),
                                        (CHART_CPU, chart_cpu(data))) if svg}


def write_report(data, svgs, md_path, json_path, prefix):
    """The scorecard at md_path, its first line naming json_path (where its data is), the
    matrix, links to its charts (written beside it as prefix + name) and the WebSocket
    column. Returns the text without the first line."""
    folder = os.path.dirname(os.path.abspath(md_path))
    for name, svg in svgs.items():
        with open(os.path.join(folder, prefix + name), "w") as f:
            f.write(svg)
    text = markdown(data)
    if svgs:
        text += "Charts: " + ", ".join(f"[{prefix + n}]({prefix + n})" for n in svgs) + "\n"
    if "websocket" in data:
        text += "\n" + ws_markdown(data["websocket"])
    with open(md_path, "w") as f:
        f.write(generated_line(os.path.relpath(os.path.abspath(json_path), folder)) + text)
    return text


def write(data, outdir, md_path=None, json_path=None):
    """Writes scorecard.md, scorecard.json and the SVG charts into outdir (created), and
    copies of the Markdown and JSON to md_path and json_path when given (the charts then
    also go next to md_path, named after it, so its links hold). Returns the Markdown."""
    os.makedirs(outdir, exist_ok=True)
    own_json = os.path.join(outdir, "scorecard.json")
    for path in (own_json, json_path):
        if path:
            report.write_json(path, data, indent=1, default=str)
    svgs = chart_files(data)
    text = write_report(data, svgs, os.path.join(outdir, "scorecard.md"), own_json, "")
    if md_path:
        stem = os.path.splitext(os.path.basename(md_path))[0]
        write_report(data, svgs, md_path, json_path or own_json, stem + "-")
    return text


def rewrite(json_path):
    """--report-from: the report of a saved scorecard JSON (of --tools or --ws) written again
    beside it, as the JSON's name with .md and, for the matrix, its charts named after it
    (plainly in a results directory, where the JSON is scorecard.json). Returns the text."""
    with open(json_path) as f:
        data = json.load(f)
    if "pinning" not in data:                    # run_matrix() always sets it, a --ws run never
        return rewrite_column(data, json_path)
    stem = os.path.splitext(json_path)[0]
    name = os.path.basename(stem)
    return write_report(data, chart_files(data), stem + ".md", json_path,
                        "" if name == "scorecard" else name + "-")
