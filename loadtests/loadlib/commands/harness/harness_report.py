"""The harness's report.md: one function per section, each from the figures
analyze.py computes (medians per target and test, every test's own figures), put
together by render_report(). The words for modes and targets are here too."""
from dataclasses import dataclass

from loadlib.report import fmt_bound, fmt_fixed, fmt_int, fmt_mib, fmt_ms, fmt_pct, fmt_s, fmt_share, table

MODE_LABELS = {"read": "Reads", "write": "Writes", "mixed": "Mixed", "json": "No database"}
# "native" is how results directories written before the harness said "notesd" name it
TARGET_NAMES = {"notesd": "notesd", "native": "notesd", "node": "Node", "bun": "Bun", "deno": "Deno"}
BUSY_WARNING_PCT = 25.0     # other processes' CPU (% of one core) above which the report warns


@dataclass
class Figures:
    """What the report is made of: the run's configuration (run.json), its targets and
    modes, each target's label, the medians per target and mode, every test's and
    startup's figures, the totals per target, the tests with failed requests, and the
    problems."""
    config: dict
    targets: list
    modes: list
    labels: dict
    medians: dict
    tests: list
    starts: list
    totals: dict
    failed: list
    problems: list


def title_section(f):
    """The title, the run's settings, and the problems first, before any figure."""
    config, targets, modes, labels, problems = f.config, f.targets, f.modes, f.labels, f.problems
    rounds = config.get("rounds") or 0
    tool = config.get("tool") or "?"
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
    return L


def results_section(f):
    """Results: req/s, latency, RSS and startup per test and target, disturbed tests, failed requests, throughput relative to Node, the charts."""
    config, targets, modes, labels, medians = f.config, f.targets, f.modes, f.labels, f.medians
    tests, totals, failed, problems = f.tests, f.totals, f.failed, f.problems
    rounds = config.get("rounds") or 0
    tool = config.get("tool") or "?"
    L = []
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
        rows.append(["Private memory (USS) during reads"] +
                    [fmt_mib(medians[t]["read"].get("uss_mib")) for t in targets])
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
    if f.config.get("arrivals_chart"):          # run.sh --journal
        L.append("![Arrivals per second, from notesd's request journal](arrivals.svg)")
        L.append("")
    L.append("![Latency p95 and p99 per test and target](latency.svg)")
    L.append("")
    return L


def stability_section(f):
    """How stable the rounds were: the order per round, req/s per round and their spread, startup per round."""
    config, targets, modes, labels, medians = f.config, f.targets, f.modes, f.labels, f.medians
    rounds = config.get("rounds") or 0
    L = []
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
    return L


def limits_section(f):
    """Where the limit was: CPU of target, load tool, PostgreSQL and everything else; the pool's queue."""
    config, targets, modes, labels, medians = f.config, f.targets, f.modes, f.labels, f.medians
    tool = config.get("tool") or "?"
    L = []
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
    return L


def memory_section(f):
    """Event loop and memory: event-loop delay, used heap, RSS, PSS and USS."""
    targets, modes, labels, medians = f.targets, f.modes, f.labels, f.medians
    L = []
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
    for m in modes:
        rows.append([f"PSS / USS, {MODE_LABELS.get(m, m).lower()}"] +
                    [f"{fmt_mib(medians[t][m].get('pss_mib'))} / {fmt_mib(medians[t][m].get('uss_mib'))}"
                     for t in targets])
    L.append(table(["Test"] + [labels[t] for t in targets], rows))
    L.append("")
    L.append("Event loop delay is the mean lateness of a 100 ms timer over the window (delta of "
             "`notes_eventloop_delay_seconds_sum` over delta of `_count`), the seed's lagSum/lagN. RSS is the "
             "mean of /proc samples over the window, and so are PSS and USS (from /proc/PID/smaps_rollup): "
             "RSS counts the pages of the shared libraries every process maps (libc, libssl, libpq ...) in "
             "full, PSS shares each page out among the processes that map it, USS (private clean + "
             "private dirty) is what only the server holds, what exiting would free. "
             "Used heap is what each target reports of its own heap: "
             "`nodejs_heap_size_used_bytes` on the peer (`process.memoryUsage().heapUsed`: V8's on Node and Deno, "
             "JavaScriptCore's on Bun), `notes_malloc_heap_used_bytes` on notesd (glibc malloc's bytes in use), "
             "so it compares only between Node and Deno; RSS compares across all. `process_heap_bytes` (VmData, "
             "the data segment's virtual size) is kept in summary.json as `vmdata_mib` and not shown: it is not a "
             "used heap.")
    L.append("")
    return L


def counts_section(f):
    """Client and server counts: every test's reconciliation, what the servers counted beyond the tool's answers, the mismatches."""
    config, targets, modes, labels, tests = f.config, f.targets, f.modes, f.labels, f.tests
    tool = config.get("tool") or "?"
    L = []
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
    return L


def setup_section(f):
    """Setup and files: machine, database, procedure, load, targets, window; where the raw files are."""
    config, targets, modes, labels = f.config, f.targets, f.modes, f.labels
    tool = config.get("tool") or "?"
    machine = config.get("machine") or {}
    db = config.get("db") or {}
    L = []
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
    return L


def render_report(f):
    """report.md's text."""
    L = []
    for section in (title_section, results_section, stability_section, limits_section, memory_section,
                    counts_section, setup_section):
        L += section(f)
    return "\n".join(L)
