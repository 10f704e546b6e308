"""Turns a results directory of loadtests/run.sh into summary.json, report.md
and two SVG charts. run.sh calls it at the end; run it again by hand with

    /usr/bin/python3 loadtests/harness/analyze.py loadtests/results/<stamp>

What it reads, per test (OUT/r<round>/<target>/<mode>/):
  test.json        start and end of the load, tool, exit status
  reconcile.json   client and server counts and latency (loadtests/reconcile --json)
  metrics.prom.gz  the once-a-second scrapes of the target's /metrics
  proc.jsonl       the once-a-second /proc samples (target, load tool, PostgreSQL, cores)
and per target and round OUT/r<round>/<target>/start.json (startup time, exit code).

Averages over a test ("window") run from 20 s after its start to its end, as the
seed's analysis does; for tests shorter than 100 s the window starts at 20% of
the duration instead.
"""
import gzip
import json
import math
import os
import re
import sys

from loadlib import charts, prom
from loadlib.quantile import median
from loadlib.report import fmt_bound, fmt_fixed, fmt_int, fmt_mib, fmt_ms, fmt_pct, fmt_s, fmt_share, table

MODE_LABELS = {"read": "Reads", "write": "Writes", "mixed": "Mixed", "json": "No database"}
# "native" is how results directories written before the harness said "notesd" name it
TARGET_NAMES = {"notesd": "notesd", "native": "notesd", "node": "Node", "bun": "Bun", "deno": "Deno"}
MIB = 1024 * 1024
WINDOW_SKIP_S = 20.0
WINDOW_SKIP_SHARE = 0.2
BUSY_WARNING_PCT = 25.0     # other processes' CPU (% of one core) above which the report warns
WANTED = ("notes_db_pool_", "notes_eventloop_", "process_", "http_requests_in_flight", "notes_build_info",
          "nodejs_heap_size_used_bytes", "notes_malloc_heap_used_bytes")
# The used heap as each target reports it itself: the JavaScript engine's heapUsed on the
# peer (V8 on Node and Deno, JavaScriptCore on Bun), glibc malloc's bytes in use on notesd.
# process_heap_bytes is VmData on both (prom-client's meaning), not a used heap.
USED_HEAP = ("nodejs_heap_size_used_bytes", "notes_malloc_heap_used_bytes")
# Figures every test of a complete run has; one missing is a problem, never a silent n/a.
REQUIRED = {"rps": "req/s", "p95_ms": "p95", "p99_ms": "p99", "rss_mib": "RSS", "cpu_pct": "CPU",
            "lag_mean_ms": "event loop delay", "heap_used_mib": "used heap"}


def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


# --------------------------------------------------------------------- raw series

def read_scrapes(path):
    """[(unix time, {name: value of the unlabelled sample}, {name: [(labels, value)]})] of the
    successful scrapes in metrics.prom.gz, keeping only the families the analysis uses."""
    out = []
    try:
        f = gzip.open(path, "rt", encoding="utf-8", errors="replace")
    except OSError:
        return out
    t, ok, lines = None, False, []

    def flush():
        if t is not None and ok:
            plain, labelled = {}, {}
            try:
                samples = prom.parse_metrics("\n".join(lines))
            except prom.InputError:
                return
            for name, labels, value in samples:
                if labels:
                    labelled.setdefault(name, []).append((labels, value))
                else:
                    plain[name] = value
            out.append((t, plain, labelled))

    with f:
        try:
            for line in f:
                if line.startswith("# SCRAPE "):
                    flush()
                    m = re.search(r"unix=([\d.]+)", line)
                    t = float(m.group(1)) if m else None
                    ok = "status=200" in line
                    lines = []
                elif line.startswith(WANTED):
                    lines.append(line.rstrip("\n"))
        except (OSError, EOFError):
            pass
    flush()
    return out


def read_proc(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def mean(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else None


def window_of(test):
    start, end = test.get("start_unix"), test.get("end_unix")
    if start is None or end is None:
        return None
    duration = test.get("duration_s") or (end - start)
    skip = WINDOW_SKIP_S if duration >= WINDOW_SKIP_S / WINDOW_SKIP_SHARE else WINDOW_SKIP_SHARE * duration
    return start + skip, end, skip


def gauge_mean(scrapes, name, lo, hi):
    return mean([plain.get(name) for t, plain, _ in scrapes if lo <= t <= hi + 0.5])


def gauge_max(scrapes, name, lo, hi):
    vals = [plain.get(name) for t, plain, _ in scrapes if lo <= t <= hi + 0.5 and plain.get(name) is not None]
    return max(vals) if vals else None


def pick_span(samples, lo, hi, key=lambda s: s[0]):
    """(first, last) samples bracketing the window: the last one at or before `lo`
    (else the first), and the last one at or before `hi` + 0.5 s (else the next)."""
    if len(samples) < 2:
        return None, None
    before = [s for s in samples if key(s) <= lo]
    first = before[-1] if before else samples[0]
    after = [s for s in samples if key(s) <= hi + 0.5 and key(s) > key(first)]
    if after:
        last = after[-1]
    else:
        later = [s for s in samples if key(s) > key(first)]
        last = later[0] if later else None
    return first, last


def lag_delay(scrapes, lo, hi):
    """Mean event-loop delay (ms) over the window: delta of _sum over delta of _count."""
    first, last = pick_span(scrapes, lo, hi)
    if not first or not last:
        return None
    s0, c0 = first[1].get("notes_eventloop_delay_seconds_sum"), first[1].get("notes_eventloop_delay_seconds_count")
    s1, c1 = last[1].get("notes_eventloop_delay_seconds_sum"), last[1].get("notes_eventloop_delay_seconds_count")
    if None in (s0, c0, s1, c1) or c1 <= c0:
        return None
    return 1000.0 * (s1 - s0) / (c1 - c0)


def proc_rate(samples, lo, hi, get):
    """Percent of one core: delta of a CPU-seconds figure over elapsed time in the window."""
    usable = [s for s in samples if get(s) is not None]
    first, last = pick_span(usable, lo, hi, key=lambda s: s["t"])
    if not first or not last or last["t"] <= first["t"]:
        return None
    return 100.0 * (get(last) - get(first)) / (last["t"] - first["t"])


def core_busy(samples, lo, hi):
    """Per core over the window, % of that core: {"busy": processes + interrupts + steal,
    "processes": user + nice + system, "interrupts": irq + softirq, "steal": steal}."""
    usable = [s for s in samples if s.get("cores")]
    first, last = pick_span(usable, lo, hi, key=lambda s: s["t"])
    if not first or not last:
        return None
    out = {"busy": [], "processes": [], "interrupts": [], "steal": []}
    for a, b in zip(first["cores"], last["cores"]):
        d = [y - x for x, y in zip(a, b)]
        total = d[-1]
        if total <= 0:
            return None
        pct = [round(100.0 * x / total, 1) for x in d[:3]]
        out["processes"].append(pct[0])
        out["interrupts"].append(pct[1])
        out["steal"].append(pct[2])
        out["busy"].append(round(sum(pct), 1))
    return out


def build_info(scrapes):
    for _, _, labelled in scrapes[:3]:
        for labels, _ in labelled.get("notes_build_info", []):
            return labels
    return {}


# --------------------------------------------------------------------- one test

def analyze_test(mdir):
    test = read_json(os.path.join(mdir, "test.json"), {})
    rec = read_json(os.path.join(mdir, "reconcile.json"))
    rec_txt = ""
    try:
        with open(os.path.join(mdir, "reconcile.txt")) as f:
            rec_txt = f.read()
    except OSError:
        pass
    scrapes = read_scrapes(os.path.join(mdir, "metrics.prom.gz"))
    proc = read_proc(os.path.join(mdir, "proc.jsonl"))
    entry = {
        "target": test.get("target"), "round": test.get("round"), "mode": test.get("mode"),
        "dir": mdir, "tool": test.get("tool"), "tool_rc": test.get("tool_rc"),
        "tool_timed_out": test.get("tool_timed_out"), "scrapes": len(scrapes),
        "sampler_errors": test.get("sampler_errors", []),
    }
    if rec:
        c, s = rec["client"], rec["server"]
        entry["client"] = {
            "requests": c["total"], "duration_s": c["duration_s"], "rps": c["rps"],
            "p50_ms": c["percentiles_ms"].get("p50"), "p95_ms": c["percentiles_ms"].get("p95"),
            "p99_ms": c["percentiles_ms"].get("p99"), "max_ms": c.get("max_ms"),
            "failed": c["failed"], "failed_what": c["failed_what"], "socket_errors": c.get("socket_errors"),
            "by_route_status": c.get("by_route_status"), "sent": c.get("sent"),
        }
        overall = s["latency_ms"].get("all", {})
        entry["server"] = {
            "requests": s["total"], "non2xx": s["non2xx"], "client_left": s["client_left"],
            "p50_ms": overall.get("p50"), "p95_ms": overall.get("p95"), "p99_ms": overall.get("p99"),
            "by_route_status": s["by_route_status"], "latency_ms": s["latency_ms"],
        }
        entry["reconcile"] = {
            "result": "OK" if rec["ok"] else "MISMATCH", "client": c["total"], "server": s["total"],
            "difference": rec["difference"], "tolerance": rec["tolerance"], "mismatches": rec["mismatches"],
            "client_minus_server_ms": rec["client_minus_server_ms"], "notes": rec.get("notes", []),
        }
    else:
        err = rec_txt.strip().splitlines()[-1] if rec_txt.strip() else "no reconcile output"
        entry["reconcile"] = {"result": "ERROR", "error": err}

    w = window_of(test)
    if w:
        lo, hi, skip = w
        entry["window"] = {"from_s": round(skip, 2), "to_s": round(hi - test["start_unix"], 2)}
        entry["pool_waiting_mean"] = gauge_mean(scrapes, "notes_db_pool_waiting_requests", lo, hi)
        entry["pool_connections_mean"] = gauge_mean(scrapes, "notes_db_pool_connections", lo, hi)
        entry["lag_mean_ms"] = lag_delay(scrapes, lo, hi)
        m = gauge_max(scrapes, "notes_eventloop_lag_max_seconds", lo, hi)
        entry["lag_max_ms"] = None if m is None else 1000.0 * m
        m = gauge_max(scrapes, "notes_eventloop_lag_p99_seconds", lo, hi)
        entry["lag_p99_max_ms"] = None if m is None else 1000.0 * m
        vmdata = gauge_mean(scrapes, "process_heap_bytes", lo, hi)
        entry["vmdata_mib"] = None if vmdata is None else vmdata / MIB
        entry["heap_used_mib"], entry["heap_used_metric"] = None, None
        for name in USED_HEAP:
            used = gauge_mean(scrapes, name, lo, hi)
            if used is not None:
                entry["heap_used_mib"], entry["heap_used_metric"] = used / MIB, name
                break
        rss_metric = gauge_mean(scrapes, "process_resident_memory_bytes", lo, hi)
        entry["rss_metric_mib"] = None if rss_metric is None else rss_metric / MIB
        in_window = [p for p in proc if lo <= p["t"] <= hi + 0.5 and "target" in p]
        if not in_window:
            in_window = [p for p in proc if test["start_unix"] <= p["t"] <= hi + 0.5 and "target" in p]
        rss = mean([p["target"]["rss_bytes"] for p in in_window])
        entry["rss_mib"] = None if rss is None else rss / MIB
        entry["rss_max_mib"] = max([p["target"]["rss_bytes"] for p in in_window], default=0) / MIB or None
        entry["cpu_pct"] = proc_rate(proc, lo, hi, lambda p: p.get("target", {}).get("cpu_s"))
        entry["tool_cpu_pct"] = proc_rate(proc, lo, hi, lambda p: p.get("tool", {}).get("cpu_s"))
        entry["pg_cpu_pct"] = proc_rate(proc, lo, hi, lambda p: p.get("pg_cpu_s"))
        cores = core_busy(proc, lo, hi)
        entry["cores_pct"] = cores
        # what other processes used besides target, tool and PostgreSQL (process time only:
        # interrupt and steal time are not charged to processes)
        parts = [entry["cpu_pct"], entry["tool_cpu_pct"]]
        if cores and None not in parts:
            other = sum(cores["processes"]) - sum(parts) - (entry["pg_cpu_pct"] or 0.0)
            entry["other_cpu_pct"] = max(0.0, other)
        else:
            entry["other_cpu_pct"] = None
    entry["loadavg_at_start"] = test.get("loadavg_at_start")
    entry["build_info"] = build_info(scrapes)
    return entry


# --------------------------------------------------------------------- the whole run

def version_number(text):
    m = re.search(r"(\d+\.\d+\.\d+)", text or "")
    return m.group(1) if m else None


def target_label(target, config, tests):
    name = TARGET_NAMES.get(target, target)
    # a runtime's own --version first; notesd has none, its notes_build_info says it
    version = version_number((config.get("versions") or {}).get(target))
    for t in tests if not version else ():
        if t["target"] == target and t.get("build_info"):
            version = version_number(t["build_info"].get("version"))
            if version:
                break
    version = version or version_number((config.get("versions") or {}).get(target))
    return f"{name} {version}" if version else name


def analyze(out_dir):
    """Reads a results directory, writes summary.json, report.md, throughput.svg and
    latency.svg into it, and returns the summary (with a "problems" list)."""
    config = read_json(os.path.join(out_dir, "run.json"), {})
    targets = config.get("targets") or []
    modes = config.get("modes") or []
    rounds = config.get("rounds") or 0
    tests, starts, problems = [], [], []
    for r in range(1, rounds + 1):
        for target in targets:
            tdir = os.path.join(out_dir, f"r{r}", target)
            start = read_json(os.path.join(tdir, "start.json"))
            if start is None:
                continue
            starts.append(start)
            if start.get("error"):
                problems.append(f"[round {r}/{rounds}] {target}: {start['error']}")
            for mode in modes:
                mdir = os.path.join(tdir, mode)
                if os.path.exists(os.path.join(mdir, "test.json")):
                    tests.append(analyze_test(mdir))

    labels = {t: target_label(t, config, tests) for t in targets}

    def pick(target, mode, key, sub=None):
        vals = []
        for t in sorted(tests, key=lambda t: t["round"]):
            if t["target"] == target and t["mode"] == mode:
                v = t.get(sub, {}).get(key) if sub else t.get(key)
                vals.append(v)
        return vals

    medians = {}
    for target in targets:
        medians[target] = {"startup_s": median([s.get("startup_s") for s in starts if s["target"] == target]),
                           "startup_rounds_s": [s.get("startup_s") for s in sorted(starts, key=lambda s: s["round"])
                                                if s["target"] == target]}
        for mode in modes:
            rps = pick(target, mode, "rps", "client")
            m = median(rps)
            known = [v for v in rps if v is not None]
            medians[target][mode] = {
                "rps": m, "rps_rounds": rps,
                "rps_spread": (max(known) - min(known)) / m if m and len(known) > 1 else None,
                "p50_ms": median(pick(target, mode, "p50_ms", "client")),
                "p95_ms": median(pick(target, mode, "p95_ms", "client")),
                "p99_ms": median(pick(target, mode, "p99_ms", "client")),
                "server_p99_ms": median(pick(target, mode, "p99_ms", "server")),
                "pool_waiting_mean": median(pick(target, mode, "pool_waiting_mean")),
                "pool_connections_mean": median(pick(target, mode, "pool_connections_mean")),
                "lag_mean_ms": median(pick(target, mode, "lag_mean_ms")),
                "heap_used_mib": median(pick(target, mode, "heap_used_mib")),
                "vmdata_mib": median(pick(target, mode, "vmdata_mib")),
                "rss_mib": median(pick(target, mode, "rss_mib")),
                "cpu_pct": median(pick(target, mode, "cpu_pct")),
                "tool_cpu_pct": median(pick(target, mode, "tool_cpu_pct")),
                "pg_cpu_pct": median(pick(target, mode, "pg_cpu_pct")),
                "other_cpu_pct": median(pick(target, mode, "other_cpu_pct")),
            }

    totals = {target: {"tests": sum(1 for t in tests if t["target"] == target),
                       "with_client_figures": sum(1 for t in tests if t["target"] == target and "client" in t),
                       "requests": sum(t.get("client", {}).get("requests", 0) for t in tests
                                       if t["target"] == target)}
              for target in targets}
    total_requests = sum(v["requests"] for v in totals.values())
    failed = [t for t in tests if (t.get("client", {}).get("failed") or 0) or (t.get("client", {}).get("socket_errors") or 0)]
    for t in tests:
        tag = f"[round {t['round']}/{rounds}] {t['target']} {t['mode']}"
        if t["reconcile"]["result"] != "OK":
            problems.append(f"{tag}: reconcile {t['reconcile']['result']}")
        if t.get("tool_timed_out"):
            problems.append(f"{tag}: the load tool had to be killed")
    for t in failed:
        c = t["client"]
        problems.append(f"[round {t['round']}/{rounds}] {t['target']} {t['mode']}: {c['failed']} {c['failed_what']}, "
                        f"{c.get('socket_errors') or 0} socket errors")
    expected = rounds * len(targets) * len(modes)
    if len(tests) < expected:
        problems.append(f"only {len(tests)} of {expected} tests ran")
    problems.extend(missing_figures(tests, rounds))
    for target in targets:
        if medians[target]["startup_s"] is None:
            problems.append(f"{target}: no startup time")

    summary = {"run": config, "labels": labels, "tests": tests, "startups": starts, "medians": medians,
               "totals": totals, "total_requests": total_requests, "failed_tests": len(failed),
               "problems": problems}
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2, sort_keys=True, default=str)
        f.write("\n")

    write_charts(out_dir, targets, modes, labels, medians, config)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(render_report(config, targets, modes, labels, medians, tests, starts, totals, failed,
                              problems))
    return summary


def missing_figures(tests, rounds):
    """One problem per test that lacks a figure of REQUIRED, naming the figures and why
    when the reason is known (the load tool's figures come through reconcile)."""
    out = []
    for t in tests:
        figures = {**t.get("client", {}), **t}
        missing = [label for key, label in REQUIRED.items() if figures.get(key) is None]
        if missing:
            why = " (reconcile failed, so the load tool's figures were not read)" \
                if t["reconcile"]["result"] == "ERROR" else ""
            out.append(f"[round {t['round']}/{rounds}] {t['target']} {t['mode']}: no "
                       f"{', '.join(missing)}{why}")
    return out


def write_charts(out_dir, targets, modes, labels, medians, config):
    groups = [(m, MODE_LABELS.get(m, m)) for m in modes]
    series = [(t, labels[t]) for t in targets]
    rounds = config.get("rounds") or 0
    sub = (f"median of {rounds} round{'s' if rounds != 1 else ''}, {config.get('vus')} connections, "
           f"{config.get('duration_s')} s per test, {config.get('tool')}")
    rps = {t: {m: medians[t][m]["rps"] for m in modes} for t in targets}
    with open(os.path.join(out_dir, "throughput.svg"), "w") as f:
        f.write(charts.bar_chart("Throughput per test and target", sub, groups, series, rps, "requests per second"))
    p99 = {t: {m: medians[t][m]["p99_ms"] for m in modes} for t in targets}
    p95 = {t: {m: medians[t][m]["p95_ms"] for m in modes} for t in targets}
    with open(os.path.join(out_dir, "latency.svg"), "w") as f:
        f.write(charts.bar_chart("Latency p95 and p99 per test and target", sub, groups, series, p99, "ms",
                              inner=p95, inner_label="p95", outer_label="p99 (value printed)"))


def render_report(config, targets, modes, labels, medians, tests, starts, totals, failed, problems):
    rounds = config.get("rounds") or 0
    tool = config.get("tool") or "?"
    machine = config.get("machine") or {}
    db = config.get("db") or {}
    L = []
    L.append("# Load test comparison: " + ", ".join(labels[t] for t in targets))
    L.append("")
    when = config.get("started_utc", "?")
    L.append(f"Run started {when} UTC: {rounds} round{'s' if rounds != 1 else ''}, "
             f"{len(modes)} test{'s' if len(modes) != 1 else ''} of {config.get('duration_s')} s per target and round, "
             f"{config.get('vus')} connections, load from {config.get('tool_version') or tool}.")
    if config.get("quick"):
        L.append("")
        L.append("**Quick run** (`--quick`): short tests, one round. The figures show that everything works; "
                 "they are not a measurement to quote.")
    L.append("")
    if problems:
        # first, before any figure: what this report could not measure
        L.append(f"**This run is incomplete: {len(problems)} problem{'s' if len(problems) != 1 else ''}.** "
                 "A figure shown as n/a below was not measured; nothing here stands in for it.")
        L.append("")
        L.append("## Problems")
        L.append("")
        for p in problems:
            L.append(f"- {p}")
        L.append("")

    # ---------------------------------------------------------------- results
    L.append("## Results")
    L.append("")
    what = ("wrk's request count over each test's duration; latency is wrk's, from sending a request to "
            "its last byte" if tool == "wrk" else
            "k6's http_reqs rate over each test; latency is http_req_duration")
    L.append(f"Medians of {rounds} round{'s' if rounds != 1 else ''}. Requests per second are {what}.")
    L.append("")
    rows = []
    for m in modes:
        rows.append([f"{MODE_LABELS.get(m, m)}, req/s"] + [fmt_int(medians[t][m]["rps"]) for t in targets])
    for m in modes:
        rows.append([f"{MODE_LABELS.get(m, m)}, p95 / p99"] +
                    [f"{fmt_ms(medians[t][m]['p95_ms'])} / {fmt_ms(medians[t][m]['p99_ms'])} ms" for t in targets])
    if "read" in modes:
        rows.append(["RSS during reads"] + [fmt_mib(medians[t]["read"]["rss_mib"]) for t in targets])
    rows.append(["Startup to first 200"] + [fmt_s(medians[t]["startup_s"]) for t in targets])
    L.append(table(["Test"] + [labels[t] for t in targets], rows))
    L.append("")
    disturbed = [t for t in tests if (t.get("other_cpu_pct") or 0) > BUSY_WARNING_PCT]
    if disturbed:
        names = ", ".join(f"{labels.get(t['target'], t['target'])} {MODE_LABELS.get(t['mode'], t['mode']).lower()}"
                          f"{'' if rounds == 1 else ' r' + str(t['round'])} ({t['other_cpu_pct']:.0f}%)"
                          for t in disturbed)
        L.append(f"**{len(disturbed)} of {len(tests)} tests shared the machine with other work**: besides target, "
                 f"load tool and PostgreSQL, other processes used more than {BUSY_WARNING_PCT:.0f}% of one core "
                 f"during {names}. Their figures are disturbed (see \"Where the limit was\").")
        L.append("")
    n_tests = len(tests)
    counted = sum(v["with_client_figures"] for v in totals.values())
    per_target = "; ".join(
        f"{labels[t]} {totals[t]['requests']:,} in {totals[t]['with_client_figures']} test"
        f"{'s' if totals[t]['with_client_figures'] != 1 else ''}"
        + (f" (of {totals[t]['tests']}: the others have no count)"
           if totals[t]["with_client_figures"] != totals[t]["tests"] else "")
        for t in targets)
    unseen = sum((t.get("server") or {}).get("non2xx") or 0 for t in tests)
    if problems:
        L.append(f"**Not every figure was measured** ({len(problems)} problem{'s' if len(problems) != 1 else ''}, "
                 f"listed above). {tool} counted requests in {counted} of {n_tests} tests: {per_target}.")
        if failed:
            L.append("")
    elif not failed:
        L.append(f"All {n_tests} tests finished with 0 failed requests (0 non-2xx responses, 0 socket errors). "
                 f"Requests counted by {tool}: {per_target}."
                 + (f" The servers counted {unseen} non-2xx answers that {tool} never received: requests in "
                    "flight when a test ended (see \"Client and server counts\")." if unseen else ""))
    if failed:
        L.append(f"**{len(failed)} of {n_tests} tests had failed requests** (requests counted: {per_target}):")
        L.append("")
        L.append(table(["Target", "Round", "Test", "Failed", "Socket errors"],
                       [[labels[t["target"]], t["round"], MODE_LABELS.get(t["mode"], t["mode"]),
                         f"{t['client']['failed']} {t['client']['failed_what']}", t["client"].get("socket_errors") or 0]
                        for t in failed]))
    L.append("")
    base = "node" if "node" in targets else targets[0] if targets else None
    others = [t for t in targets if t != base]
    if base and others:
        L.append(f"Throughput relative to {labels[base]}:")
        L.append("")
        rows = []
        for m in modes:
            b = medians[base][m]["rps"]
            rows.append([MODE_LABELS.get(m, m)] + [
                "n/a" if not b or medians[t][m]["rps"] is None else f"{100.0 * (medians[t][m]['rps'] / b - 1):+.0f}%"
                for t in others])
        L.append(table(["Test"] + [labels[t] for t in others], rows))
        L.append("")
    L.append("![Throughput per test and target](throughput.svg)")
    L.append("")
    L.append("![Latency p95 and p99 per test and target](latency.svg)")
    L.append("")

    # ---------------------------------------------------------------- stability
    L.append("## How stable the rounds were")
    L.append("")
    orders = config.get("orders") or []
    if orders:
        L.append("Order per round (rotated, so no target always goes first): " +
                 "; ".join(f"round {i + 1}: {' '.join(o)}" for i, o in enumerate(orders)) + ".")
        L.append("")
    head = ["Test"] + [f"{labels[t]} " + " / ".join(f"r{r}" for r in range(1, rounds + 1)) for t in targets]
    rows = []
    for m in modes:
        rows.append([MODE_LABELS.get(m, m)] + [" / ".join(fmt_int(v) for v in medians[t][m]["rps_rounds"])
                                              for t in targets])
    L.append(table(head, rows))
    L.append("")
    spreads = [medians[t][m]["rps_spread"] for t in targets for m in modes
               if medians[t][m]["rps_spread"] is not None]
    if rounds > 1:
        L.append("Spread of the rounds, (max − min) / median of req/s:")
        L.append("")
        L.append(table(["Test"] + [labels[t] for t in targets],
                       [[MODE_LABELS.get(m, m)] + [fmt_share(medians[t][m]["rps_spread"], 1, "n/a") for t in targets]
                        for m in modes]))
        L.append("")
    else:
        L.append("One round, so no spread between rounds: these figures carry no measure of their own noise.")
        L.append("")
    if spreads:
        L.append(f"The largest spread inside one target was {100 * max(spreads):.1f}%.")
        L.append("")
    st_rows = [[labels[t]] + [fmt_s(v) for v in medians[t]["startup_rounds_s"]] for t in targets]
    L.append("Startup to first 200 of `GET /notes?tag=js`, per round (from spawning the process, polled every 5 ms):")
    L.append("")
    L.append(table(["Target"] + [f"r{r}" for r in range(1, rounds + 1)],
                   [row + ["n/a"] * (rounds + 1 - len(row)) for row in st_rows]))
    L.append("")

    # ---------------------------------------------------------------- limits
    L.append("## Where the limit was")
    L.append("")
    tcpu, lcpu = config.get("target_cpu"), config.get("tool_cpu")
    if tcpu is not None:
        L.append(f"Each target ran pinned to CPU {tcpu} (`taskset -c {tcpu}`), {tool} to CPU {lcpu}; PostgreSQL "
                 "was not pinned and shared both. CPU is % of one core over the window (from /proc), medians of "
                 "the rounds.")
    else:
        L.append("This machine has fewer than two usable CPUs: nothing was pinned.")
    L.append("")
    rows = []
    for m in modes:
        rows.append([f"{MODE_LABELS.get(m, m)}, target"] + [fmt_pct(medians[t][m]["cpu_pct"]) for t in targets])
    for m in modes:
        rows.append([f"{MODE_LABELS.get(m, m)}, {tool}"] + [fmt_pct(medians[t][m]["tool_cpu_pct"]) for t in targets])
    if any(medians[t][m]["pg_cpu_pct"] is not None for t in targets for m in modes):
        for m in modes:
            rows.append([f"{MODE_LABELS.get(m, m)}, PostgreSQL"] + [fmt_pct(medians[t][m]["pg_cpu_pct"])
                                                                  for t in targets])
    if any(medians[t][m]["other_cpu_pct"] is not None for t in targets for m in modes):
        for m in modes:
            rows.append([f"{MODE_LABELS.get(m, m)}, everything else"] + [fmt_pct(medians[t][m]["other_cpu_pct"])
                                                                        for t in targets])
    L.append(table(["CPU, % of one core"] + [labels[t] for t in targets], rows))
    L.append("")
    L.append(f"A {tool} figure near 100% means the load generator, not the target, set the pace of that test. "
             "\"Everything else\" is the time both cores spent in processes (/proc/stat user + system) minus "
             "target, load tool and PostgreSQL: other processes competing for the same two cores. Where it is well "
             "above zero, the figures of that test were disturbed. Interrupt and steal time per core are in "
             "summary.json (`cores_pct`).")
    L.append("")
    db_modes = [m for m in modes if m != "json"]
    if db_modes:
        L.append("Requests waiting for one of the 20 pool connections (mean of `notes_db_pool_waiting_requests`, "
                 "scraped every second, over the window):")
        L.append("")
        rows = [[f"{MODE_LABELS.get(m, m)}, requests waiting"] +
                [fmt_fixed(medians[t][m]["pool_waiting_mean"], 1) for t in targets] for m in db_modes]
        rows += [[f"{MODE_LABELS.get(m, m)}, connections open"] +
                 [fmt_fixed(medians[t][m]["pool_connections_mean"], 1) for t in targets] for m in db_modes]
        L.append(table(["Test"] + [labels[t] for t in targets], rows))
        L.append("")

    # ---------------------------------------------------------------- event loop and memory
    L.append("## Event loop and memory")
    L.append("")
    rows = []
    for m in modes:
        rows.append([f"Event loop delay, {MODE_LABELS.get(m, m).lower()}"] +
                    [f"{fmt_ms(medians[t][m]['lag_mean_ms'])} ms" for t in targets])
    if "read" in modes:
        rows.append(["Used heap, reads"] + [fmt_mib(medians[t]["read"]["heap_used_mib"]) for t in targets])
    for m in modes:
        rows.append([f"RSS, {MODE_LABELS.get(m, m).lower()}"] + [fmt_mib(medians[t][m]["rss_mib"]) for t in targets])
    L.append(table(["Test"] + [labels[t] for t in targets], rows))
    L.append("")
    L.append("Event loop delay is the mean lateness of a 100 ms timer over the window (delta of "
             "`notes_eventloop_delay_seconds_sum` over delta of `_count`), the seed's lagSum/lagN. RSS is the "
             "mean of /proc samples over the window. Used heap is what each target reports of its own heap: "
             "`nodejs_heap_size_used_bytes` on the peer (`process.memoryUsage().heapUsed`: V8's on Node and Deno, "
             "JavaScriptCore's on Bun), `notes_malloc_heap_used_bytes` on notesd (glibc malloc's bytes in use), "
             "so it compares only between Node and Deno; RSS compares across all. `process_heap_bytes` (VmData, "
             "the data segment's virtual size) is kept in summary.json as `vmdata_mib` and not shown: it is not a "
             "used heap.")
    L.append("")

    # ---------------------------------------------------------------- reconciliation
    L.append("## Client and server counts")
    L.append("")
    L.append(f"For every test, `loadtests/reconcile` compares what {tool} counted with the deltas of the target's "
             "own `http_requests_total` between a scrape before and after the test. The tolerance is the number of "
             "connections: the tool stops counting when its time is up, while each connection may still have a "
             "request in flight that the server answers afterwards; the server may count that many more, never "
             "fewer. Latency: client p99 minus the server's p99 (from its histogram buckets), i.e. network, "
             "kernel queues and the tool's overhead.")
    L.append("")
    rows = []
    for t in sorted(tests, key=lambda t: (t["round"], targets.index(t["target"]) if t["target"] in targets else 0,
                                          modes.index(t["mode"]) if t["mode"] in modes else 0)):
        r = t["reconcile"]
        if r["result"] == "ERROR":
            rows.append([labels.get(t["target"], t["target"]), t["round"], MODE_LABELS.get(t["mode"], t["mode"]),
                         "n/a", "n/a", "n/a", "n/a", "n/a", f"ERROR: {r.get('error', '')}"])
            continue
        d = r["client_minus_server_ms"].get("p99")
        lat = (t.get("server") or {}).get("latency_ms", {}).get("all", {})
        bucket = lat.get("p99_bucket")
        sp99 = "n/a" if lat.get("p99") is None else (
            f"{fmt_ms(lat['p99'])} ms" + (f" ({fmt_bound(bucket[0])}–{fmt_bound(bucket[1])})" if bucket else ""))
        result = r["result"] if r["result"] == "OK" else f"**{r['result']}**"
        rows.append([labels.get(t["target"], t["target"]), t["round"], MODE_LABELS.get(t["mode"], t["mode"]),
                     f"{r['client']:,}", f"{r['server']:,}", f"{r['difference']:+d}", r["tolerance"],
                     f"{fmt_ms(t['client'].get('p99_ms'))} ms", sp99, "n/a" if d is None else f"{d:+.2f} ms",
                     result])
    L.append(table(["Target", "Round", "Test", "Client", "Server", "Difference", "Tolerance",
                    "Client p99", "Server p99 (bucket)", "Client − server", "Result"], rows))
    L.append("")
    L.append("The server's p99 is interpolated inside the histogram bucket that holds it (bounds in ms), as "
             "`histogram_quantile()` does; a client − server difference smaller than that bucket, or below "
             "zero, says only that the true value lies somewhere in the bucket.")
    L.append("")
    extras = []
    for t in tests:
        srv = t.get("server") or {}
        bad = {k: n for k, n in (srv.get("by_route_status") or {}).items()
               if n and k.rsplit(" ", 1)[-1].isdigit() and not 200 <= int(k.rsplit(" ", 1)[-1]) <= 299
               and k.rsplit(" ", 1)[-1] != "0"}
        if srv.get("client_left") or bad:
            extras.append([labels.get(t["target"], t["target"]), t["round"], MODE_LABELS.get(t["mode"], t["mode"]),
                           srv.get("client_left") or 0,
                           ", ".join(f"{k}: {n}" for k, n in sorted(bad.items())) or "0"])
    if extras:
        L.append(f"What the servers counted beyond {tool}'s answers, in the tests where it was more than plain "
                 "answers: status 0 (the client had gone before the answer was written) and non-2xx answers. "
                 "They are requests in flight when the test ended and are part of the difference above."
                 + (" Requests counted on path `other` are ones the server could not route (the Express peer on "
                    "Deno answers a request whose connection closes before its body was read with 400 there); "
                    "reconcile checks that they fit in what the tool sent and did not see answered."
                    if any(" other " in e[4] for e in extras) else ""))
        L.append("")
        L.append(table(["Target", "Round", "Test", "Status 0", "Non-2xx on the server"], extras))
        L.append("")
    mism = [t for t in tests if t["reconcile"]["result"] != "OK"]
    if mism:
        L.append("Mismatches:")
        L.append("")
        for t in mism:
            for m in t["reconcile"].get("mismatches", []) or [t["reconcile"].get("error", "")]:
                L.append(f"- {labels.get(t['target'], t['target'])} round {t['round']} {t['mode']}: `{m}`")
        L.append("")
    else:
        L.append(f"All {len(tests)} tests reconciled.")
        L.append("")

    # ---------------------------------------------------------------- setup
    L.append("## Setup")
    L.append("")
    L.append(f"- Machine: {machine.get('cpu') or 'unknown CPU'}, {machine.get('cores')} cores, "
             f"{machine.get('memory_mib') or '?'} MiB, {machine.get('os') or 'Linux'}, kernel {machine.get('kernel')}. "
             "Target, load tool and PostgreSQL all ran on it; the seed used three machines.")
    L.append(f"- PostgreSQL {db.get('version') or '?'} on {db.get('host')}:{db.get('port')} "
             f"({'the private instance of sql/localdb.sh' if db.get('private') else 'DB_URL'}), 20 pool connections "
             "per target.")
    L.append("- For each target in each round: drop, recreate and reseed the notes table (200,000 rows, vacuum "
             "analyze, checkpoint); start the target; poll `GET /notes?tag=js` until it answers 200 (the startup "
             f"figure); wait {config.get('warmup_s'):g} s; run " + ", ".join(modes) +
             f" for {config.get('duration_s')} s each, {config.get('pause_s'):g} s apart; stop it with SIGTERM.")
    if tool == "wrk":
        L.append(f"- Load: `wrk -t1 -c{config.get('vus')} -d{config.get('duration_s')}s --timeout 10s -s "
                 "loadtests/wrk/notes.lua` with `MODE` set and `BREAKDOWN=1` (per-request-name counts). k6 was not "
                 "on PATH; wrk is a closed model like the seed's constant-vus k6 test, one request in flight per "
                 "connection.")
    else:
        L.append(f"- Load: `k6 run loadtests/k6/notes.js` with `MODE`, `VUS={config.get('vus')}`, "
                 f"`DURATION={config.get('duration_s')}s` (constant-vus, as the seed).")
    L.append("- Targets: " + "; ".join(
        f"{labels[t]}: " + ("`build/notesd` with `SERVER_TIMING=0`" if t in ("notesd", "native") else
                            f"`{'deno run -A server.js' if t == 'deno' else t + ' server.js'}` in loadtests/peers/express")
        for t in targets) + ". All listen on 127.0.0.1; metrics scraped once per second from one scraper.")
    L.append(f"- Averages over a test (pool, event loop, RSS, CPU) use the window from "
             f"{'20 s' if (config.get('duration_s') or 0) >= 100 else '20% of the duration'} after its start to "
             "its end.")
    L.append("- Not done here, unlike the seed: dropping the page cache before each start (it would need root and "
             "disturb everything else on the machine), Prometheus remote write.")
    L.append("")
    L.append("## Files")
    L.append("")
    L.append("`summary.json` holds every figure of every test. Raw files per test in `r<round>/<target>/<mode>/`: "
             f"the tool's output (`{'wrk.txt' if tool == 'wrk' else 'k6-summary.json'}`), `before.prom` and "
             "`after.prom`, every scrape in `metrics.prom.gz` (and as OpenMetrics in `metrics.om`, which "
             "`docker/replay/backfill.sh` loads into Prometheus), `/proc` samples in `proc.jsonl`, and "
             "`reconcile.txt`/`reconcile.json`; per target and round, `start.json` and `target.log`.")
    L.append("")
    return "\n".join(L)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: analyze.py RESULTS_DIR", file=sys.stderr)
        return 2
    if not os.path.exists(os.path.join(argv[0], "run.json")):
        print(f"analyze.py: {argv[0]} has no run.json (not a loadtests/run.sh results directory)", file=sys.stderr)
        return 2
    summary = analyze(argv[0])
    print(os.path.join(argv[0], "report.md"))
    for p in summary["problems"]:
        print(f"problem: {p}")
    return 1 if summary["problems"] else 0
