"""notesd's request journal, read and measured: when each request arrived, on which
connection, and which of a load tool's records it is.

notesd started with JOURNAL=N serves each loop's last N records at GET /journal on its
metrics port (docs/journal.md); journal_pages.py reads its pages. read() returns a
run's records as dicts; judge reads them as columns (journal_pages.Collector). The
figures here take plain sequences or numpy arrays, so each is tested on synthetic
records and costs a fraction of a second for a million:

  schedule()     arrivals against a constant rate: the rate achieved, per window
                 (window_for(): at least WINDOW_ARRIVALS expected in each), the
                 inter-arrival coefficient of variation, a Kolmogorov-Smirnov distance
                 to the exponential (Poisson arrivals), the longest gap, how arrivals
                 clump; ramp_error() for a ramping rate.
  connections()  requests per connection, connection lifetimes, how many at once.
  join()         a tool's per-request log matched to the journal: by X-Request-Id
                 where the tool sent one, else by order of sending, with how often
                 that order is ambiguous; the client's share of each latency, and the
                 requests only one side counted.
  read_log()     a tool's per-request log: judge's generic CSV (LOG_HEADER), k6's CSV,
                 hey's CSV, h2load's log, ab's -g file.

newest() is where a run starts: read(port, newest(port)) after the run is the run.

Arrivals are read from `started_us` (the dispatcher's receipt, precise to the
microsecond; `arrived_us` is the loop's cached clock, shared within a turn).
"""
import csv
import math

import numpy as np

from loadlib import journal_pages
from loadlib.quantile import percentile

PAGE = journal_pages.NDJSON_PAGE    # the most records one NDJSON page holds
WINDOW_MS = 100             # the shortest window the achieved rate is read over ...
WINDOW_ARRIVALS = 20        # ... made longer where fewer than this many are due in one
CLUMP_SHARE = 0.1           # arrivals closer than this share of the mean gap are one clump
CLUMP_GAP = 2.0             # clumps this many mean gaps apart are counted as a pattern's beats
# judge's generic per-request CSV (loadtests/judge.md): wall-clock send time in µs since
# the epoch, the X-Request-Id sent (empty: none), µs until the answer's last byte, status
LOG_HEADER = ("start_us", "request_id", "latency_us", "status")


# ------------------------------------------------------------------ reading

def read(metrics_port, since=None, host="127.0.0.1", timeout=10.0, token=None):
    """Every record of every loop after `since` ({loop: seq}, default from the start):
    (records sorted by started_us, lost, next) where lost counts the records the ring
    overwrote before this read and next is the {loop: seq} to pass next time."""
    source = journal_pages.Source(metrics_port, host, token, timeout)
    since = dict(since or {})
    records, lost, loops, loop = [], 0, 1, 0
    while loop < loops:
        seq = since.get(loop, 0)
        while True:
            page = source.records(loop, seq)
            loops = page.loops
            lost += page.lost
            records += page.records
            if (page.next or seq) == seq:        # a page that moves nothing: the end
                break
            seq = page.next
        since[loop] = seq
        loop += 1
    records.sort(key=lambda r: (r["started_us"], r["loop"], r["seq"]))
    return records, lost, since


def newest(metrics_port, host="127.0.0.1", timeout=10.0, token=None):
    """{loop: the newest record's seq}: the `since` from which read() returns only what
    comes next, found without reading the ring (one short page per loop)."""
    return journal_pages.Source(metrics_port, host, token, timeout).newest()


def of_kind(records, kind="http", route=None):
    return [r for r in records if r["kind"] == kind and (route is None or r["route"] == route)]


# ------------------------------------------------------------------ schedules

def quantile(values, q):
    """The q-quantile (0..1) of `values`: loadlib.quantile's nearest rank; None when empty."""
    if not len(values):
        return None
    v = percentile(np.sort(np.asarray(values)), q * 100)
    return v.item() if hasattr(v, "item") else v


def kolmogorov_p(d, n):
    """The asymptotic p-value of a one-sample Kolmogorov-Smirnov distance d over n
    values (Kolmogorov's series with Stephens' small-sample correction)."""
    if n <= 0:
        return None
    x = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d
    if x < 0.2:
        return 1.0
    s = sum((-1) ** (k - 1) * math.exp(-2 * k * k * x * x) for k in range(1, 101))
    return max(0.0, min(1.0, 2 * s))


def ks_exponential(gaps_s, rate):
    """(D, p) of the inter-arrival gaps (seconds) against the exponential with mean
    1/rate: what Poisson arrivals at `rate` would give."""
    v = np.sort(np.asarray(gaps_s, dtype=float))
    n = len(v)
    if n == 0:
        return None, None
    f = 1.0 - np.exp(-rate * v)
    i = np.arange(n)
    d = float(max(np.max((i + 1) / n - f), np.max(f - i / n), 0.0))
    return d, kolmogorov_p(d, n)


def window_for(rate):
    """The window (ms) a constant `rate` is read over: WINDOW_MS, or longer in steps of
    10 ms where it would hold fewer than WINDOW_ARRIVALS (at 200/s: 100 ms, 20 each)."""
    if not rate or rate <= 0:
        return WINDOW_MS
    return max(WINDOW_MS, 10 * math.ceil(100 * WINDOW_ARRIVALS / rate - 1e-9))


def windows(arrivals_us, start_us, end_us, window_ms=WINDOW_MS):
    """Arrivals counted per window of window_ms from start_us; the last partial window
    is left out."""
    width = window_ms * 1000
    n = max(0, int((end_us - start_us) // width))
    t = np.asarray(arrivals_us, dtype=np.int64)
    i = (t - int(start_us)) // width
    i = i[(i >= 0) & (i < n)]
    return np.bincount(i, minlength=n)[:n].tolist() if n else []


def clumps(gaps_s):
    """How arrivals bunch: (mean arrivals per clump, a clump being arrivals less than
    CLUMP_SHARE of the mean gap apart; mean arrivals between two gaps of CLUMP_GAP mean
    gaps or more, and the median of those gaps in seconds: a burst pattern's size and
    period). Poisson arrivals: 1.1 a clump; c connections in lockstep: c, every c mean
    gaps; each second's share at once: the whole share, every second."""
    g = np.asarray(gaps_s, dtype=float)
    if not len(g) or g.mean() <= 0:
        return None, None, None
    apart = g >= CLUMP_SHARE * g.mean()
    long = g[g >= CLUMP_GAP * g.mean()]
    return ((len(g) + 1) / (np.count_nonzero(apart) + 1), (len(g) + 1) / (len(long) + 1),
            float(np.median(long)) if len(long) else None)


def schedule(arrivals_us, rate, poisson=False, window_ms=None, trim_ms=None, duration_s=None,
             clip_ms=None):
    """How well arrivals (microseconds, any order) kept a constant `rate` per second,
    over `duration_s` from the first when given, else until the last. The windows are
    window_for(rate) long; the first and last `trim_ms` (default a window) are left
    out of them (a tool's start and stop); "window_runs" counts the runs of windows with
    arrivals between empty ones (one for a steady schedule, one a burst for a bursty
    one), "window_run_every_ms" the median time between them. With clip_ms, also the CV
    of the gaps each
    counted at most clip_ms ("gap_cv_clipped": one long pause weighs on the CV as the
    square of its length, and is the longest gap's to judge). Returns a dict of
    figures; only "arrivals" and "rate" where there are fewer than three."""
    t = np.sort(np.asarray(arrivals_us, dtype=np.int64))
    if len(t) < 3:
        return {"arrivals": len(t), "rate": rate}
    window_ms = window_ms or window_for(rate)
    trim = (window_ms if trim_ms is None else trim_ms) * 1000
    end = int(t[0] + duration_s * 1e6) if duration_s else int(t[-1])
    counts = np.array(windows(t, int(t[0]) + trim, end - trim, window_ms))
    per_s = counts * 1000 / window_ms
    # bursts by window: runs of windows with arrivals, separated by empty ones
    busy = np.flatnonzero(counts)
    runs = busy[np.concatenate([[True], np.diff(busy) > 1])] if len(busy) else busy
    span_s = (t[-1] - t[0]) / 1e6
    gaps = np.diff(t) / 1e6
    mean_gap = gaps.mean()
    per_clump, per_beat, between = clumps(gaps)
    out = {
        "arrivals": len(t), "rate": rate, "span_s": round(span_s, 3), "window_ms": window_ms,
        "achieved_rate": round((len(t) - 1) / span_s, 2) if span_s > 0 else None,
        "windows": len(per_s),
        "window_rate_p5": quantile(per_s, 0.05), "window_rate_p50": quantile(per_s, 0.5),
        "window_rate_p95": quantile(per_s, 0.95),
        # the share of windows within half the expected count of it
        "windows_on_rate": (float(np.mean(np.abs(per_s - rate) <= 0.5 * rate))
                            if len(per_s) else None),
        "gap_cv": round(float(gaps.std() / mean_gap), 3) if mean_gap > 0 else None,
        "longest_gap_ms": round(float(gaps.max()) * 1000, 3),
        "per_clump": round(per_clump, 2), "per_burst": round(per_beat, 1),
        "window_runs": len(runs), "per_window_run": round(float(counts.sum()) / len(runs), 1)
        if len(runs) else None, "window_run_every_ms": float(np.median(np.diff(runs))) *
        window_ms if len(runs) > 1 else None,
        "clump_every_ms": None if between is None else round(between * 1000, 1),
    }
    if duration_s:
        out.update(duration_s=duration_s, expected=round(rate * duration_s, 1))
    if clip_ms:
        clipped = np.minimum(gaps, clip_ms / 1000)
        out.update(clip_ms=round(clip_ms, 1),
                   gap_cv_clipped=round(float(clipped.std() / clipped.mean()), 3))
    if poisson:
        d, p = ks_exponential(gaps, rate)
        out.update(ks_d=round(d, 4), ks_p=p)
    return out


def ramp_points(stages):
    """The corners (second, rate) of a ramp given as stages [(seconds, target)], the
    first stage's target being the start (a 0-second first stage: a start and no more)."""
    points, t = [], 0.0
    for seconds, target in stages:
        if not points:
            points.append((0.0, target))
            if seconds == 0:
                continue
        t += seconds
        points.append((t, target))
    return points


def ramp_error(arrivals_us, stages, start_us, window_ms=500):
    """A ramping executor's achieved rate against its stages: `stages` [(seconds,
    target rate)] from a starting rate of stages[0]'s start (k6's `startRate` is the
    rate before the first stage: pass it as a 0-second stage). Returns the mean and the
    largest absolute relative error of the per-window rate against the linear ramp, over
    windows whose expected rate is at least 1/s, the arrivals due in the smallest of them
    ("least_expected"), the mean error Poisson arrivals would have, and each judged
    window's arrivals ("counts") and arrivals due ("due")."""
    points = ramp_points(stages)
    end_us = start_us + points[-1][0] * 1e6
    counts = np.array(windows(arrivals_us, start_us, end_us, window_ms), dtype=float)
    mids = (np.arange(len(counts)) + 0.5) * window_ms / 1000
    want = np.interp(mids, [p[0] for p in points], [p[1] for p in points])
    judged = want >= 1
    if not judged.any():
        return {"windows": 0}
    errors = np.abs(counts[judged] * 1000 / window_ms - want[judged]) / want[judged]
    due = want[judged] * window_ms / 1000
    return {"windows": int(judged.sum()), "mean_error": round(float(errors.mean()), 3),
            "max_error": round(float(errors.max()), 3),
            "least_expected": round(float(due.min()), 1),
            # what Poisson arrivals would be off on average: E|X - k| / k ~ sqrt(2 / (pi k))
            "poisson_mean_error": round(float(np.mean(np.sqrt(2 / (np.pi * due)))), 4),
            "counts": counts[judged].astype(int).tolist(),
            "due": np.round(due, 2).tolist()}


# ------------------------------------------------------------------ connections

def per_connection(loop, conn, conn_at_us, ended_us):
    """Each connection of a run's HTTP records, from one array per field: {"at" (its
    accept), "end" (its last answer), "requests"}, arrays in one order. One sort."""
    key = np.asarray(conn, dtype=np.int64) * 1024 + np.asarray(loop, dtype=np.int64)
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(ordered)) + 1])
    return {"at": np.minimum.reduceat(np.asarray(conn_at_us, dtype=np.int64)[order], starts),
            "end": np.maximum.reduceat(np.asarray(ended_us, dtype=np.int64)[order], starts),
            "requests": np.diff(np.concatenate([starts, [len(key)]]))}


def connection_figures(loop, conn, conn_at_us, started_us, ended_us):
    """Requests per connection and connection lifetimes (first accept to last answer,
    seconds), from one array per field of a run's HTTP records; `most_at_once` is the
    most connections open together, `opened_late` those accepted over a second after
    the first request."""
    if not len(conn):
        return {"connections": 0}
    c = per_connection(loop, conn, conn_at_us, ended_us)
    at, end, per = c["at"], c["end"], c["requests"]
    life = (end - at) / 1e6
    # open and close events in order of time; a close before an open at the same moment
    events = np.concatenate([np.stack([at, np.ones_like(at)], 1),
                             np.stack([end, -np.ones_like(end)], 1)])
    events = events[np.lexsort((events[:, 1], events[:, 0]))]
    first = int(np.min(started_us))
    return {"connections": len(per), "requests": int(per.sum()),
            "per_connection_min": int(per.min()), "per_connection_median": float(np.median(per)),
            "per_connection_max": int(per.max()),
            "lifetime_median_s": round(float(np.median(life)), 3),
            "lifetime_max_s": round(float(life.max()), 3),
            "most_at_once": int(np.cumsum(events[:, 1]).max()),
            "opened_late": int(np.count_nonzero(at > first + 1_000_000))}


def connections(records):
    """connection_figures() of HTTP records given as dicts."""
    http = [r for r in records if r["kind"] == "http"]
    cols = {f: np.array([r[f] for r in http], dtype=np.int64)
            for f in ("loop", "conn", "conn_at_us", "started_us", "ended_us")}
    return connection_figures(**cols)


# ------------------------------------------------------------------ joins

def join_columns(tool, server, resolution_us=1000):
    """join() on columns: tool {"start_us", "latency_ms", "request_id" (or None)} and
    server {"started_us", "ended_us", "request_id" (for a join by id)}, arrays each.
    Also returns "pairs": (tool indices, server indices) of the matched requests."""
    t_ids = tool.get("request_id")
    n_tool, n_server = len(tool["start_us"]), len(server["started_us"])
    ambiguous = 0
    if n_tool and t_ids is not None and all(t_ids):
        by, where = "request id", {}
        for i, rid in enumerate(server.get("request_id", [])):
            if rid:
                where.setdefault(rid, []).append(i)
        ti, si = [], []
        for i, rid in enumerate(t_ids):
            found = where.get(rid)
            if found:
                ti.append(i)
                si.append(found.pop(0))
        ti, si = np.array(ti, dtype=np.int64), np.array(si, dtype=np.int64)
    else:
        by = "order"
        n = min(n_tool, n_server)
        ti = np.argsort(np.asarray(tool["start_us"]), kind="stable")[:n]
        order = np.argsort(np.asarray(server["started_us"]), kind="stable")
        si = order[:n]
        s = np.asarray(server["started_us"])[order]
        ambiguous = int(np.count_nonzero(np.diff(s) < resolution_us))
    held_ms = (np.asarray(server["ended_us"])[si] - np.asarray(server["started_us"])[si]) / 1000
    client = np.asarray(tool["latency_ms"], dtype=float)[ti] - held_ms
    return {"by": by, "matched": len(ti), "tool_only": n_tool - len(ti),
            "server_only": n_server - len(si), "ambiguous": ambiguous,
            "client_ms": {"p50": quantile(client, 0.5), "p99": quantile(client, 0.99),
                          "max": float(client.max()) if len(client) else None},
            "pairs": (ti, si)}


def join(tool, records, resolution_us=1000):
    """Matches a tool's per-request log to journal records.

    tool: [{"start_us": wall-clock send time, "latency_ms": the tool's latency,
            "request_id": the X-Request-Id it sent, or None}].
    By request id when every tool record has one; otherwise by order: the i-th tool
    record by start time is the i-th journal record by arrival. An order match is
    ambiguous where two neighbouring journal arrivals are closer than `resolution_us`
    (the tool's timestamps could not tell them apart, so the two may be swapped); the
    count of such neighbouring pairs is given.

    Returns {"by", "matched", "tool_only", "server_only", "ambiguous", "client_ms":
    {"p50", "p99", "max"}} where client_ms is the tool's latency less the server's time
    (ended_us - started_us) per matched request."""
    http = [r for r in records if r["kind"] == "http"]
    out = join_columns(log_columns(tool),
                       {"started_us": np.array([r["started_us"] for r in http], dtype=np.int64),
                        "ended_us": np.array([r["ended_us"] for r in http], dtype=np.int64),
                        "request_id": [r.get("request_id") for r in http]}, resolution_us)
    del out["pairs"]
    return out


# ------------------------------------------------------------------ tools' logs

def log_columns(tool):
    """A tool's log (records as the readers below return them) as join_columns() takes it."""
    ids = [t.get("request_id") for t in tool]
    return {"start_us": np.array([t["start_us"] for t in tool], dtype=np.int64),
            "latency_ms": np.array([t["latency_ms"] for t in tool], dtype=float),
            "request_id": ids if tool and all(ids) else None}


def generic_csv(path):
    """judge's per-request CSV (LOG_HEADER, in any order; other columns ignored) as
    join()'s tool records, with "status"."""
    out = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in LOG_HEADER if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)} (the header must name "
                             f"{','.join(LOG_HEADER)})")
        for row in reader:
            out.append({"start_us": int(float(row["start_us"])),
                        "latency_ms": float(row["latency_us"]) / 1000,
                        "request_id": row["request_id"] or None,
                        "status": int(row["status"] or 0)})
    return out


def k6_csv(path, id_header=None):
    """k6's `--out csv` file as join()'s tool records: one per http_req_duration row
    (its timestamp is the second the request ended, so start_us is that less the
    duration, to k6's 1 s resolution); request_id from the tag named `id_header`
    when the script tags its requests with it."""
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("metric_name") != "http_req_duration":
                continue
            ms = float(row["metric_value"])
            extra = dict(kv.split("=", 1) for kv in (row.get("extra_tags") or "").split("&")
                         if "=" in kv)
            out.append({"start_us": int(row["timestamp"]) * 1_000_000 - ms * 1000,
                        "latency_ms": ms,
                        "request_id": extra.get(id_header) if id_header else None})
    return out


def hey_csv(path, t0_us):
    """hey's `-o csv` file (response-time in s, offset from the run's start in s) as
    join()'s tool records, given the wall-clock start of the run."""
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out.append({"start_us": t0_us + float(row["offset"]) * 1e6,
                        "latency_ms": float(row["response-time"]) * 1000, "request_id": None})
    return out


def h2load_log(path):
    """h2load's `--log-file` (start time in µs since the epoch, status, request time in
    µs, tab-separated) as join()'s tool records."""
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split("\t")
            if len(parts) >= 3 and parts[0].strip().isdigit():
                out.append({"start_us": int(parts[0]), "latency_ms": int(parts[2]) / 1000,
                            "request_id": None})
    return out


def ab_gnuplot(path):
    """ab's `-g` file (starttime, seconds since the epoch, ctime, dtime, ttime in ms,
    wait) as join()'s tool records: to ab's 1 s resolution of the start."""
    out = []
    with open(path) as f:
        next(f, None)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 6:
                out.append({"start_us": int(parts[1]) * 1_000_000,
                            "latency_ms": float(parts[4]), "request_id": None})
    return out


# the formats read_log() knows: name -> (what its first line starts with, the reader)
LOG_FORMATS = {"generic": None, "k6": "metric_name,", "hey": "response-time,",
               "ab": "starttime\t", "h2load": None}


def log_format(path):
    """The format of a per-request log, from its first line (LOG_FORMATS)."""
    with open(path, errors="replace") as f:
        first = f.readline()
    if set(LOG_HEADER) <= {c.strip() for c in first.strip().split(",")}:
        return "generic"
    for name, head in LOG_FORMATS.items():
        if head and first.startswith(head):
            return name
    if first.split("\t")[0].strip().isdigit():
        return "h2load"
    raise ValueError(f"{path}: not a per-request log judge reads (its first line: "
                     f"{first[:80]!r}); the generic CSV starts with {','.join(LOG_HEADER)}")


def read_log(path, fmt=None, t0_us=None, id_tag=None):
    """(format, records) of a per-request log; t0_us: the run's wall-clock start (hey's
    offsets are from it); id_tag: the k6 tag holding each request's id."""
    fmt = fmt or log_format(path)
    if fmt == "hey":
        if t0_us is None:
            raise ValueError("hey's CSV has offsets only: the run's start is needed")
        return fmt, hey_csv(path, t0_us)
    readers = {"generic": generic_csv, "k6": lambda p: k6_csv(p, id_tag),
               "h2load": h2load_log, "ab": ab_gnuplot}
    if fmt not in readers:
        raise ValueError(f"unknown log format {fmt!r} (one of {', '.join(LOG_FORMATS)})")
    return fmt, readers[fmt](path)
