"""bench --compare's figures and report, from the raw records of bench.json alone (so
`--report-from` makes the same report again: the intervals come from a seeded
generator): per case and figure the rounds in which both builds ran validly, the
ratio of medians A / B with its bootstrap interval, the signed-rank test and the
verdict (loadlib.stats); callgrind's instructions per request; the noise each build
showed across its rounds.
"""
from loadlib import stats
from loadlib.commands.bench.bench_figures import DB_TESTS, NOISY_CORES
from loadlib.quantile import median
from loadlib.report import fmt, fmt_range, fmt_share, table

MIB = 1024 * 1024
# the figures compared: key of a run record, title, True when higher is better, the
# tests it applies to (None: all), the unit it is shown in (a divisor), and how the
# report words a worse and a better A
FIGURES = [
    ("rps", "req/s", True, None, 1, ("slower", "faster")),
    ("cpu_us_per_req", "notesd CPU µs/request", False, None, 1, ("slower", "faster")),
    ("db_cpu_us_per_req", "PostgreSQL CPU µs/query", False, DB_TESTS, 1, ("slower", "faster")),
    ("startup_ms", "start-up ms", False, None, 1, ("slower", "faster")),
    ("uss_peak_bytes", "peak private memory (USS) MiB", False, None, MIB,
     ("more memory", "less memory")),
    ("queries_per_sync", "queries per sync", True, DB_TESTS, 1,
     ("fewer queries per sync", "more queries per sync")),
]
# callgrind counts every instruction, but a few dozen per request depend on time (the
# latency histograms' bucket search, h2o's once-a-second Date header): identical builds
# differ by up to ~0.1% on GET /notes/1. A difference in instructions counts from this
# fraction, or from the rounds' own spread when that is larger, and only when the two
# builds' rounds do not overlap.
INSTRUCTION_RESOLUTION = 0.0025


def paired(runs, case, key, unit=1):
    """(A's figures, B's figures, rounds) over the rounds in which both sides' runs of
    `case` are valid and have the figure (divided by `unit`)."""
    by_round = {}
    for r in runs:
        if r.get("case") == case and r.get("valid") and r.get(key) is not None:
            by_round.setdefault(r["round"], {})[r["side"]] = r[key] / unit
    rounds = sorted(k for k, v in by_round.items() if "A" in v and "B" in v)
    return [by_round[k]["A"] for k in rounds], [by_round[k]["B"] for k in rounds], rounds


def comparison_rows(data):
    """One row per case and figure: both sides' dispersion, the paired ratios' range and
    stats.compare_paired's result. Each comparison draws from its own seed (the run's
    seed plus its position), so rows do not depend on which other rows there are."""
    m = data["meta"]
    rows = []
    for i, case in enumerate(data["cases"]):
        for j, (key, title, higher, only, unit, words) in enumerate(FIGURES):
            if only and case["test"] not in only:
                continue
            a, b, rounds = paired(data["runs"], case["case"], key, unit)
            if not rounds and key in ("uss_peak_bytes", "queries_per_sync"):
                continue                      # runs from before the figure was taken
            c = stats.compare_paired(a, b, higher, m["confidence"], m["resamples"],
                                     m["seed"] + 100 * i + j)
            c.update(case=case["case"], test=case["test"], figure=key, title=title,
                     rounds=rounds, a=stats.dispersion(a), b=stats.dispersion(b),
                     pair_ratios=stats.dispersion([x / y for x, y in zip(a, b) if y]),
                     words=dict(zip(("slower", "faster"), words)))
            rows.append(c)
    return rows


def verdict_words(c):
    """The verdict as the report words it for this figure ("slower", "more memory", ...)."""
    if c["verdict"] in ("slower", "faster"):
        return c.get("words", {}).get(c["verdict"], c["verdict"])
    return stats.describe_verdict(c)


def instruction_rows(callgrind):
    """Per path: both builds' instructions per request over the callgrind rounds, A / B,
    the resolution and the verdict ("more instructions", "fewer instructions", "no
    difference")."""
    if not callgrind or "A" not in callgrind:
        return []
    rows = []
    for path in callgrind["paths"]:
        a, b = callgrind["A"][path], callgrind["B"][path]
        da, db = stats.dispersion(a), stats.dispersion(b)
        r = da["median"] / db["median"] if db["median"] else None
        resolution = max(INSTRUCTION_RESOLUTION, da["rel"] or 0, db["rel"] or 0)
        apart = max(a) < min(b) or max(b) < min(a)
        verdict = "no difference"
        if r is not None and apart and abs(r - 1) > resolution:
            verdict = "more instructions" if r > 1 else "fewer instructions"
        rows.append({"path": path, "a": da, "b": db, "ratio": r, "resolution": resolution,
                     "verdict": verdict})
    return rows


def fmt_count(v):
    return "–" if v is None else f"{v:,.0f}"


def fmt_interval(c):
    if c["low"] is None:
        return "–"
    return f"{c['low']:.3f}–{c['high']:.3f}"


def summary_lines(rows, instructions):
    """The verdicts in a few lines: what was slower, what faster, how close the rest
    came to telling."""
    out = []
    for verdict in ("slower", "faster"):
        found = {}
        for r in rows:
            if r["verdict"] == verdict:
                found.setdefault(verdict_words(r), []).append(r)
        for words, rs in found.items():
            out.append(f"- **A: {words}** on " + "; ".join(
                f"{r['case']} {r['title']} ({r['ratio']:.3f}, interval {fmt_interval(r)}, "
                f"p = {r['p']:.2g})" for r in rs))
    rps = [r for r in rows if r["figure"] == "rps" and r["verdict"] == "no difference"]
    if rps:
        out.append("- no difference detected in req/s on " + ", ".join(
            f"{r['case']} (±{100 * r['plus_minus']:.1f}%)" for r in rps))
    few = [r for r in rows if r["verdict"] == "too few rounds"]
    if few:
        out.append(f"- {len(few)} figure(s) had fewer than 2 valid pairs: no comparison")
    for r in instructions:
        out.append(f"- instructions per request, GET {r['path']}: {fmt_count(r['a']['median'])} "
                   f"against {fmt_count(r['b']['median'])} ({r['ratio']:.4f}): {r['verdict']}")
    if not out:
        out.append("- nothing was compared")
    return out


def head_lines(data):
    m = data["meta"]
    sides = m.get("sides") or {}
    out = [f"# notesd compared: A against B — {m['started']}", ""]
    if m.get("quick"):
        out += ["**`--quick`: indicative only** — a smoke test of the comparison: runs of "
                f"{m['duration_s']} s are too short for figures to quote.", ""]
    for side in "AB":
        s = sides.get(side) or {}
        out.append(f"- {side}: {s.get('describe', '?')}, sha256 {str(s.get('sha256'))[:12]}…")
    conf = 100 * m["confidence"]
    out += [
        f"- {m['rounds']} rounds; in each, every case runs A and B back to back, the order "
        "alternating from case to case and round to round (the cases in the same order every "
        "round); each run a fresh start of the binary, a "
        f"{m['warmup_s']} s warm-up and a {m['duration_s']} s `wrk -t1 -c{m['connections']}` "
        "run; the table reset before a pair of database runs when a write came before it",
        f"- layout: {m['layout']}",
        f"- statistics: the ratio of medians A / B with a {conf:g}% percentile bootstrap "
        f"interval over the paired rounds ({m['resamples']} resamples, seed {m['seed']}), and "
        "Wilcoxon's exact signed-rank test of the paired log-ratios; \"slower\" or \"faster\" "
        f"only when the interval excludes 1 and the test agrees (p < {1 - m['confidence']:.2g}, "
        f"which takes at least {stats.min_pairs(m['confidence'])} valid pairs); otherwise "
        "\"no difference detected (±X%)\", X being the largest difference the interval leaves "
        "possible",
        f"- host: {m['host'].get('cpu')} · {m['host'].get('cores')} CPUs · kernel "
        f"{m['host'].get('kernel')} · load before start {m['host'].get('loadavg')}",
        "- versions: " + "; ".join(f"{k} {v}" if k.lower() not in v.lower() else v
                                  for k, v in m["versions"].items() if v),
    ]
    other = sorted(r["other_cores"] for r in data["runs"] if r.get("other_cores") is not None)
    if other:
        out.append(f"- other load during the runs (cores): median {fmt(median(other), 2)}, max "
                   f"{fmt(other[-1], 2)}" + (" — the machine was busy; the pairs share it, but "
                                             "the intervals are wider for it"
                                             if median(other) > NOISY_CORES else ""))
    for n in data.get("notes") or []:
        out.append(f"- note: {n}")
    out.append("")
    return out


def verdict_section(rows, instructions, m):
    out = ["## Verdicts", ""] + summary_lines(rows, instructions) + [""]
    trows = [[r["case"], r["title"], fmt_range(r["a"]), fmt_range(r["b"]),
              "–" if r["ratio"] is None else f"{r['ratio']:.3f}", fmt_interval(r),
              "–" if r["p"] is None else f"{r['p']:.2g}", r["n"], verdict_words(r)]
             for r in rows]
    out.append(table(["case", "figure", "A median (min–max)", "B median (min–max)",
                      "A / B (medians)", f"{100 * m['confidence']:g}% interval",
                      "p (signed rank)", "pairs", "verdict"], trows))
    out += ["", "\"slower\" means worse for A whichever way the figure points: fewer req/s, more "
            "CPU per request or query, a longer start-up; \"more memory\", a higher peak of "
            "private memory (USS, /proc/PID/smaps_rollup, sampled every 100 ms).", ""]
    return out


def instruction_section(instructions, callgrind):
    if not callgrind:
        return []
    out = ["## Instructions per request (callgrind)", ""]
    if callgrind.get("error"):
        return out + [f"callgrind failed: {callgrind['error']}", ""]
    trows = [[f"GET {r['path']}", fmt_range(r["a"], fmt_count), fmt_range(r["b"], fmt_count),
              f"{r['ratio']:.4f}", f"±{100 * r['resolution']:.2f}%", r["verdict"]]
             for r in instructions]
    out.append(table(["request", "A (min–max)", "B (min–max)", "A / B", "resolution",
                      "verdict"], trows))
    clients = callgrind.get("clients", 1)
    on = ("one keep-alive connection" if clients == 1
          else f"{clients} keep-alive connections at once")
    out += ["", f"{callgrind['rounds']} round(s) per build, alternating, of "
            f"{callgrind['requests']} requests on {on} "
            "(tests/tools/callgrind_per_request.py: the difference of two runs' totals, so "
            "start-up and shutdown cancel; every instruction notesd, h2o, libpq and libc run "
            "in user space). A few dozen instructions per request depend on time (the latency "
            "histograms' bucket search, h2o's Date header once a second): identical builds "
            f"differ by up to ~0.1%, so a difference counts from {100 * INSTRUCTION_RESOLUTION:g}% "
            "(or the rounds' own spread, when larger) and only when the builds' rounds do not "
            "overlap.", ""]
    return out


def noise_section(rows):
    out = ["## The noise", "",
           "How far each build's rounds spread ((max − min) / median), and the range of the "
           "paired ratio A / B round by round. When the pair's ratio spreads much less than "
           "either build, the machine moved both alike and the pairing took it out.", ""]
    trows = [[r["case"], r["title"], fmt_share(r["a"]["rel"], 1), fmt_share(r["b"]["rel"], 1),
              "–" if r["pair_ratios"]["min"] is None else
              f"{r['pair_ratios']['min']:.3f}–{r['pair_ratios']['max']:.3f}"] for r in rows]
    out.append(table(["case", "figure", "A spread", "B spread", "A / B per round"], trows))
    out.append("")
    return out


def pair_runs_section(runs):
    out = ["## Every run", ""]
    trows = []
    for r in runs:
        trows.append([r["round"], r.get("case", r["test"]), r.get("side", "?") +
                      (" (first)" if r.get("first") else ""), fmt(r.get("rps")),
                      fmt(r.get("cpu_us_per_req")), fmt(r.get("db_cpu_us_per_req")),
                      fmt(r.get("startup_ms")),
                      fmt(r.get("other_cores"), 2) + (" ⚠" if (r.get("other_cores") or 0) >
                                                      NOISY_CORES else ""),
                      "yes" if r.get("valid") else f"NO: {r.get('invalid_reason')}"])
    out.append(table(["round", "case", "side", "req/s", "notesd CPU µs/req",
                      "PostgreSQL CPU µs/query", "start-up ms", "other load", "valid"], trows))
    out.append("")
    return out


def compare_markdown(data):
    """The comparison's report."""
    rows = comparison_rows(data)
    instructions = instruction_rows(data.get("callgrind"))
    out = head_lines(data)
    out += verdict_section(rows, instructions, data["meta"])
    out += instruction_section(instructions, data.get("callgrind"))
    out += noise_section(rows)
    out += pair_runs_section(data["runs"])
    return "\n".join(out)
