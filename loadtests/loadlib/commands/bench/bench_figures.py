"""Figures of loadtests/bench: medians and spread over rounds, the ratios
(notesd / limit, notesd / best peer), the targets with PASS/MISS, the limits in
the same layout and the modelled ceiling of the database's core, the scaling
over threads. Pure functions over the raw records bench.json keeps; the
Markdown is bench_report.py's."""

import statistics

from loadlib.quantile import median

HTTP_TESTS = ["json", "hello", "status", "static"]
DB_TESTS = ["read", "write", "mixed"]
PEERS = ["node", "bun", "deno"]
PATHS = {"json": "/json", "hello": "/", "status": "/status", "static": "/static/app.min.js",
         "read": "read mix", "write": "write mix", "mixed": "mixed mix"}

# metric -> (title, unit, True when higher is better)
METRICS = {
    "rps": ("req/s", "", True),
    "p99_ms": ("p99 latency", "ms", False),
    "rss_mib": ("peak RSS", "MiB", False),
    "uss_mib": ("peak private memory, USS", "MiB", False),
    "cpu_us_per_req": ("server CPU per request", "µs", False),
    "startup_ms": ("startup to first 200", "ms", False),
}
RUN_METRICS = ["rps", "p50_ms", "p99_ms", "cpu_us_per_req", "server_util", "rss_mib",
               "pss_mib", "uss_mib", "db_cpu_us_per_req",
               "loadgen_cpu_us_per_req", "cpu0_busy", "cpu1_busy", "other_cores",
               "lag_mean_ms", "lag_max_ms", "queries_per_sync"]

# notesd's database variants, each with its pgbench limits: (label, query mode, pgbench on
# the server's core — PostgreSQL woken from the other core, as notesd wakes it: the layout
# that matches notesd's —, pgbench on the database's core, where wrk sits)
NOTESD_DB_VARIANTS = [
    ("notesd", "unnamed (-M extended)", "pgbench", "pgbench-dbcore"),
    ("notesd-prepared", "prepared (-M prepared)", "pgbench-prepared", "pgbench-prepared-dbcore"),
    ("notesd-pipeline", "unnamed, pipelined (-M extended)", "pgbench-pipeline-servercore",
     "pgbench-pipeline"),
    ("notesd-prepared-pipeline", "prepared, pipelined (-M prepared)",
     "pgbench-prepared-pipeline-servercore", "pgbench-prepared-pipeline"),
]
NOTESD_LABELS = [v[0] for v in NOTESD_DB_VARIANTS]
# what each pgbench label is, for the tables
PGBENCH_WHERE = {
    "pgbench": "-M extended, CPU 1 (the server's core)",
    "pgbench-prepared": "-M prepared, CPU 1 (the server's core)",
    "pgbench-dbcore": "-M extended, CPU 0 (the database's core, as wrk)",
    "pgbench-prepared-dbcore": "-M prepared, CPU 0 (the database's core, as wrk)",
    "pgbench-pipeline": "-M extended, pipelines of 16, CPU 0",
    "pgbench-prepared-pipeline": "-M prepared, pipelines of 16, CPU 0",
    "pgbench-pipeline-servercore": "-M extended, pipelines of 16, CPU 1 (the server's core)",
    "pgbench-prepared-pipeline-servercore":
        "-M prepared, pipelines of 16, CPU 1 (the server's core)",
}
# queries notesd-pipeline keeps in flight per connection (--pipeline), and the statements
# per \startpipeline ... \endpipeline block of the pipelined pgbench; and what the pipelined
# variant must gain over --prepared on the read mix
PIPELINE_DEPTH = 16
PIPELINE_GAIN = 1.15
# the private memory notesd may hold under the read load (USS, MiB), and its start-up (ms)
USS_TARGET_MIB = 4.0
STARTUP_TARGET_MS = 20.0

MIB = 1024 * 1024
# other processes' CPU use (cores) above which a run counts as disturbed
NOISY_CORES = 0.25


def label_of(subject, threads):
    return subject if threads == 1 else f"{subject}@{threads}t"


def spread(values):
    """(max - min) / median, as a fraction; None for fewer than 2 values."""
    if len(values) < 2:
        return None
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else None


def stat(values):
    values = [v for v in values if v is not None]
    return {"median": median(values), "min": min(values) if values else None,
            "max": max(values) if values else None, "spread": spread(values),
            "n": len(values), "values": values}


def run_metrics(run):
    """The per-run figures that get medians, flattened from one raw run record."""
    busy = run.get("cpu_busy") or {}
    out = {k: run.get(k) for k in ("rps", "p50_ms", "p99_ms", "cpu_us_per_req", "server_util",
                                   "db_cpu_us_per_req", "loadgen_cpu_us_per_req",
                                   "other_cores", "lag_mean_ms", "lag_max_ms",
                                   "queries_per_sync")}
    for key in ("rss", "pss", "uss"):
        b = run.get(f"{key}_peak_bytes")
        out[f"{key}_mib"] = b / MIB if b else None
    out["cpu0_busy"] = (busy.get("0") or {}).get("busy")
    out["cpu1_busy"] = (busy.get("1") or {}).get("busy")
    return out


def summarize(runs, startups):
    """{label: {test: {metric: stat}, "startup": stat}} over valid rounds."""
    summary = {}
    for run in runs:
        entry = summary.setdefault(run["label"], {}).setdefault(run["test"], {
            "subject": run["subject"], "threads": run["threads"], "valid_rounds": 0,
            "rounds": 0, "_values": {m: [] for m in RUN_METRICS}})
        entry["rounds"] += 1
        if not run.get("valid"):
            continue
        entry["valid_rounds"] += 1
        for m, v in run_metrics(run).items():
            entry["_values"][m].append(v)
    for tests in summary.values():
        for entry in tests.values():
            values = entry.pop("_values")
            for m in RUN_METRICS:
                entry[m] = stat(values[m])
    for s in startups:
        entry = summary.setdefault(s["label"], {}).setdefault("startup", {
            "subject": s["subject"], "threads": s["threads"], "path": s.get("path"),
            "_values": []})
        if s.get("startup_ms") is not None:
            entry["_values"].append(s["startup_ms"])
    for tests in summary.values():
        if "startup" in tests and "_values" in tests["startup"]:
            tests["startup"]["startup_ms"] = stat(tests["startup"].pop("_values"))
    return summary


def round_index(runs):
    """{(label, test): {round: run_metrics}} of the valid runs: what two subjects measured
    in the same round, to pair them."""
    out = {}
    for run in runs:
        if run.get("valid"):
            out.setdefault((run["label"], run["test"]), {})[run["round"]] = run_metrics(run)
    return out


def per_round(index, combine, *keys):
    """stat() of combine(figures of keys[0], figures of keys[1], ...) over the rounds every
    key (a (label, test, metric) triple) has a figure in; combine returns None to skip."""
    rounds = None
    for label, test, _ in keys:
        have = set(index.get((label, test), {}))
        rounds = have if rounds is None else rounds & have
    values = []
    for r in sorted(rounds or ()):
        figs = [index[(label, test)][r].get(metric) for label, test, metric in keys]
        if None not in figs:
            values.append(combine(*figs))
    return stat(values)


def round_ratio(index, a, b):
    """stat() of a / b per round, a and b (label, test, metric) triples."""
    return per_round(index, lambda x, y: x / y if y else None, a, b)


def figure(summary, label, test, metric):
    """Median of one metric, or None."""
    if metric == "startup_ms":
        entry = summary.get(label, {}).get("startup")
    else:
        entry = summary.get(label, {}).get(test)
    if not entry or metric not in entry:
        return None
    return entry[metric]["median"]


def best_peer(summary, test, metric):
    """(peer, median) of the best peer for this metric: highest req/s, lowest
    of everything else. (None, None) when no peer has the figure."""
    higher = METRICS.get(metric, ("", "", False))[2]
    found = [(p, figure(summary, p, test, metric)) for p in PEERS]
    found = [(p, v) for p, v in found if v is not None]
    if not found:
        return None, None
    return (max if higher else min)(found, key=lambda pv: pv[1])


def limit_of(label, test):
    """The physical limit a notesd variant is compared with on a test."""
    if test in HTTP_TESTS:
        return "h2o"
    for notesd, _, other_core, db_core in NOTESD_DB_VARIANTS:
        if label == notesd:
            return other_core or db_core
    return "pgbench"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def ratio_rows(summary, tests):
    """Every ratio the issue asks for: per notesd variant, test and metric,
    notesd / limit and notesd / best peer."""
    rows = []
    for label in NOTESD_LABELS:
        if label not in summary:
            continue
        for test in tests:
            if test not in summary[label]:
                continue
            lim = limit_of(label, test)
            for metric in ("rps", "p99_ms", "rss_mib", "uss_mib", "cpu_us_per_req"):
                mine = figure(summary, label, test, metric)
                lim_v = figure(summary, lim, test, metric)
                peer, peer_v = best_peer(summary, test, metric)
                rows.append({"subject": label, "test": test, "metric": metric, "value": mine,
                             "limit": lim, "limit_value": lim_v, "vs_limit": ratio(mine, lim_v),
                             "best_peer": peer, "peer_value": peer_v,
                             "vs_peer": ratio(mine, peer_v)})
        mine = figure(summary, label, None, "startup_ms")
        lim_v = figure(summary, "h2o", None, "startup_ms")
        peer, peer_v = best_peer(summary, None, "startup_ms")
        rows.append({"subject": label, "test": "startup", "metric": "startup_ms", "value": mine,
                     "limit": "h2o", "limit_value": lim_v, "vs_limit": ratio(mine, lim_v),
                     "best_peer": peer, "peer_value": peer_v, "vs_peer": ratio(mine, peer_v)})
    return rows


def check(value, op, threshold):
    if value is None:
        return "n/a"
    ok = value >= threshold if op == ">=" else value <= threshold
    return "PASS" if ok else "MISS"


def within_noise(rounds, threshold):
    """True when the rounds' figures fall on both sides of the threshold: the median
    decides PASS or MISS, but the rounds do not agree."""
    return (rounds is not None and rounds.get("n", 0) > 1
            and rounds["min"] < threshold < rounds["max"])


def target_rows(summary, tests, runs=(), pool=20):
    """The targets, each with the measured ratio or figure (medians), its range over the
    rounds (the ratio per round, paired by round), and PASS/MISS, marked "within noise"
    when the rounds fall on both sides of the threshold."""
    rows = []
    index = round_index(runs)

    def add(target, subject, test, metric, value, op, threshold, against, against_value,
            unit="×", rounds=None):
        result = check(value, op, threshold)
        rows.append({"target": target, "subject": subject, "test": test, "metric": metric,
                     "value": value, "op": op, "threshold": threshold, "unit": unit,
                     "against": against, "against_value": against_value,
                     "rounds": rounds, "noisy": within_noise(rounds, threshold),
                     "result": result})

    def versus(label, other, test, metric):
        return round_ratio(index, (label, test, metric), (other, test, metric)) if other else None

    for test in ("json", "hello", "status"):
        if test not in tests:
            continue
        mine_rps = figure(summary, "notesd", test, "rps")
        h2o_rps = figure(summary, "h2o", test, "rps")
        add("req/s ≥ 90% of h2o's static ceiling", "notesd", test, "rps",
            ratio(mine_rps, h2o_rps), ">=", 0.90, "h2o", h2o_rps,
            rounds=versus("notesd", "h2o", test, "rps"))
        mine_cpu = figure(summary, "notesd", test, "cpu_us_per_req")
        h2o_cpu = figure(summary, "h2o", test, "cpu_us_per_req")
        add("CPU/request ≤ 1.25× h2o's", "notesd", test, "cpu_us_per_req",
            ratio(mine_cpu, h2o_cpu), "<=", 1.25, "h2o", h2o_cpu,
            rounds=versus("notesd", "h2o", test, "cpu_us_per_req"))
        peer, peer_cpu = best_peer(summary, test, "cpu_us_per_req")
        add("CPU/request ≤ 1/3 of the best peer's", "notesd", test, "cpu_us_per_req",
            ratio(mine_cpu, peer_cpu), "<=", 1 / 3, peer, peer_cpu,
            rounds=versus("notesd", peer, test, "cpu_us_per_req"))

    for label in NOTESD_LABELS:
        for test in DB_TESTS:
            if test not in tests or test not in summary.get(label, {}):
                continue
            lim = limit_of(label, test)
            mine_rps = figure(summary, label, test, "rps")
            lim_rps = figure(summary, lim, test, "rps")
            add("req/s ≥ 95% of pgbench, same statements and connections", label, test, "rps",
                ratio(mine_rps, lim_rps), ">=", 0.95, lim, lim_rps,
                rounds=versus(label, lim, test, "rps"))
            peer, peer_p99 = best_peer(summary, test, "p99_ms")
            add("p99 ≤ 1/5 of the best peer's", label, test, "p99_ms",
                ratio(figure(summary, label, test, "p99_ms"), peer_p99), "<=", 0.2, peer,
                peer_p99, rounds=versus(label, peer, test, "p99_ms"))
            peer, peer_cpu = best_peer(summary, test, "cpu_us_per_req")
            add("CPU/request ≤ 1/4 of the best peer's", label, test, "cpu_us_per_req",
                ratio(figure(summary, label, test, "cpu_us_per_req"), peer_cpu), "<=", 0.25,
                peer, peer_cpu, rounds=versus(label, peer, test, "cpu_us_per_req"))

    pipelined = "notesd-prepared-pipeline"
    if "read" in tests and "read" in summary.get(pipelined, {}):
        add(f"--prepared --pipeline {PIPELINE_DEPTH} req/s ≥ {PIPELINE_GAIN:g}× --prepared",
            pipelined, "read", "rps",
            ratio(figure(summary, pipelined, "read", "rps"),
                  figure(summary, "notesd-prepared", "read", "rps")),
            ">=", PIPELINE_GAIN, "notesd-prepared",
            figure(summary, "notesd-prepared", "read", "rps"),
            rounds=versus(pipelined, "notesd-prepared", "read", "rps"))
        row = next((r for r in ceiling_rows(summary, ["read"], runs)
                    if r["subject"] == pipelined), None)
        if row is not None:
            add("req/s ≥ 0.9 of the modelled ceiling of notesd's layout", pipelined, "read",
                "rps", row["vs_ceiling"], ">=", 0.9, "ceiling", row["ceiling_rps"],
                rounds=row["vs_ceiling_rounds"])
    for label in ("notesd-pipeline", pipelined):
        for test in DB_TESTS:
            entry = summary.get(label, {}).get(test) or {}
            if test in tests and figure(summary, label, test, "queries_per_sync") is not None:
                add("queries per sync ≥ 2 (fewer than one sync per two queries)", label, test,
                    "queries_per_sync", figure(summary, label, test, "queries_per_sync"), ">=",
                    2.0, None, None, "", rounds=entry.get("queries_per_sync"))
    if "read" in tests:
        entry = summary.get("notesd", {}).get("read") or {}
        add(f"private memory (USS) under the read load, {pool} database connections "
            f"≤ {USS_TARGET_MIB:g} MiB", "notesd", "read", "uss_mib",
            figure(summary, "notesd", "read", "uss_mib"), "<=", USS_TARGET_MIB, None, None, "MiB",
            rounds=entry.get("uss_mib"))
    for label in ("notesd", "notesd-prepared"):
        if label not in summary:
            continue
        flag = " with --prepared" if label == "notesd-prepared" else ""
        entry = summary[label].get("startup") or {}
        add(f"startup{flag} to first 200 of GET /notes?tag=js ≤ {STARTUP_TARGET_MS:g} ms "
            "(warm database)", label, "startup", "startup_ms",
            figure(summary, label, None, "startup_ms"), "<=", STARTUP_TARGET_MS, None, None, "ms",
            rounds=entry.get("startup_ms"))
    if "json" in tests:
        entry = summary.get("notesd", {}).get("json") or {}
        add("event-loop lag mean ≤ 0.5 ms, saturated on /json", "notesd", "json", "lag_mean_ms",
            figure(summary, "notesd", "json", "lag_mean_ms"), "<=", 0.5, None, None, "ms",
            rounds=entry.get("lag_mean_ms"))
    return rows


def ceiling(pg_us_per_query, loadgen_us_per_request):
    """Requests per second one core can carry when it runs PostgreSQL and the load
    generator and nothing else: 1 / (PostgreSQL's CPU per query + the load
    generator's CPU per request). None when a figure is missing or zero."""
    if pg_us_per_query is None or loadgen_us_per_request is None:
        return None
    total = pg_us_per_query + loadgen_us_per_request
    return 1e6 / total if total > 0 else None


def ceiling_rows(summary, tests, runs=()):
    """Per notesd variant and mix: the pgbench limits on both cores; PostgreSQL's CPU per
    query under each, and their difference: what waking PostgreSQL from the other core
    costs it per query on this machine; the modelled ceiling of the database's core in
    notesd's layout (PostgreSQL's CPU per query under the pgbench on the server's core,
    which wakes it across cores as notesd does, plus wrk's CPU per request in notesd's
    run), and the same with the database's-core pgbench (no wake-up across cores: a
    ceiling notesd's layout cannot reach); notesd against each. The *_rounds entries
    pair the figures round by round (medians, min, max)."""
    rows = []
    index = round_index(runs)
    for label, mode, server_core, db_core in NOTESD_DB_VARIANTS:
        for test in DB_TESTS:
            if test not in tests:
                continue
            pg_server = figure(summary, server_core, test, "db_cpu_us_per_req")
            pg_db = figure(summary, db_core, test, "db_cpu_us_per_req")
            pg_label = server_core if pg_server is not None else db_core
            pg_us = pg_server if pg_server is not None else pg_db
            wrk_us = figure(summary, label, test, "loadgen_cpu_us_per_req")
            mine = figure(summary, label, test, "rps")
            other_rps = figure(summary, server_core, test, "rps")
            db_rps = figure(summary, db_core, test, "rps")
            if mine is None and other_rps is None and db_rps is None:
                continue
            model = ceiling(pg_us, wrk_us)
            same_core = ceiling(pg_db, wrk_us)
            mine_pg = figure(summary, label, test, "db_cpu_us_per_req")
            pg_key, wrk_key = (pg_label, test, "db_cpu_us_per_req"), (label, test,
                                                                      "loadgen_cpu_us_per_req")
            rows.append({
                "subject": label, "mode": mode, "test": test,
                "pgbench_other_core": server_core, "pgbench_other_core_rps": other_rps,
                "pgbench_db_core": db_core, "pgbench_db_core_rps": db_rps,
                "pg_us_server_core": pg_server, "pg_us_db_core": pg_db,
                "server_core_cpu0_busy": figure(summary, server_core, test, "cpu0_busy"),
                "wakeup_us": pg_server - pg_db if None not in (pg_server, pg_db) else None,
                "wakeup_rounds": round_difference(index, (server_core, test, "db_cpu_us_per_req"),
                                                  (db_core, test, "db_cpu_us_per_req")),
                "pg_us_per_query": pg_us, "pg_us_from": pg_label,
                "loadgen_us_per_request": wrk_us, "ceiling_rps": model,
                "ceiling_rounds": per_round(index, ceiling, pg_key, wrk_key),
                "ceiling_same_core_rps": same_core,
                "rps": mine, "rps_rounds": per_round(index, lambda v: v, (label, test, "rps")),
                "vs_other_core": ratio(mine, other_rps),
                "vs_db_core": ratio(mine, db_rps), "vs_ceiling": ratio(mine, model),
                "vs_ceiling_rounds": per_round(
                    index, lambda rps, pg, w: ratio(rps, ceiling(pg, w)),
                    (label, test, "rps"), pg_key, wrk_key),
                "vs_ceiling_same_core": ratio(mine, same_core),
                "notesd_pg_us_per_query": mine_pg,
                "queries_per_sync": figure(summary, label, test, "queries_per_sync"),
                "pgbench_queries_per_sync": figure(summary, pg_label, test, "queries_per_sync"),
                "pg_us_extra": (mine_pg - pg_us if mine_pg is not None and pg_us is not None
                                else None)})
    return rows


def round_difference(index, a, b):
    """stat() of a - b per round, a and b (label, test, metric) triples."""
    return per_round(index, lambda x, y: x - y, a, b)


def scaling_rows(summary, tests, thread_counts):
    rows = []
    for subject in ("notesd", "notesd-prepared", "h2o"):
        for test in tests:
            base = figure(summary, subject, test, "rps")
            if base is None:
                continue
            row = {"subject": subject, "test": test, "rps": {}, "speedup": {}}
            for n in thread_counts:
                v = figure(summary, label_of(subject, n), test, "rps")
                row["rps"][n] = v
                row["speedup"][n] = ratio(v, base)
            if len([v for v in row["rps"].values() if v is not None]) > 1:
                rows.append(row)
    return rows
