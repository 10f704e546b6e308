"""bench's Markdown report: one function per section, each from the figures
bench_figures.py computes (and the raw runs), put together by bench_markdown().
The sweep's and --netns's sections are their parts' own (sweep.py,
bench_netns.py) and come in as `extra`."""

from loadlib.commands.bench.bench_figures import MIB, METRICS, NOISY_CORES, PATHS, RUN_METRICS
from loadlib.quantile import median
from loadlib.report import fmt, fmt_range, fmt_ratio, fmt_share, table


def raw_tables(summary, tests, order):
    parts = []
    for test in tests:
        rows = []
        for label in order:
            e = summary.get(label, {}).get(test)
            if not e:
                continue
            med = {m: e[m]["median"] for m in RUN_METRICS}
            rows.append([
                label,
                fmt_range(e["rps"]),
                fmt(med["p50_ms"]),
                fmt_range(e["p99_ms"]),
                fmt_range(e["cpu_us_per_req"]),
                fmt_share(med["server_util"]),
                f"{fmt(med['rss_mib'])} / {fmt(med['pss_mib'])} / {fmt(med['uss_mib'])}",
                fmt(med["db_cpu_us_per_req"]),
                fmt(med["loadgen_cpu_us_per_req"]),
                f"{fmt_share(med['cpu0_busy'])} / {fmt_share(med['cpu1_busy'])}",
                fmt(med["other_cores"], 2),
                fmt(med["lag_mean_ms"]),
                f"{e['valid_rounds']}/{e['rounds']}",
            ])
        if rows:
            parts.append(f"### {test} ({PATHS[test]})\n\n" + table(
                ["subject", "req/s (min–max)", "p50 ms", "p99 ms (min–max)",
                 "CPU µs/req (min–max)", "server core use", "peak RSS / PSS / USS MiB",
                 "DB CPU µs/req",
                 "load-gen CPU µs/req",
                 "CPU0 / CPU1 busy", "other load (cores)", "lag mean ms", "valid"], rows))
    return "\n\n".join(parts)


def startup_table(summary, order):
    rows = []
    for label in order:
        e = summary.get(label, {}).get("startup")
        if not e or not e["startup_ms"]["n"]:
            continue
        st = e["startup_ms"]
        rows.append([label, e.get("path") or "–", fmt_range(st), st["n"],
                     ", ".join(fmt(v) for v in st["values"])])
    if not rows:
        return "(no startups measured)"
    return table(["subject", "first 200 of", "median ms (min–max)", "starts", "each start, ms"],
                 rows)


# CPU 0's busy share from which a pgbench run on CPU 1 counts as saturating PostgreSQL
SATURATED = 0.95


def with_range(value, rounds, show=fmt):
    """A figure computed from medians, with the range of the same figure computed round by
    round when there are two rounds or more: '0.69 (0.65–0.72)'."""
    if value is None:
        return "–"
    if not rounds or rounds.get("n", 0) < 2:
        return show(value)
    return f"{show(value)} ({show(rounds['min'])}–{show(rounds['max'])})"


def ceiling_section(rows, skipped):
    """The limits of the database mixes on both cores, what the wake-ups across cores cost
    PostgreSQL, and notesd against the modelled ceiling of its own layout, as Markdown."""
    out = ["## Database mixes: the limits on both cores, the wake-ups across cores, and the "
           "ceiling of notesd's layout", ""]
    trows = []
    for r in rows:
        trows.append([
            r["subject"], r["mode"], r["test"],
            fmt(r["pgbench_other_core_rps"]), fmt(r["pgbench_db_core_rps"]),
            fmt(r["pg_us_server_core"]), fmt(r["pg_us_db_core"]),
            ("+" if (r["wakeup_us"] or 0) > 0 else "") + fmt(r["wakeup_us"]),
            fmt(r["loadgen_us_per_request"]), with_range(r["ceiling_rps"], r["ceiling_rounds"]),
            with_range(r["rps"], r["rps_rounds"]) if r["subject"] not in skipped else "SKIP",
            with_range(r["vs_ceiling"], r["vs_ceiling_rounds"], fmt_ratio),
            fmt_ratio(r["vs_other_core"]), fmt_ratio(r["vs_db_core"]),
            fmt(r["ceiling_same_core_rps"]), fmt_ratio(r["vs_ceiling_same_core"]),
            fmt(r["notesd_pg_us_per_query"]),
            ("+" if (r["pg_us_extra"] or 0) > 0 else "") + fmt(r["pg_us_extra"]),
            fmt(r.get("queries_per_sync")), fmt(r.get("pgbench_queries_per_sync"))])
    if not trows:
        return ""
    out.append(table(["subject", "queries", "mix", "pgbench, server's core (CPU 1) q/s",
                      "pgbench, database's core (CPU 0) q/s",
                      "PostgreSQL CPU µs/query, client on CPU 1",
                      "PostgreSQL CPU µs/query, client on CPU 0", "cross-core wake-ups µs/query",
                      "wrk CPU µs/req", "ceiling of notesd's layout req/s (min–max)",
                      "notesd req/s (min–max)", "notesd / ceiling (min–max)",
                      "notesd / pgbench CPU 1", "notesd / pgbench CPU 0",
                      "same-core ceiling req/s", "notesd / same-core ceiling",
                      "PostgreSQL CPU µs/query (notesd)", "notesd − pgbench CPU 1, µs",
                      "queries per sync (notesd)", "queries per sync (pgbench)"], trows))
    out.append("")
    out += wakeup_lines(rows)
    out.append("The ceiling of notesd's layout is 1 / (PostgreSQL's CPU per query under the "
               "pgbench on CPU 1 + wrk's CPU per request in notesd's run): what CPU 0 carries "
               "if it does nothing but PostgreSQL's work for statements sent from the other "
               "core, as notesd sends them, and wrk's work for notesd's requests. The "
               "same-core ceiling puts PostgreSQL's CPU per query under the pgbench on CPU 0 "
               "instead, with no wake-up across cores: a ceiling a server on CPU 1 cannot "
               "reach. Its range pairs the figures round by round. pgbench on CPU 1 leaves CPU "
               "0 to PostgreSQL alone, so its q/s is generous (notesd's runs give part of CPU "
               "0 to wrk); pipelined pgbench sends 16 statements per `\\startpipeline` "
               "block and its q/s counts statements. The last two columns: PostgreSQL's CPU "
               "per query under notesd, and how much more it is than under the pgbench of "
               "the same layout (see loadtests/bench.d/README.md, \"PostgreSQL's CPU per "
               "query\"). Queries per sync: the statements on the notes table "
               "(pg_stat_statements) over the transactions the database ended "
               "(pg_stat_database) during the run; a sync point ends an "
               "implicit transaction, so this is the size of a batch (1 without one; the "
               "pgbench column is the limit's: 16 pipelined).")
    if skipped:
        out.append("")
    for s, why in skipped.items():
        out.append(f"- {s}: SKIP — {why}")
    out.append("")
    return "\n".join(out)


def wakeup_lines(rows):
    """One sentence per query mode: PostgreSQL's CPU per query with the client on the
    other core and on its own, and the difference: the cost of the wake-ups across cores."""
    by_mode = {}
    for r in rows:
        if r["wakeup_us"] is not None:
            by_mode.setdefault(r["mode"], []).append(r)
    if not by_mode:
        return []
    out = ["What the wake-ups across cores cost on this machine: PostgreSQL's CPU per query "
           "when pgbench sends from CPU 1 (as notesd does) minus when it sends from CPU 0 "
           "(PostgreSQL's own core); medians, and the range of the difference round by round:",
           ""]
    for mode, rs in by_mode.items():
        parts = [f"{r['test']} {fmt(r['pg_us_server_core'])} − {fmt(r['pg_us_db_core'])} = "
                 f"{'+' if r['wakeup_us'] > 0 else ''}"
                 f"{with_range(r['wakeup_us'], r['wakeup_rounds'])} µs" for r in rs]
        out.append(f"- {mode}: " + "; ".join(parts))
    idle = [f"{r['pgbench_other_core']} {r['test']} ({fmt_share(r['server_core_cpu0_busy'])})"
            for r in rows if (r.get("server_core_cpu0_busy") or 1) < SATURATED]
    if idle:
        out += ["", f"⚠ CPU 0 was less than {fmt_share(SATURATED)} busy in " + ", ".join(idle) +
                ": pgbench on CPU 1 did not keep PostgreSQL busy, so its backends slept and woke "
                "from an idle core for many queries, which costs more per query than in notesd's "
                "runs, where wrk and PostgreSQL saturate CPU 0. Those ceilings are too low, and "
                "the wake-up costs too high; a busy CPU 1 (other load) is the usual cause."]
    out.append("")
    return out


def header_section(meta, runs, notes):
    """The title, the run's settings, host, notesd, layout, versions, other load, notes."""
    out = [f"# notesd benchmark — {meta['started']}", ""]
    if meta.get("quick"):
        out += ["**`--quick`: indicative only** — one round of short runs: no figure has a "
                "range, and the targets' PASS and MISS are not findings.", ""]
    out.append(f"{meta['rounds']} round(s) · wrk `-t1 -c{meta['connections']} -d{meta['duration_s']}s "
               f"--latency` after a {meta['warmup_s']} s warm-up per subject and test · "
               f"pgbench `-c {meta['pool']} -j 1 -T {meta['duration_s']}` · "
               f"subjects in alternating order per round")
    out.append("")
    out.append(f"- host: {meta['host']['cpu_model']} · {meta['host']['cpus']} CPUs · "
               f"{meta['host']['kernel']} · load before start {meta['host']['loadavg']}")
    out.append(f"- notesd: {meta['notesd']['path']} (sha256 {meta['notesd']['sha256'][:12]}…, "
               f"git {meta['git']})")
    out.append("- layout: " + meta["layout"])
    out.append("- versions: " + "; ".join(
        v if k.lower() in v.lower() else f"{k} {v}" for k, v in meta["versions"].items() if v))
    other = sorted(r["other_cores"] for r in runs if r.get("other_cores") is not None)
    if other:
        out.append(f"- other load during the measured runs (CPU time of processes that are not "
                   f"part of the benchmark, in cores): median {fmt(median(other), 2)}, "
                   f"max {fmt(other[-1], 2)}" +
                   (" — the machine was busy with other work; figures are disturbed"
                    if median(other) > NOISY_CORES else ""))
    for n in notes:
        out.append(f"- note: {n}")
    out.append("")
    return out


def targets_section(targets):
    out = ["## Targets", ""]
    trows = []
    for t in targets:
        rounds = t.get("rounds")
        show = fmt_ratio if t["unit"] == "×" else fmt
        spread = (f"{show(rounds['min'])}–{show(rounds['max'])}"
                  if rounds and rounds["n"] > 1 else "–")
        if t["unit"] == "×":
            measured = fmt_ratio(t["value"])
            thr = f"{t['op']} {t['threshold']:.2f}"
            against = f"{t['against']} {fmt(t['against_value'])}" if t["against"] else "–"
        else:
            measured = f"{fmt(t['value'])} {t['unit']}"
            thr = f"{t['op']} {t['threshold']:g} {t['unit']}"
            against = "–"
        result = f"**{t['result']}**" + (" (within noise)" if t.get("noisy") else "")
        trows.append([t["target"], t["subject"], t["test"], measured, spread, thr, against,
                      result])
    out.append(table(["target", "subject", "test", "measured", "rounds (min–max)", "needed",
                      "against", "result"], trows))
    out.append("")
    out.append("Ratios are notesd's median over the other's median; their range pairs the two "
               "round by round. `–` when a figure is missing (subject or test not run, or no "
               "valid round). \"Within noise\": the rounds fall on both sides of the "
               "threshold, so the median's PASS or MISS is not a finding; run more rounds.")
    out.append("")
    return out


def ratios_section(ratios, connections):
    out = ["## Ratios", ""]
    rrows = []
    for r in ratios:
        title, unit, _ = METRICS[r["metric"]]
        rrows.append([r["subject"], r["test"], f"{title}" + (f" ({unit})" if unit else ""),
                      fmt(r["value"]), f"{r['limit']} {fmt(r['limit_value'])}",
                      fmt_ratio(r["vs_limit"]),
                      f"{r['best_peer'] or '–'} {fmt(r['peer_value'])}",
                      fmt_ratio(r["vs_peer"])])
    out.append(table(["subject", "test", "figure", "notesd", "limit", "notesd / limit",
                      "best peer", "notesd / best peer"], rrows))
    out.append("")
    out.append("Best peer: per figure, the best of node, bun and deno (most req/s; least "
               "latency, RSS, CPU, startup). Limits: h2o serving the same bytes from files for "
               "/json, /, /status, /static; pgbench with the same statements and connections "
               "(`-M extended` for notesd, `-M prepared` for notesd-prepared, pipelined "
               "for the pipelined subjects) for the mixes. "
               "For pgbench, CPU and RSS are the pgbench client's (it plays the server's part), "
               "and its latency is per statement with 20 clients, not per HTTP request with "
               f"{connections} connections. `pgbench` and `pgbench-prepared` run on "
               "CPU 1 (the server's core); the `-dbcore` and `-pipeline` variants on CPU 0 "
               "with PostgreSQL, where wrk sits (next section).")
    out.append("")
    return out


def scaling_section(scaling, counts):
    """`--threads`: req/s and speed-up per thread count (nothing without a curve)."""
    if not scaling:
        return []
    out = ["## Scaling (`--threads`)", ""]
    srows = []
    for s in scaling:
        srows.append([s["subject"], s["test"]] +
                     [f"{fmt(s['rps'].get(n))} ({fmt_ratio(s['speedup'].get(n))}×)"
                      for n in counts])
    out.append(table(["subject", "test"] + [f"{n} thread(s): req/s (speed-up)"
                                            for n in counts], srows))
    out.append("")
    return out


def raw_section(summary, tests, order):
    out = ["## Raw figures (medians over valid rounds)", ""]
    out.append(raw_tables(summary, tests, order))
    out.append("")
    out.append("In parentheses: the lowest and highest of the valid rounds. PSS shares each "
               "page among the processes that map it; USS is what only the server holds. "
               "CPU per request is the "
               "server process's utime + stime over the measured run divided by the requests "
               "wrk completed (pgbench: its own CPU per transaction); server core use is "
               "that CPU time over the run's wall time (100% = one core busy all along: the "
               "server is the bottleneck). DB CPU is the private "
               "PostgreSQL's (postmaster and all backends). Load-gen CPU is wrk's (pgbench: "
               "itself). CPU0 / CPU1 busy are from /proc/stat; other load is busy CPU time "
               "not spent by the server, the load generator, PostgreSQL or this script, in "
               "cores: other people's processes on this machine.")
    out.append("")
    out += ["## Startup", "", startup_table(summary, order), ""]
    return out


def runs_section(runs):
    out = ["## Every run", ""]
    rows = []
    for r in runs:
        rows.append([r["round"], r["label"], r["test"], fmt(r.get("rps")), fmt(r.get("p50_ms")),
                     fmt(r.get("p99_ms")), fmt(r.get("cpu_us_per_req")),
                     fmt(r["rss_peak_bytes"] / MIB if r.get("rss_peak_bytes") else None),
                     fmt(r.get("db_cpu_us_per_req")),
                     fmt(r.get("other_cores"), 2) + (" ⚠" if (r.get("other_cores") or 0) >
                                                     NOISY_CORES else ""),
                     "yes" if r.get("valid") else f"NO: {r.get('invalid_reason')}"])
    out.append(table(["round", "subject", "test", "req/s", "p50 ms", "p99 ms", "CPU µs/req",
                      "RSS MiB", "DB CPU µs/req", "other load", "valid"], rows))
    out.append("")
    out.append(f"⚠: other processes used more than {NOISY_CORES} cores during that run.")
    out.append("")
    return out


def bench_markdown(meta, summary, ratios, targets, scaling, runs, notes, ceilings=None, extra=(),
                   headline=""):
    """The report. ceilings: figures.ceiling_rows(); extra: further Markdown
    sections (the sweep, the three-host layout), placed before the raw figures;
    headline: the headline figures' section (headline.py), placed first."""
    out = header_section(meta, runs, notes)
    if headline:
        out += [headline, ""]
    out += targets_section(targets)
    out += ratios_section(ratios, meta["connections"])
    skipped = meta.get("skipped") or {}
    if ceilings or skipped:
        out.append(ceiling_section(ceilings or [], skipped))
    for section in extra:
        if section:
            out += [section, ""]
    out += scaling_section(scaling, meta["threads"])
    out += raw_section(summary, meta["tests"], meta["order"])
    out += runs_section(runs)
    return "\n".join(out)
