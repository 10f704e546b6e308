"""Turns a results directory of loadtests/run.sh into summary.json, report.md
and two SVG charts. run.sh calls it at the end; run it again by hand with

    /usr/bin/python3 loadtests/harness/analyze.py loadtests/results/<stamp>

What it reads, per test (OUT/r<round>/<target>/<mode>/):
  test.json        start and end of the load, tool, exit status
  reconcile.json   client and server counts and latency (loadtests/reconcile --json)
  metrics.prom.gz  the once-a-second scrapes of the target's /metrics
  proc.jsonl       the once-a-second /proc samples (target, load tool, PostgreSQL, cores)
and per target and round OUT/r<round>/<target>/start.json (startup time, exit code).

A part of the harness (harness_command.py calls analyze() after the last test).
Each test's own figures are harness_figures.py's, the report's text harness_report.py's;
here: the medians over rounds, the totals, the problems, the charts, summary.json.
"""
import json
import os
import re
import sys

from loadlib import charts
from loadlib.commands.harness import arrivals
from loadlib.commands.harness.harness_figures import analyze_test, read_json
from loadlib.commands.harness.harness_report import MODE_LABELS, TARGET_NAMES, Figures, render_report
from loadlib.quantile import median

# Figures every test of a complete run has; one missing is a problem, never a silent n/a.
REQUIRED = {"rps": "req/s", "p95_ms": "p95", "p99_ms": "p99", "rss_mib": "RSS", "cpu_pct": "CPU",
            "lag_mean_ms": "event loop delay", "heap_used_mib": "used heap"}
# the medians per target and mode: key -> (figure, the part of a test's entry it is in)
MEDIANS = {"p50_ms": ("p50_ms", "client"), "p95_ms": ("p95_ms", "client"),
           "p99_ms": ("p99_ms", "client"), "server_p99_ms": ("p99_ms", "server"),
           "pool_waiting_mean": ("pool_waiting_mean", None),
           "pool_connections_mean": ("pool_connections_mean", None),
           "lag_mean_ms": ("lag_mean_ms", None), "heap_used_mib": ("heap_used_mib", None),
           "vmdata_mib": ("vmdata_mib", None), "rss_mib": ("rss_mib", None),
           "uss_mib": ("uss_mib", None), "pss_mib": ("pss_mib", None),
           "cpu_pct": ("cpu_pct", None), "tool_cpu_pct": ("tool_cpu_pct", None),
           "pg_cpu_pct": ("pg_cpu_pct", None), "other_cpu_pct": ("other_cpu_pct", None)}


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


def read_results(out_dir, config):
    """(every test's figures, every start.json, the problems of the starts) of a results
    directory, in round, target and mode order."""
    targets, modes, rounds = config.get("targets") or [], config.get("modes") or [], config.get("rounds") or 0
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
    return tests, starts, problems


def round_values(tests, target, mode, key, sub=None):
    """One figure of a target's test in every round, in round order (None where missing)."""
    vals = []
    for t in sorted(tests, key=lambda t: t["round"]):
        if t["target"] == target and t["mode"] == mode:
            vals.append(t.get(sub, {}).get(key) if sub else t.get(key))
    return vals


def medians_of(tests, starts, targets, modes):
    """{target: {"startup_s", "startup_rounds_s", mode: {figure: median over rounds}}}."""
    medians = {}
    for target in targets:
        medians[target] = {"startup_s": median([s.get("startup_s") for s in starts if s["target"] == target]),
                           "startup_rounds_s": [s.get("startup_s") for s in sorted(starts, key=lambda s: s["round"])
                                                if s["target"] == target]}
        for mode in modes:
            rps = round_values(tests, target, mode, "rps", "client")
            m = median(rps)
            known = [v for v in rps if v is not None]
            medians[target][mode] = {
                "rps": m, "rps_rounds": rps,
                "rps_spread": (max(known) - min(known)) / m if m and len(known) > 1 else None}
            for name, (key, sub) in MEDIANS.items():
                medians[target][mode][name] = median(round_values(tests, target, mode, key, sub))
    return medians


def problems_of(tests, medians, failed, config):
    """What this run could not measure or did not pass: reconcile results, killed tools,
    failed requests, tests that did not run, missing figures, missing startups."""
    targets, modes, rounds = config.get("targets") or [], config.get("modes") or [], config.get("rounds") or 0
    problems = []
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
    return problems


def analyze(out_dir):
    """Reads a results directory, writes summary.json, report.md, throughput.svg and
    latency.svg into it, and returns the summary (with a "problems" list)."""
    config = read_json(os.path.join(out_dir, "run.json"), {})
    targets = config.get("targets") or []
    modes = config.get("modes") or []
    tests, starts, problems = read_results(out_dir, config)
    labels = {t: target_label(t, config, tests) for t in targets}
    medians = medians_of(tests, starts, targets, modes)
    totals = {target: {"tests": sum(1 for t in tests if t["target"] == target),
                       "with_client_figures": sum(1 for t in tests if t["target"] == target and "client" in t),
                       "requests": sum(t.get("client", {}).get("requests", 0) for t in tests
                                       if t["target"] == target)}
              for target in targets}
    total_requests = sum(v["requests"] for v in totals.values())
    failed = [t for t in tests if (t.get("client", {}).get("failed") or 0) or (t.get("client", {}).get("socket_errors") or 0)]
    problems += problems_of(tests, medians, failed, config)

    summary = {"run": config, "labels": labels, "tests": tests, "startups": starts, "medians": medians,
               "totals": totals, "total_requests": total_requests, "failed_tests": len(failed),
               "problems": problems}
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2, sort_keys=True, default=str)
        f.write("\n")

    write_charts(out_dir, targets, modes, labels, medians, config)
    config["arrivals_chart"] = arrivals.write_chart(out_dir, tests, MODE_LABELS)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(render_report(Figures(config, targets, modes, labels, medians, tests, starts, totals, failed,
                                      problems)))
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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv in (["-h"], ["--help"]):
        print("usage: analyze.py RESULTS_DIR\n\n" + __doc__.split("\n\n")[0])
        return 0
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

