"""bench's headline figures, the report's first table (loadtests/bench.d/README.md's "Latest
figures" points at it): one row per notesd variant and test, with every figure's range over the
rounds beside its median: notesd's req/s, its limit (h2o for the routes without a
database; for the mixes the modelled ceiling of the database's core in notesd's own
layout, figures.ceiling_rows), the best peer's req/s, notesd's CPU per request
and the best peer's; the ratios paired round by round. Then memory and start-up:
peak RSS, PSS and USS under the read load, start-up with and without --prepared.
A --quick run's section says it is indicative only."""

from loadlib.commands.bench.bench_figures import (
    DB_TESTS, HTTP_TESTS, NOTESD_LABELS, PATHS, STARTUP_TARGET_MS, USS_TARGET_MIB, best_peer,
    ceiling_rows, round_index, round_ratio)
from loadlib.report import fmt_range, fmt_ratio, table

VARIANT_NAMES = {"notesd": "", "notesd-prepared": "`--prepared`",
                 "notesd-pipeline": "`--pipeline 16`",
                 "notesd-prepared-pipeline": "`--prepared --pipeline 16`"}
MIX_NAMES = {"read": "reads", "write": "writes", "mixed": "mixed"}


def row_name(label, test):
    """'`/json`', 'reads', 'reads, `--prepared`' ..."""
    name = f"`{PATHS[test]}`" if test in HTTP_TESTS else MIX_NAMES[test]
    flags = VARIANT_NAMES.get(label, label)
    return f"{name}, {flags}" if flags else name


def headline_rows(summary, runs, tests):
    """One row per notesd variant and test it ran: the figures as stats (median, min,
    max over the rounds), the ratios per round."""
    index = round_index(runs)
    ceilings = {(r["subject"], r["test"]): r for r in ceiling_rows(summary, tests, runs)}
    rows = []
    for label in NOTESD_LABELS:
        for test in tests:
            entry = summary.get(label, {}).get(test)
            if not entry or not entry["rps"]["n"]:
                continue
            row = {"subject": label, "test": test, "name": row_name(label, test),
                   "rps": entry["rps"], "cpu": entry["cpu_us_per_req"]}
            if test in DB_TESTS:
                c = ceilings.get((label, test)) or {}
                row.update(limit="ceiling", limit_rps=c.get("ceiling_rounds"),
                           vs_limit=c.get("vs_ceiling_rounds"))
            else:
                h2o = summary.get("h2o", {}).get(test)
                row.update(limit="h2o", limit_rps=h2o["rps"] if h2o else None,
                           vs_limit=round_ratio(index, (label, test, "rps"), ("h2o", test, "rps")))
            peer, _ = best_peer(summary, test, "rps")
            row.update(peer=peer, peer_rps=summary[peer][test]["rps"] if peer else None,
                       vs_peer=round_ratio(index, (label, test, "rps"), (peer, test, "rps"))
                       if peer else None)
            cpu_peer, _ = best_peer(summary, test, "cpu_us_per_req")
            row.update(cpu_peer=cpu_peer,
                       peer_cpu=summary[cpu_peer][test]["cpu_us_per_req"] if cpu_peer else None)
            rows.append(row)
    return rows


def ratio_range(st):
    return fmt_range(st, fmt_ratio)


def headline_section(summary, runs, meta):
    """The Markdown of the headline figures, memory and start-up."""
    rows = headline_rows(summary, runs, meta["tests"])
    if not rows:
        return ""
    out = ["## Headline figures", ""]
    if meta.get("quick"):
        out += ["**`--quick`: indicative only.** One short round, so no figure has a range and "
                "none is fit to quote; the headline run is `loadtests/bench` with its defaults "
                "(loadtests/bench.d/README.md, \"Latest figures\").", ""]
    out.append(f"Medians of {meta['rounds']} round(s) of {meta['duration_s']} s, with the range "
               "over the rounds (min–max); a ratio's range pairs the two figures round by round.")
    out.append("")
    trows = []
    for r in rows:
        limit = (f"{r['limit']} {fmt_range(r['limit_rps'])}" if r["limit_rps"] else "–")
        trows.append([r["name"], fmt_range(r["rps"]), limit, ratio_range(r["vs_limit"]),
                      f"{(r['peer'] or '–').capitalize()} {fmt_range(r['peer_rps'])}"
                      if r["peer"] else "–",
                      ratio_range(r["vs_peer"]), fmt_range(r["cpu"]),
                      fmt_range(r["peer_cpu"]) if r["cpu_peer"] else "–"])
    out.append(table(["test", "notesd req/s", "limit", "notesd / limit", "best peer",
                      "notesd / best peer", "notesd CPU µs/req", "best peer's"], trows))
    out.append("")
    out.append("\"ceiling\" is the modelled ceiling of the database's core in notesd's layout: "
               "PostgreSQL's CPU per query under pgbench on CPU 1 (which wakes PostgreSQL from "
               "the other core, as notesd does) plus wrk's CPU per request, both on CPU 0 "
               "(section \"Database mixes\" below); \"h2o\" is h2o's own server on the same "
               "bytes.")
    out.append("")
    mem = []
    read = summary.get("notesd", {}).get("read")
    if read:
        mem.append([f"notesd, read mix, peak RSS / PSS / USS (MiB; target USS ≤ "
                    f"{USS_TARGET_MIB:g})", f"{fmt_range(read['rss_mib'])} / "
                    f"{fmt_range(read['pss_mib'])} / {fmt_range(read['uss_mib'])}"])
    for label in NOTESD_LABELS:
        st = (summary.get(label, {}).get("startup") or {}).get("startup_ms")
        if st and st["n"]:
            flags = VARIANT_NAMES.get(label) or "default"
            mem.append([f"start-up to the first 200 of `GET /notes?tag=js`, {flags} (ms; "
                        f"target ≤ {STARTUP_TARGET_MS:g}, {st['n']} starts)", fmt_range(st)])
    if mem:
        out.append(table(["figure", "median (min–max)"], mem))
    return "\n".join(out).rstrip("\n")

