"""judge's figures and checks of one run, from the journal's columns (journal_pages.
Collector's) and what else the run left (the counter's growth, the tool's claims, its
per-request log): judgement.py holds each figure to its bound; this module computes
the figures and the series the page draws, all with numpy, so a million requests take
a fraction of a second. Nothing here reads a server or runs a tool.
"""
import numpy as np

from loadlib import journal, judgement

QUANTILES = {"p50": 50, "p90": 90, "p99": 99, "p99.9": 99.9}
CHART_POINTS = 600          # the most windows a time series of the page has


def latency_quantiles(ms):
    """{"p50", "p90", "p99", "p99.9", "max", "mean"} of latencies (ms, any order)."""
    s = np.sort(np.asarray(ms, dtype=float))
    if not len(s):
        return {}
    out = {k: journal.quantile(s, q / 100) for k, q in QUANTILES.items()}
    out.update(max=float(s[-1]), mean=float(s.mean()))
    return {k: round(v, 4) for k, v in out.items()}


def in_flight_at_end(cols):
    """The requests the tool may have had in flight when it stopped: the connections that
    carried a request ending in its last judgement.IN_FLIGHT_MS (one request each, or
    none for an unanswered one); at least 1."""
    ended = cols["ended_us"]
    if not len(ended):
        return 0
    recent = ended >= ended.max() - judgement.IN_FLIGHT_MS * 1000
    keys = cols["conn"][recent].astype(np.int64) * 1024 + cols["loop"][recent]
    return max(1, len(np.unique(keys)))


def closed_figures(cols, conns):
    """A closed model's figures: its rate, connections at once, and the longest time the
    server held no request and none arrived (the tool's own pause)."""
    started, ended = cols["started_us"], cols["ended_us"]
    held_until = np.maximum.accumulate(ended)
    idle = (started[1:] - held_until[:-1]) / 1000 if len(started) > 1 else np.zeros(1)
    span = (started[-1] - started[0]) / 1e6 if len(started) > 1 else 0
    return {"rate": (len(started) - 1) / span if span > 0 else 0.0,
            "connections": conns.get("connections", 0),
            "most_at_once": conns.get("most_at_once", 0),
            "idle_ms": round(float(max(idle.max(), 0.0)), 3)}


def schedule_of(cols, model, conns, server_lag_ms=None):
    """The schedule check for the declared model."""
    started = cols["started_us"]
    if model.kind == "open":
        s = judgement.schedule_figures(started, model.rate, poisson=model.poisson,
                                       duration_s=model.duration_s)
        return judgement.schedule_check(s, poisson=model.poisson, server_lag_ms=server_lag_ms)
    if model.kind == "ramp":
        r = journal.ramp_error(started, model.stages(), int(started[0])) if len(started) else {}
        return judgement.ramp_check(r, len(started), name="schedule")
    if model.kind == "closed":
        return judgement.closed_check(closed_figures(cols, conns), model)
    s = journal.schedule(started, 1.0) if len(started) > 2 else {}
    shown = {k: s.get(k) for k in ("achieved_rate", "gap_cv", "longest_gap_ms")}
    return judgement.judged("schedule", judgement.WARN, f"{len(started):,} arrivals",
                            "no model declared (--rate, --ramp or --closed): nothing to hold "
                            "the arrivals to", **shown)


def by_status(cols):
    values, counts = np.unique(cols["status"], return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(values, counts)}


def by_route(cols):
    """{"METHOD /route": requests}."""
    vocab = cols["vocab"]
    width = max(len(vocab["route"]), 1)
    counts = np.bincount(cols["method"].astype(np.int64) * width + cols["route"])
    return {f"{vocab['method'][k // width]} {vocab['route'][k % width]}": int(counts[k])
            for k in np.flatnonzero(counts)}


def protocols(cols):
    words = cols["vocab"]["proto"]
    out = {w: int(np.count_nonzero(cols["proto"] == i)) for i, w in enumerate(words)}
    out["tls"] = int(np.count_nonzero(cols["tls"]))
    return out


def join_log(cols, log, slack_ms):
    """The tool's per-request log joined with the run (journal.join_columns), with the
    requests whose logged latency is below the server's time to answer them (answer_us)
    by more than slack_ms ("impossible")."""
    server = {"started_us": cols["started_us"], "ended_us": cols["ended_us"],
              "request_id": cols.get("request_id")}
    j = journal.join_columns(log, server)
    ti, si = j["pairs"]
    answered = cols["answer_us"][si] / 1000
    j["impossible"] = int(np.count_nonzero(log["latency_ms"][ti] + slack_ms < answered))
    return j


def judge(cols, model, counted=None, lost=0, claims=None, log=None, command=None,
          server_lag_ms=None):
    """Every check of one run: {"verdict", "requests", "checks", "figures"}.
    cols: Collector.columns(); counted: http_requests_total's growth (None: unknown);
    claims: {"requests", "p50", "p99", "rate"} (None where not claimed); log: a tool's
    per-request log as journal.log_columns() gives it; command: (exit status, why the
    tool did not run or None); server_lag_ms: the server's own lateness over the run."""
    claims = claims or {}
    n = len(cols["started_us"])
    statuses = by_status(cols)
    conns = journal.connection_figures(cols["loop"], cols["conn"], cols["conn_at_us"],
                                       cols["started_us"], cols["ended_us"])
    flight = in_flight_at_end(cols)
    checks = [judgement.requests_check(n, statuses, model.requests, model.connections or flight),
              judgement.journal_check(n, lost, counted)]
    if command is not None:
        checks.append(judgement.command_check(*command))
    figures = {"by_route": by_route(cols), "in_flight_at_end": flight}
    if n:
        held = latency_quantiles((cols["ended_us"] - cols["started_us"]) / 1000)
        figures["server_latency_ms"] = held
        checks += [judgement.errors_check(statuses),
                   judgement.connections_check(conns, model.connections,
                                               closed=model.kind == "closed"),
                   judgement.protocol_check(protocols(cols)),
                   schedule_of(cols, model, conns, server_lag_ms),
                   judgement.latency_check(held)]
        checks += claim_checks(claims, cols, flight, n)
        if log is not None:
            slack = judgement.CLAIM_LATENCY_SLACK_MS
            checks.append(judgement.join_check(join_log(cols, log, slack), flight, slack))
            figures["client_latency_ms"] = latency_quantiles(log["latency_ms"])
    return {"verdict": judgement.worst(checks), "requests": n, "checks": checks,
            "figures": figures}


def claim_checks(claims, cols, flight, n):
    out = []
    if claims.get("requests") is not None:
        out.append(judgement.claimed_count_check(int(claims["requests"]), n, flight))
    claimed = [q for q in ("p50", "p99") if claims.get(q) is not None]
    if claimed:     # a sort of every request's answer_us, only when there is a claim to hold
        answered = latency_quantiles(cols["answer_us"] / 1000)
        out += [judgement.claimed_latency_check(q, float(claims[q]), answered[q]) for q in claimed]
    if claims.get("rate") is not None and n > 1:
        span = (cols["started_us"][-1] - cols["started_us"][0]) / 1e6
        shown = (n - 1) / span if span > 0 else float(n)
        out.append(judgement.claimed_rate_check(float(claims["rate"]), shown, n))
    return out


# ------------------------------------------------------------------ what the page draws

def pictures(cols, model, log=None):
    """The page's pictures as numbers: arrivals per window against the declared rate,
    inter-arrival gaps against the exponential, connections open over time, the
    server's and the client's latency distributions. Bounded in size whatever the run."""
    started = cols["started_us"]
    if len(started) < 2:
        return {}
    t0, span_s = int(started[0]), (int(started[-1]) - int(started[0])) / 1e6
    window_ms = max(journal.window_for(model.rate if model.kind == "open" else None),
                    10 * np.ceil(span_s * 100 / CHART_POINTS))
    counts = journal.windows(started, t0, t0 + (span_s * 1e6) + window_ms * 1000, window_ms)
    mids = (np.arange(len(counts)) + 0.5) * window_ms / 1000
    want = [model.rate_at(t) for t in mids]
    out = {"window_ms": float(window_ms),
           "arrivals": {"t_s": mids.round(3).tolist(), "per_s": (np.array(counts) * 1000 /
                                                                 window_ms).tolist(),
                        "declared": None if want[0] is None else [round(w, 3) for w in want]}}
    gaps = np.maximum(np.diff(started), 1) / 1e6     # at the journal's 1 µs, on a log axis
    rate = model.rate if model.kind == "open" else (len(started) - 1) / span_s
    if len(gaps):
        edges = np.logspace(np.log10(gaps.min()), np.log10(gaps.max() * 1.0001), 41)
        seen, _ = np.histogram(gaps, edges)
        expect = len(gaps) * (np.exp(-rate * edges[:-1]) - np.exp(-rate * edges[1:]))
        out["gaps"] = {"edges_ms": (edges * 1000).round(4).tolist(), "seen": seen.tolist(),
                       "exponential": expect.round(2).tolist(), "rate": rate}
    out["connections"] = {"t_s": out["arrivals"]["t_s"], "open": conn_open(cols, t0, mids)}
    grid = np.concatenate([np.linspace(0, 0.9, 46), 1 - np.logspace(-1, -3, 21)[1:]])
    held = (cols["ended_us"] - cols["started_us"]) / 1000
    at = np.minimum((grid * len(held)).astype(np.int64), len(held) - 1)
    out["latency"] = {"q": grid.round(5).tolist(),
                      "server_ms": np.partition(held, at)[at].round(4).tolist()}
    if log is not None and len(log["latency_ms"]):
        out["latency"]["client_ms"] = np.quantile(log["latency_ms"], grid).round(4).tolist()
    return out


def conn_open(cols, t0, mids):
    """The most connections open at once in each window centred on t0 + mids (accepted,
    and not yet past their last answer): a peak, so connections that live a millisecond
    show as well as those that stay."""
    c = journal.per_connection(cols["loop"], cols["conn"], cols["conn_at_us"], cols["ended_us"])
    if not len(c["at"]) or not len(mids):
        return [0] * len(mids)
    times = np.concatenate([c["at"], c["end"]])
    steps = np.concatenate([np.ones(len(c["at"]), np.int64), -np.ones(len(c["end"]), np.int64)])
    order = np.lexsort((-steps, times))  # an accept before an end at the same microsecond
    times, open_after = times[order], np.cumsum(steps[order])
    half = (mids[1] - mids[0]) / 2 * 1e6 if len(mids) > 1 else 1e6
    lo = np.searchsorted(times, t0 + (mids * 1e6 - half).astype(np.int64), side="left")
    hi = np.searchsorted(times, t0 + (mids * 1e6 + half).astype(np.int64), side="left")
    before = np.where(lo > 0, open_after[np.maximum(lo - 1, 0)], 0)  # open as the window begins
    peaks = []
    for a, b, start in zip(lo, hi, before):
        peaks.append(int(max(start, open_after[a:b].max())) if b > a else int(start))
    return peaks
