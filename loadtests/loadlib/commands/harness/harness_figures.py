"""The harness's figures of one test, from its raw files (OUT/r<round>/<target>/<mode>/):
test.json (start and end of the load, tool, exit status), reconcile.json (client
and server counts and latency), metrics.prom.gz (the once-a-second scrapes of the
target's /metrics) and proc.jsonl (the once-a-second /proc samples of target, load
tool, PostgreSQL and cores).

Averages over a test ("window") run from 20 s after its start to its end, as the
seed's analysis does; for tests shorter than 100 s the window starts at 20% of
the duration instead.
"""
import gzip
import json
import math
import os

from loadlib import openmetrics, prom

MIB = 1024 * 1024
WINDOW_SKIP_S = 20.0
WINDOW_SKIP_SHARE = 0.2
WANTED = ("notes_db_pool_", "notes_eventloop_", "process_", "http_requests_in_flight", "notes_build_info",
          "nodejs_heap_size_used_bytes", "notes_malloc_heap_used_bytes")
# The used heap as each target reports it itself: the JavaScript engine's heapUsed on the
# peer (V8 on Node and Deno, JavaScriptCore on Bun), glibc malloc's bytes in use on notesd.
# process_heap_bytes is VmData on both (prom-client's meaning), not a used heap.
USED_HEAP = ("nodejs_heap_size_used_bytes", "notes_malloc_heap_used_bytes")


def read_json(path, default=None):
    """A JSON file's data, or `default` when it is missing or not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


# --------------------------------------------------------------------- raw series

def readable_lines(f):
    """The lines of a file until the first read error (a gzip stream cut short by an
    interrupted run still gives what was written)."""
    try:
        yield from f
    except (OSError, EOFError):
        return


def load_scrapes(path):
    """[(unix time, {name: value of the unlabelled sample}, {name: [(labels, value)]})] of the
    successful scrapes in metrics.prom.gz, keeping only the families the analysis uses."""
    out = []
    try:
        f = gzip.open(path, "rt", encoding="utf-8", errors="replace")
    except OSError:
        return out
    with f:
        for t, status, lines in openmetrics.scrape_pages(readable_lines(f)):
            if status != "200":
                continue
            try:
                samples = prom.parse_metrics("\n".join(line.rstrip("\n") for line in lines
                                                       if line.startswith(WANTED)))
            except prom.InputError:
                continue
            plain, labelled = {}, {}
            for name, labels, value in samples:
                if labels:
                    labelled.setdefault(name, []).append((labels, value))
                else:
                    plain[name] = value
            out.append((t, plain, labelled))
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
    scrapes = load_scrapes(os.path.join(mdir, "metrics.prom.gz"))
    proc = read_proc(os.path.join(mdir, "proc.jsonl"))
    entry = {
        "target": test.get("target"), "round": test.get("round"), "mode": test.get("mode"),
        "dir": mdir, "tool": test.get("tool"), "tool_rc": test.get("tool_rc"),
        "tool_timed_out": test.get("tool_timed_out"), "scrapes": len(scrapes),
        "sampler_errors": test.get("sampler_errors", []),
    }
    if test.get("journal"):                  # run.sh --journal: notesd's arrivals
        entry["journal"] = test["journal"]
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
        for key in ("uss", "pss"):     # private memory and proportional share (smaps_rollup)
            v = mean([p["target"][f"{key}_bytes"] for p in in_window if f"{key}_bytes" in p["target"]])
            entry[f"{key}_mib"] = None if v is None else v / MIB
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
