"""calibrate --tools --html: the scorecard as one page in the status page's look
(loadlib/htmlpage.py), like judge's: every tool's verdicts in colour on top, then the
pictures (latency error, check 8's schedule, CPU per request) and the scorecard's text
(scorecard.markdown() and the WebSocket column's, the same words as scorecard.md).
Nothing here runs anything.
"""
from loadlib import htmlpage, pagecharts as pc
from loadlib.commands.calibrate.scorecard import ORDER, TITLES, cell, installed, markdown, runs_of
from loadlib.commands.calibrate.ws import ws_markdown
from loadlib.judgement import SCHEDULE_CV_PASS

SERIES = (("bar-a", "ka"), ("bar-b", "kb"), ("bar-c", "kc"))


def grouped(groups, series, values, y_label, reference=None):
    """Grouped bars: groups [name], series [(key, label)], values {key: {name: v or None}};
    reference: a dashed line across at that value. Returns the SVG."""
    width = 1.0 / (len(series) + 1)
    layers, top = [], []
    for si, (key, _) in enumerate(series):
        lefts = [gi + si * width + width / 2 for gi in range(len(groups))]
        heights = [values[key].get(g) for g in groups]
        top += [h for h in heights if h is not None]
        layers.append(pc.bars(lefts, [x + width for x in lefts], heights, SERIES[si % 3][0]))
    if reference is not None:
        top.append(reference)
        layers.append(pc.line([0, len(groups)], [reference, reference], "c", dashed=True))
    return pc.plot(pc.Axis(0, len(groups)), pc.axis_for(top), layers, "", y_label,
                   names=[(gi + 0.6, g) for gi, g in enumerate(groups)])


def latency_card(data):
    rows = [(t["tool"], rec) for t, rec, _ in runs_of(data, "latency") if rec["verdict"] != "SKIP"]
    if not rows:
        return ""
    qs = ("p50", "p90", "p99")
    values = {q: {name: None if rec["figures"]["error_ms"].get(q) is None
                  else abs(rec["figures"]["error_ms"][q]) for name, rec in rows} for q in qs}
    svg = grouped([n for n, _ in rows], [(q, q) for q in qs], values, "|tool − truth|, ms")
    return htmlpage.chart_card("Latency error", svg, [(SERIES[i][1], q) for i, q in enumerate(qs)],
                               "GET /delay/50?jitter=10, c=10: the truth is 50 / 58 / 59.8 ms; a "
                               "missing bar is a figure the tool does not report.")


def schedule_card(data):
    rows = [(t["tool"], rec) for t, rec, _ in runs_of(data, "schedule") if rec["figures"]]
    own = data.get("own_schedule")
    if own and own["check"]["figures"]:
        rows.append((own["tool"], own["check"]))
    values = {"cv": {}}
    for name, rec in rows:
        s = (rec["figures"].get("journal") or {}).get("schedule") or {}
        values["cv"][name] = s.get("gap_cv")
    if not any(v is not None for v in values["cv"].values()):
        return ""
    svg = grouped([n for n, _ in rows], [("cv", "CV")], values, "inter-arrival CV",
                  reference=SCHEDULE_CV_PASS)
    return htmlpage.chart_card("Check 8: how evenly each tool sends", svg,
                               [("ka", "inter-arrival CV"), ("kc", "Poisson arrivals")],
                               "0 for a metronome, 1 for Poisson arrivals; well above 1: bursts "
                               "(connections in lockstep, or each second's share at once).")


def cpu_card(data):
    rows = [(t["tool"], rec) for t, rec, _ in runs_of(data, "overhead")
            if rec["verdict"] != "SKIP" and rec["figures"]]
    if not rows:
        return ""
    values = {"tool": {n: r["figures"].get("tool_cpu_us_per_request") for n, r in rows},
              "notesd": {n: r["figures"].get("server_cpu_us_per_request") for n, r in rows}}
    svg = grouped([n for n, _ in rows], [("tool", "the tool"), ("notesd", "notesd")], values,
                  "µs of CPU per request")
    return htmlpage.chart_card("CPU per request", svg, [("ka", "the tool"), ("kb", "notesd")],
                               "GET /json, c=100: user + system time, the tool's start-up "
                               "included.")


def verdict_grid(data):
    """Every tool's verdicts, one row a tool, in colour."""
    header = ["tool", "version"] + [TITLES[c].split(". ")[1] for c in ORDER]
    rows = []
    for t in data["tools"]:
        if not t["installed"]:
            rows.append([htmlpage.esc(t["tool"]), htmlpage.esc(t["why"])] + [""] * len(ORDER))
            continue
        checks = t.get("checks", {})
        rows.append([htmlpage.esc(t["tool"]), htmlpage.esc(t["version"] or "?")]
                    + [htmlpage.verdict(checks[c]["verdict"]) + htmlpage.esc(
                        cell(checks[c])[len(checks[c]["verdict"]):]) if checks.get(c) else "—"
                       for c in ORDER])
    return htmlpage.html_table(header, rows, raw=range(len(header)))


def write_scorecard_page(data, path):
    """The scorecard of run_matrix()'s data as one page at `path`."""
    counts = {}
    for t in installed(data):
        for rec in t.get("checks", {}).values():
            counts[rec["verdict"]] = counts.get(rec["verdict"], 0) + 1
    tiles = [(str(len(installed(data))), "tools run", None)] + \
        [(str(counts[v]), f"{v} verdicts", v) for v in ("PASS", "WARN", "FAIL") if counts.get(v)]
    text = markdown(data) + ("\n" + ws_markdown(data["websocket"]) if data.get("websocket")
                             else "")
    detail = text[text.index("## Summary"):]
    detail = detail[detail.index("\n## ", 1):] if "\n## " in detail[1:] else ""
    charts = "".join(f(data) for f in (latency_card, schedule_card, cpu_card))
    body = [htmlpage.tiles(tiles), "<h2>Verdicts</h2>", verdict_grid(data)]
    if charts:
        body.append(f'<section class="charts">{charts}</section>')
    body.append(htmlpage.from_markdown(detail))
    state = htmlpage.esc(f"started {data['started']}, {data.get('seconds_total', 0):.0f} s; "
                         f"{data.get('pinning', '')}")
    page = htmlpage.document("Load-tool conformance scorecard", "Load-tool conformance scorecard",
                             state, "\n".join(body),
                             "Written by <code>loadtests/calibrate --tools --html</code>; the "
                             "checks: <code>loadtests/calibration/README.md</code>.")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
