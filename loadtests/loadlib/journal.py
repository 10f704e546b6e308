"""notesd's request journal, read and judged: when each request arrived, on which
connection, and which of a load tool's records it is.

notesd started with JOURNAL=N serves each loop's last N records as NDJSON at
GET /journal?loop=L&since=SEQ&limit=K on its metrics port (docs/journal.md). This
module pages through them without losing or repeating one (read()), and computes
from plain lists of records, so every figure here is tested on synthetic ones:

  schedule()     an open-model tool's arrivals against the rate it claims: the rate
                 achieved per 100 ms window, the inter-arrival coefficient of
                 variation, a Kolmogorov-Smirnov distance to the exponential (for a
                 tool that claims Poisson arrivals), the longest gap; ramp_error() for
                 a ramping executor.
  connections()  requests per connection and connection lifetimes.
  join()         a tool's per-request log matched to the journal: by X-Request-Id
                 where the tool sent one, else by order of sending, with how often
                 that order is ambiguous; the client's share of each latency, and the
                 requests only one side counted.

newest() is where a run starts: read(port, newest(port)) after the run is the run.

Arrivals are read from `started_us` (the dispatcher's receipt, precise to the
microsecond; `arrived_us` is the loop's cached clock, shared within a turn).
"""
import csv
import json
import math
import statistics
import urllib.parse

from loadlib import httpc
from loadlib.quantile import percentile

PAGE = 5000                 # the most records one page of /journal holds
WINDOW_MS = 100             # the achieved rate is read per window of this length


# ------------------------------------------------------------------ reading

def read(metrics_port, since=None, host="127.0.0.1", timeout=10.0):
    """Every record of every loop after `since` ({loop: seq}, default from the start):
    (records sorted by started_us, lost, next) where lost counts the records the ring
    overwrote before this read and next is the {loop: seq} to pass next time."""
    since = dict(since or {})
    records, lost, loops, loop = [], 0, 1, 0
    while loop < loops:
        seq = since.get(loop, 0)
        while True:
            query = urllib.parse.urlencode({"loop": loop, "since": seq, "limit": PAGE})
            res = httpc.request(metrics_port, f"/journal?{query}", timeout=timeout, host=host)
            if res.status != 200:
                raise OSError(f"GET /journal: {res.status} {res.body[:200]!r}")
            loops = int(res.headers.get("journal-loops", "1"))
            lines = [json.loads(line) for line in res.body.splitlines() if line.strip()]
            for rec in lines:
                if "lost" in rec:
                    lost += rec["lost"]
                else:
                    records.append(rec)
            seq = int(res.headers.get("journal-next", seq))
            if not lines:
                break
        since[loop] = seq
        loop += 1
    records.sort(key=lambda r: (r["started_us"], r["loop"], r["seq"]))
    return records, lost, since


def newest(metrics_port, host="127.0.0.1", timeout=10.0):
    """{loop: the newest record's seq}: the `since` from which read() returns only what
    comes next, found without reading the ring (one short page per loop)."""
    marks, loops, loop = {}, 1, 0
    while loop < loops:
        res = httpc.request(metrics_port, f"/journal?loop={loop}&since=0&limit=1",
                            timeout=timeout, host=host)
        if res.status != 200:
            raise OSError(f"GET /journal: {res.status} {res.body[:200]!r}")
        loops = int(res.headers.get("journal-loops", "1"))
        marks[loop] = int(res.headers.get("journal-newest", "0"))
        loop += 1
    return marks


def of_kind(records, kind="http", route=None):
    return [r for r in records if r["kind"] == kind and (route is None or r["route"] == route)]


# ------------------------------------------------------------------ schedules

def quantile(values, q):
    """The q-quantile (0..1) of `values`: loadlib.quantile's nearest rank; None when empty."""
    return percentile(sorted(values), q * 100)


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
    v = sorted(gaps_s)
    n = len(v)
    if n == 0:
        return None, None
    d = 0.0
    for i, x in enumerate(v):
        f = 1.0 - math.exp(-rate * x)
        d = max(d, (i + 1) / n - f, f - i / n)
    return d, kolmogorov_p(d, n)


def windows(arrivals_us, start_us, end_us, window_ms=WINDOW_MS):
    """Arrivals counted per window of window_ms from start_us; the last partial window
    is left out."""
    width = window_ms * 1000
    n = max(0, int((end_us - start_us) // width))
    counts = [0] * n
    for t in arrivals_us:
        i = int((t - start_us) // width)
        if 0 <= i < n:
            counts[i] += 1
    return counts


def schedule(arrivals_us, rate, poisson=False, window_ms=WINDOW_MS, trim_ms=WINDOW_MS):
    """How well arrivals (microseconds, any order) kept a constant `rate` per second.
    The first and last `trim_ms` are left out of the windows (a tool's start and stop).
    Returns a dict of figures; None where there are too few arrivals."""
    t = sorted(arrivals_us)
    if len(t) < 3:
        return {"arrivals": len(t), "rate": rate}
    start, end = t[0] + trim_ms * 1000, t[-1] - trim_ms * 1000
    counts = windows(t, start, end, window_ms)
    per_s = [c * 1000 / window_ms for c in counts]
    span_s = (t[-1] - t[0]) / 1e6
    gaps = [(b - a) / 1e6 for a, b in zip(t, t[1:])]
    mean_gap = statistics.fmean(gaps)
    out = {
        "arrivals": len(t), "rate": rate, "span_s": round(span_s, 3),
        "achieved_rate": round((len(t) - 1) / span_s, 2) if span_s > 0 else None,
        "windows": len(counts),
        "window_rate_p5": quantile(per_s, 0.05), "window_rate_p50": quantile(per_s, 0.5),
        "window_rate_p95": quantile(per_s, 0.95),
        # the share of windows within half the expected count of it
        "windows_on_rate": (sum(1 for r in per_s if abs(r - rate) <= 0.5 * rate) / len(per_s)
                            if per_s else None),
        "gap_cv": round(statistics.pstdev(gaps) / mean_gap, 3) if mean_gap > 0 else None,
        "longest_gap_ms": round(max(gaps) * 1000, 3),
    }
    if poisson:
        d, p = ks_exponential(gaps, rate)
        out.update(ks_d=round(d, 4), ks_p=p)
    return out


def ramp_error(arrivals_us, stages, start_us, window_ms=500):
    """A ramping executor's achieved rate against its stages: `stages` [(seconds,
    target rate)] from a starting rate of stages[0]'s start (k6's `startRate` is the
    rate before the first stage: pass it as a 0-second stage). Returns the mean and the
    largest absolute relative error of the per-window rate against the linear ramp, over
    windows whose expected rate is at least 1/s."""
    points, t = [], 0.0                          # (second, rate) corners of the ramp
    for seconds, target in stages:
        if not points:
            points.append((0.0, target))
            if seconds == 0:
                continue
        t += seconds
        points.append((t, target))

    def expected(at):
        for (t0, r0), (t1, r1) in zip(points, points[1:]):
            if t0 <= at <= t1:
                return r0 if t1 == t0 else r0 + (r1 - r0) * (at - t0) / (t1 - t0)
        return points[-1][1]

    end_us = start_us + points[-1][0] * 1e6
    counts = windows(arrivals_us, start_us, end_us, window_ms)
    errors = []
    for i, c in enumerate(counts):
        mid = (i + 0.5) * window_ms / 1000
        want = expected(mid)
        if want >= 1:
            errors.append(abs(c * 1000 / window_ms - want) / want)
    if not errors:
        return {"windows": 0}
    return {"windows": len(errors), "mean_error": round(statistics.fmean(errors), 3),
            "max_error": round(max(errors), 3)}


# ------------------------------------------------------------------ connections

def connections(records):
    """Requests per connection and connection lifetimes (first accept to last answer,
    seconds) of HTTP records."""
    by_conn = {}
    for r in records:
        if r["kind"] != "http":
            continue
        c = by_conn.setdefault((r["loop"], r["conn"]), {"n": 0, "at": r["conn_at_us"], "end": 0})
        c["n"] += 1
        c["end"] = max(c["end"], r["ended_us"])
    per = [c["n"] for c in by_conn.values()]
    life = [(c["end"] - c["at"]) / 1e6 for c in by_conn.values()]
    if not per:
        return {"connections": 0}
    return {"connections": len(per), "requests": sum(per),
            "per_connection_min": min(per), "per_connection_median": statistics.median(per),
            "per_connection_max": max(per),
            "lifetime_median_s": round(statistics.median(life), 3),
            "lifetime_max_s": round(max(life), 3)}


# ------------------------------------------------------------------ joins

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
    pairs, tool_only, server_only, ambiguous = [], [], [], 0
    if tool and all(t.get("request_id") for t in tool):
        by = "request id"
        index = {}
        for r in http:
            if r.get("request_id"):
                index.setdefault(r["request_id"], []).append(r)
        used = set()
        for t in tool:
            found = index.get(t["request_id"])
            if found:
                pairs.append((t, found.pop(0)))
                used.add(id(pairs[-1][1]))
            else:
                tool_only.append(t)
        server_only = [r for r in http if id(r) not in used]
    else:
        by = "order"
        ts = sorted(tool, key=lambda t: t["start_us"])
        rs = sorted(http, key=lambda r: r["started_us"])
        n = min(len(ts), len(rs))
        pairs = list(zip(ts[:n], rs[:n]))
        tool_only, server_only = ts[n:], rs[n:]
        ambiguous = sum(1 for a, b in zip(rs, rs[1:]) if b["started_us"] - a["started_us"]
                        < resolution_us)
    client = [t["latency_ms"] - (r["ended_us"] - r["started_us"]) / 1000 for t, r in pairs]
    return {"by": by, "matched": len(pairs), "tool_only": len(tool_only),
            "server_only": len(server_only), "ambiguous": ambiguous,
            "client_ms": {"p50": quantile(client, 0.5), "p99": quantile(client, 0.99),
                          "max": max(client) if client else None}}


# ------------------------------------------------------------------ tools' logs

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
