"""A load run judged from the server's side: the declared model (Model) and the checks
that hold a run's figures to it and to what the tool claims. judge prints them all;
calibrate's check 8 (the schedule and the ramp) is schedule_check() and ramp_check()
here, so both commands give one verdict from one set of thresholds. The thresholds
are the constants below, each with its reason; calibration/README.md ("The schedule
column") explains them for a reader.

Every check returns judged(): {"name", "verdict" (PASS, WARN or FAIL), "figure" (what
was measured, one line), "reason" (why it is not a PASS; empty for one), "figures"}.
The figures come from loadlib/journal.py (schedule_figures() asks it for the schedule's);
nothing here reads a server or runs a tool.

An open model allows any arrivals at most as irregular as Poisson ones at the declared
rate: ten connections each paced at a tenth of the rate from random phases (inter-arrival
CV about 0.9), or Poisson arrivals (CV 1), are honest. So each bound a figure is held to
is the larger of a fixed one, which fits a tool that paces, and what Poisson arrivals
exceed with a chance of about one in 10,000 (POISSON_Z standard errors).
"""
import math
from dataclasses import asdict, dataclass
from typing import Optional

from loadlib import journal

PASS, WARN, FAIL = "PASS", "WARN", "FAIL"
RANK = {PASS: 0, WARN: 1, FAIL: 2}

# Schedule, an open model at a constant rate (journal.schedule's figures):
# - the achieved rate within 5% of the declared one for PASS, 20% for WARN: a tool that
#   paces misses by less; Poisson arrivals' count has a standard error of 1/sqrt(n), so
#   the PASS bound is at least POISSON_Z of those (12.6% for 1,000 arrivals);
# - at least 90% of the windows (100 ms at 200/s: journal.window_for()) within half the
#   expected count for PASS, 60% for WARN: Poisson arrivals keep 97% there with 20 due
#   in a window, and a 100 ms pause empties one;
# - no gap over 100 ms (20 missed sends at 200/s), nor over the gap Poisson arrivals
#   exceed once in 10,000 runs at a lower rate (ln(n / POISSON_TAIL) / rate);
# - arrivals at most CLUMP_PASS to a clump (journal.clumps: arrivals less than a tenth of
#   the mean gap apart): Poisson arrivals make 1.1, connections in lockstep c, each
#   second's share at once the whole share; ten randomly phased connections exceed 2.0
#   once in 10,000 phase draws, eight 2.67 (a few of their phases fall together by chance);
# - an inter-arrival CV, each gap counted at most at the gap bound (a pause is the longest
#   gap's to judge, and alone would lift the CV to any height), at most 1 (Poisson's)
#   plus max(CV_FLOOR, (POISSON_Z + 1) / sqrt(n)) (a sample CV of n exponential gaps has
#   a standard error of 1/sqrt(n) with a long upper tail; the server's own scheduling
#   moves arrivals by fractions of a millisecond, CV_FLOOR), or RANDOM_PHASES_CV unless
#   Poisson arrivals are declared: the CV of c randomly phased paced connections is that
#   of c random spacings, fixed by their phases, and reaches 2.07 once in 10,000 draws for
#   8 to 20 of them. Connections in lockstep reach sqrt(c - 1); each second's share at
#   once, about sqrt(rate);
# - with --poisson, a Kolmogorov-Smirnov p-value of the gaps against the exponential at
#   the declared rate of at least KS_P_PASS, Poisson arrivals' one chance in 10,000 too
#   (a claim of Poisson arrivals that fails it is a FAIL). A pause of the tool or of the
#   machine bunches the arrivals after it: an honest generator paused up to 51 ms on this
#   2-core machine with both cores full gave D 0.12 over 305 arrivals (p 0.0002).
# - The server's own pauses are not the tool's: where notesd's event loop was late by up
#   to L ms over the run (notes_eventloop_lag_max_seconds), the gap bound grows by L and,
#   from a quarter of a window on, the windows a pause of L can empty or crowd
#   (L / window + 1) are not counted against the share on rate; from a mean gap on, a CV
#   or a KS test beyond its bound is the server's bunching as much as the tool's, and is
#   not held against the tool (a KS failure is then a WARN that says so).
SCHEDULE_RATE_PASS, SCHEDULE_RATE_WARN = 0.05, 0.20
SCHEDULE_WINDOWS_PASS, SCHEDULE_WINDOWS_WARN = 0.90, 0.60
SCHEDULE_GAP_PASS_MS = 100.0
SCHEDULE_CV_PASS = 1.0
CV_FLOOR = 0.1
RANDOM_PHASES_CV = 2.2
CLUMP_PASS = 2.5
SERVER_LAG_SHOWN_MS = 20      # the server's own lateness is named in the figure from here
POISSON_Z = 4.0
POISSON_TAIL = 1e-4
KS_P_PASS = POISSON_TAIL
# A ramp (journal.ramp_error, 500 ms windows): a tool exactly on its ramp is off by at
# most one arrival a window (4% with 25 due); PASS when the mean error is within 5% and
# no window is off by more than 20% (a fifth of a window missing or extra is a stall or
# a burst), each bound raised to Poisson arrivals' (1.5 times their mean error,
# sqrt(2 / (pi k)) for k due; POISSON_Z / sqrt(k) for one window); WARN when the mean
# is within 20%; FAIL beyond.
RAMP_MEAN_PASS, RAMP_MEAN_WARN = 0.05, 0.20
RAMP_MAX_PASS = 0.20
RAMP_POISSON_MEAN = 1.5
# Connections: a keep-alive tool holds its c once; PASS up to c + CONN_SPARE at once (a
# probe or a spare), WARN when it opened over 2c in all (it reconnects), FAIL when a closed
# model held more at once than declared.
CONN_SPARE = 2
# A closed model: a gap in which the server held no request and none arrived is the
# tool's own pause; PASS up to SCHEDULE_GAP_PASS_MS, WARN beyond.
# Claims: a tool's count may miss the requests it had in flight when it stopped (the
# connections that carried one in the last IN_FLIGHT_MS); a latency, a request's or a
# percentile, can be no lower than the time every client waited for the same requests
# (the journal's answer_us: from the handler's start to its answer handed to h2o, both
# read before the answer left), less the coarsest resolution tools print (whole
# milliseconds: ab, autocannon). Not ended_us - started_us: the server reads its clock
# for the end after the last write, and a pause there (another connection's turn, the
# process descheduled) lengthens the server's time past the client's. A claimed rate may
# be no higher than the journal's by more than CLAIM_RATE_SLACK (or one request in its
# count).
IN_FLIGHT_MS = 10
CLAIM_LATENCY_SLACK_MS = 1.0
CLAIM_RATE_SLACK = 0.05
# A per-request log joined by order: WARN when over this share of neighbouring arrivals
# were closer than the log's resolution (the pairs may be swapped).
JOIN_AMBIGUOUS_WARN = 0.10


@dataclass
class Model:
    """What the tool was asked to do. kind: "open" (a constant rate), "ramp" (from
    ramp[0] to ramp[1] per second over ramp[2] seconds, then ramp[1] until duration_s),
    "closed" (connections, each waiting for its answer) or None (undeclared)."""
    kind: Optional[str] = None
    rate: Optional[float] = None
    poisson: bool = False
    ramp: Optional[tuple] = None
    connections: Optional[int] = None
    duration_s: Optional[float] = None
    requests: Optional[int] = None

    def stages(self):
        """The ramp as journal.ramp_error's stages: the start, the ramp, the hold."""
        start, top, seconds = self.ramp
        hold = max(0.0, (self.duration_s or seconds) - seconds)
        return [(0, start), (seconds, top)] + ([(hold, top)] if hold else [])

    def rate_at(self, t_s):
        """The declared rate t_s seconds into the run (None without one)."""
        if self.kind == "open":
            return self.rate
        if self.kind == "ramp":
            start, top, seconds = self.ramp
            return top if t_s >= seconds else start + (top - start) * t_s / seconds
        return None

    def describe(self):
        parts = {"open": lambda: f"open model at {self.rate:g}/s"
                 + (" (Poisson arrivals)" if self.poisson else ""),
                 "ramp": lambda: f"ramp from {self.ramp[0]:g}/s to {self.ramp[1]:g}/s in "
                 f"{self.ramp[2]:g} s", "closed": lambda: "closed model",
                 None: lambda: "no model declared"}
        text = parts[self.kind]()
        extra = [f"{self.connections} connections" if self.connections else "",
                 f"{self.duration_s:g} s" if self.duration_s else "",
                 f"{self.requests:,} requests" if self.requests else ""]
        return text + "".join(f", {e}" for e in extra if e)

    def to_dict(self):
        return asdict(self)


def judged(name, verdict, figure, reason="", **figures):
    return {"name": name, "verdict": verdict, "figure": figure, "reason": reason,
            "figures": figures}


def worst(checks):
    """The run's verdict: its worst check's (PASS when there are none)."""
    return max((c["verdict"] for c in checks), key=RANK.get, default=PASS)


# ------------------------------------------------------------------ the schedule

def open_bounds(n, rate, poisson=False, server_lag_ms=0.0, windows=0, window_ms=100):
    """The PASS bounds of an open model for n arrivals at `rate`: {"rate" (relative
    error), "gap_ms", "windows" (share on rate), "per_clump", "cv"}; with `poisson`,
    Poisson arrivals' CV alone; server_lag_ms: the server's own lateness over the run, out
    of `windows` windows of window_ms."""
    n = max(n, 1)
    cv = SCHEDULE_CV_PASS + max(CV_FLOOR, (POISSON_Z + 1) / math.sqrt(n))
    excused = (math.ceil(server_lag_ms / window_ms) + 1) / windows if windows and \
        (server_lag_ms or 0) >= window_ms / 4 else 0.0
    return {"rate": max(SCHEDULE_RATE_PASS, POISSON_Z / math.sqrt(n)),
            "gap_ms": max(SCHEDULE_GAP_PASS_MS, 1000 * math.log(n / POISSON_TAIL) / rate)
            + (server_lag_ms or 0.0),
            "windows": SCHEDULE_WINDOWS_PASS - excused,
            "per_clump": CLUMP_PASS, "cv": cv if poisson else max(cv, RANDOM_PHASES_CV)}


def schedule_figures(arrivals_us, rate, poisson=False, duration_s=None):
    """journal.schedule()'s figures of an open run, its CV with gaps counted at most at
    the gap bound: what schedule_check() reads."""
    clip = open_bounds(len(arrivals_us), rate)["gap_ms"]
    return journal.schedule(arrivals_us, rate, poisson=poisson, duration_s=duration_s,
                            clip_ms=clip)


def rate_error(s):
    """An open run's rate error: its count against the expected one over a declared
    duration, else its achieved rate (over the arrivals' span) against the rate."""
    if s.get("expected"):
        return s["arrivals"] / s["expected"] - 1
    return s["achieved_rate"] / s["rate"] - 1


def bunches(s):
    """Words for how a schedule's arrivals bunch, from journal.schedule's clumps."""
    every = f", one every {s['clump_every_ms']:.0f} ms" if s.get("clump_every_ms") else ""
    return f"about {s.get('per_burst') or s['per_clump']:.0f} arrivals at once{every}"


def bursts(s):
    """Words for bursts that empty whole windows, from journal.schedule's window runs."""
    every = (f", one every {s['window_run_every_ms']:.0f} ms" if s.get("window_run_every_ms")
             else "")
    return f"about {s.get('per_window_run') or s['arrivals']:.0f} arrivals each{every}"


def schedule_check(s, poisson=False, name="schedule", server_lag_ms=None):
    """An open model at a constant rate, from schedule_figures()' figures `s`;
    server_lag_ms: how late the server's own event loop was over the run, at most."""
    if s.get("achieved_rate") is None or not s.get("windows"):
        return judged(name, FAIL, f"{s['arrivals']} arrivals", "too few to judge a schedule", **s)
    rate, err = s["rate"], rate_error(s)
    b = open_bounds(s["arrivals"], rate, poisson, server_lag_ms or 0.0, s["windows"],
                    s["window_ms"])
    on, gap = s["windows_on_rate"], s["longest_gap_ms"]
    cv = s.get("gap_cv_clipped", s["gap_cv"]) or 0.0
    bunched = (s.get("per_clump") or 1.0) > b["per_clump"]
    over = f" over {s['duration_s']:g} s" if s.get("expected") else ""
    figure = (f"{s['arrivals'] / s['duration_s'] if s.get('expected') else s['achieved_rate']:.1f}"
              f"/s of {rate:g}/s{over} ({err * 100:+.1f}%); {on * 100:.0f}% of "
              f"{s['window_ms']:g} ms windows within half of it; longest gap {gap:.1f} ms; "
              f"inter-arrival CV {cv:.2f}; {s.get('per_clump') or 1.0:.2f} arrivals a clump"
              + (f"; KS p {s['ks_p']:.2g}" if poisson and s.get("ks_p") is not None else "")
              + (f"; the server itself late by up to {server_lag_ms:.0f} ms"
                 if server_lag_ms and server_lag_ms >= SERVER_LAG_SHOWN_MS else ""))
    reasons = []
    # a server late by a mean gap or more bunched the arrivals itself, which its clock
    # cannot tell from a tool's doing: the CV and the KS test say little then
    blurred = (server_lag_ms or 0) >= 1000 / rate
    off = on < b["windows"] or gap > b["gap_ms"]
    where = (f": a longest gap of {gap:.0f} ms (allowed {b['gap_ms']:.0f}), {on * 100:.0f}% of "
             f"windows on rate ({b['windows']:.0%} needed)")
    if off and bunched and on < b["windows"]:
        reasons.append(f"bursts, {bursts(s)}" + where)
    else:
        if off:
            reasons.append("stalls" + where)
        if bunched or (cv > b["cv"] and not blurred):
            reasons.append(f"bunched: {bunches(s)}, where Poisson arrivals make 1.1 "
                           f"(allowed {b['per_clump']:g}), CV {cv:.2f} (allowed {b['cv']:.2f}): "
                           "connections firing in lockstep")
    if abs(err) > b["rate"]:
        reasons.append(f"{'fewer' if err < 0 else 'more'} arrivals than declared: "
                       f"{err * 100:+.1f}% (allowed ±{b['rate'] * 100:.1f}%)")
    ks_fails = poisson and s.get("ks_p") is not None and s["ks_p"] < KS_P_PASS
    if ks_fails:
        reasons.append(f"not Poisson arrivals: Kolmogorov-Smirnov D {s['ks_d']:.3f}, p "
                       f"{s['ks_p']:.2g} below {KS_P_PASS:g}"
                       + (f", but the server itself was late by up to {server_lag_ms:.0f} ms, "
                          "more than a mean gap" if blurred else ""))
        ks_fails = not blurred
    b["server_lag_ms"] = server_lag_ms
    if not reasons:
        return judged(name, PASS, figure, "", bounds=b, **s)
    warn = (abs(err) <= max(SCHEDULE_RATE_WARN, b["rate"]) and on >= SCHEDULE_WINDOWS_WARN
            and not ks_fails)
    return judged(name, WARN if warn else FAIL, figure, "; ".join(reasons), bounds=b, **s)


def ramp_bounds(r):
    """The PASS bounds of a ramp from journal.ramp_error()'s figures: {"mean", "max" (for
    the window with the fewest due), "off" (windows beyond their own bound)}."""
    k = max(r.get("least_expected") or 1.0, 1.0)
    poisson_mean = r.get("poisson_mean_error") or math.sqrt(2 / (math.pi * k))
    off = sum(1 for c, due in zip(r.get("counts", []), r.get("due", []))
              if abs(c - due) > max(RAMP_MAX_PASS * due, POISSON_Z * math.sqrt(due)))
    return {"mean": max(RAMP_MEAN_PASS, RAMP_POISSON_MEAN * poisson_mean),
            "max": max(RAMP_MAX_PASS, POISSON_Z / math.sqrt(k)), "off": off}


def ramp_check(r, arrivals, name="ramp"):
    """An open model on a ramp, from journal.ramp_error()'s figures `r`: each window
    within max(RAMP_MAX_PASS, POISSON_Z / sqrt(its arrivals due))."""
    if not r.get("windows"):
        return judged(name, FAIL, f"{arrivals} arrivals", "too few to judge a ramp", **r)
    b = ramp_bounds(r)
    mean, top = r["mean_error"], r["max_error"]
    figure = (f"{arrivals} arrivals; per 500 ms window {mean * 100:.1f}% off the ramp on "
              f"average, {top * 100:.1f}% at most ({r['windows']} windows)")
    if mean <= b["mean"] and not b["off"]:
        return judged(name, PASS, figure, "", bounds=b, **r)
    reasons = []
    if mean > b["mean"]:
        reasons.append(f"off the ramp: mean error {mean * 100:.1f}% (allowed "
                       f"{b['mean'] * 100:.1f}%)")
    if b["off"]:
        reasons.append(f"{b['off']} window{'s' if b['off'] > 1 else ''} off by more than "
                       f"{RAMP_MAX_PASS:.0%} (and more than Poisson arrivals stray): a stall or "
                       "a burst")
    verdict = WARN if mean <= max(RAMP_MEAN_WARN, b["mean"]) else FAIL
    return judged(name, verdict, figure, "; ".join(reasons), bounds=b, **r)


def closed_check(c, model, name="schedule"):
    """A closed model: connections at once against the declared ones, and the tool's
    own pauses (`c`: {"most_at_once", "connections", "idle_ms", "rate"})."""
    figure = (f"{c['rate']:.1f}/s over {c['most_at_once']} connections at once "
              f"({c['connections']} in all); longest pause with nothing held "
              f"{c['idle_ms']:.1f} ms")
    declared = model.connections
    if declared and c["most_at_once"] > declared + CONN_SPARE:
        return judged(name, FAIL, figure, f"more connections at once than declared: "
                      f"{c['most_at_once']} for {declared}", **c)
    reasons = []
    if declared and c["most_at_once"] < declared:
        reasons.append(f"only {c['most_at_once']} of the {declared} connections declared at once")
    if c["idle_ms"] > SCHEDULE_GAP_PASS_MS:
        reasons.append(f"the tool paused: {c['idle_ms']:.0f} ms with no request held nor sent")
    return judged(name, WARN if reasons else PASS, figure, "; ".join(reasons), **c)


def journal_check(records, lost, counted, name="journal"):
    """The journal holds the run: nothing lost, and as many records as
    http_requests_total grew by (when it was scraped): else WARN, the figures being of
    a part of the run."""
    figure = f"{records:,} records" + (f", {lost:,} lost" if lost else "") + \
        (f"; http_requests_total grew by {counted:,}" if counted is not None else "")
    if lost:
        return judged(name, WARN, figure, f"the journal lost {lost} records: its ring went "
                      "round before they were read", records=records, lost=lost, counted=counted)
    if counted is not None and records != counted:
        return judged(name, WARN, figure, f"the journal holds {records} records, "
                      f"http_requests_total grew by {counted}", records=records, lost=lost,
                      counted=counted)
    return judged(name, PASS, figure, records=records, lost=lost, counted=counted)


# ------------------------------------------------------------------ what the server saw

def requests_check(n, by_status, asked=None, allowance=0):
    """The requests the server saw, by status; against the count asked for, when one was
    (the tool may stop short by the requests it shares out over its connections)."""
    figure = f"{n:,} requests" + (": " + ", ".join(f"{c:,} × {s}" for s, c in sorted(
        by_status.items())) if n else "")
    if not n:
        return judged("requests", FAIL, figure, "no request reached the server",
                      by_status=by_status)
    if asked and abs(n - asked) > allowance:
        return judged("requests", FAIL, figure, f"{asked:,} were asked for: "
                      f"{abs(n - asked):,} {'missing' if n < asked else 'too many'}",
                      by_status=by_status, asked=asked)
    return judged("requests", PASS, figure, by_status=by_status, asked=asked)


def errors_check(by_status):
    """Answers of 5xx, and requests the client left before their answer (status 0)."""
    fives = sum(c for s, c in by_status.items() if int(s) >= 500)
    gone = by_status.get("0", by_status.get(0, 0))
    figure = f"{fives:,} answers of 5xx, {gone:,} requests left unanswered by their client"
    if fives or gone:
        return judged("errors", WARN, figure, "the server answered errors, or clients left "
                      "before their answer: the run measured failures", server_errors=fives,
                      client_gone=gone)
    return judged("errors", PASS, figure, server_errors=fives, client_gone=gone)


def protocol_check(protocols):
    """{"h1": n, "h2": n, "tls": n} of the HTTP records: a run on two protocols at once
    measured two things."""
    n = protocols.get("h1", 0) + protocols.get("h2", 0)
    figure = ", ".join(f"{protocols[p]:,} over {name}" for p, name in
                       (("h1", "HTTP/1.1"), ("h2", "HTTP/2")) if protocols.get(p)) + \
        f"; {protocols.get('tls', 0):,} with TLS"
    mixed = [k for k in ("h1", "h2") if protocols.get(k)]
    if len(mixed) > 1 or 0 < protocols.get("tls", 0) < n:
        return judged("protocol", WARN, figure, "the run mixed protocols", **protocols)
    return judged("protocol", PASS, figure, **protocols)


def latency_check(q):
    """The server's own time per request (ended_us - started_us), in ms, the last write
    included (the claims are held to answer_us instead: see CLAIM_LATENCY_SLACK_MS)."""
    figure = (f"the server held them p50 {q['p50']:.3f} ms, p99 {q['p99']:.3f} ms, "
              f"max {q['max']:.3f} ms")
    return judged("latency", PASS, figure, **q)


def command_check(rc, failure=None):
    """How the tool's process ended."""
    if failure:
        return judged("command", FAIL, "the tool did not run", failure, rc=rc)
    if rc:
        return judged("command", WARN, f"exited with status {rc}", "the tool reported a "
                      "failure of its own (a threshold, an error)", rc=rc)
    return judged("command", PASS, "exited with status 0", rc=rc)


# ------------------------------------------------------------------ connections, claims

def connections_check(c, declared, closed=False):
    """journal.connection_figures() `c` against the connections declared (None: none). In a
    closed model they are its definition: more at once is a FAIL. An open model's tool
    may add connections while answers are slow (k6 adds VUs) to keep its schedule."""
    if not c.get("connections"):
        return judged("connections", FAIL, "no connection", "no request reached the server", **c)
    figure = (f"{c['connections']:,} connections, {c['most_at_once']} at once; "
              f"{c['per_connection_median']:g} requests each (median); "
              f"{c['opened_late']} opened after the first second")
    if not declared:
        return judged("connections", PASS, figure, **c)
    if closed and c["most_at_once"] > declared + CONN_SPARE:
        return judged("connections", FAIL, figure, f"held {c['most_at_once']} at once, "
                      f"{declared} declared", **c)
    if c["connections"] > 2 * declared:
        per = c["requests"] / c["connections"]
        return judged("connections", WARN, figure, f"opened {c['connections']:,} for "
                      f"{c['requests']:,} requests (one per {per:.1f}): it reconnects where "
                      f"keep-alive needs {declared}", **c)
    return judged("connections", PASS, figure, **c)


def claimed_count_check(claimed, seen, in_flight):
    diff = seen - claimed
    figure = f"the tool claims {claimed:,}, the server saw {seen:,} ({diff:+,})"
    figures = {"claimed": claimed, "server": seen, "in_flight_at_end": in_flight}
    if abs(diff) <= in_flight:
        return judged("claimed_requests", PASS, figure, **figures)
    if diff < 0:
        reason = f"{-diff:,} requests claimed that never reached the server"
    else:
        reason = (f"{diff:,} requests the server answered are missing from the claim, more than "
                  f"the {in_flight} it could have had in flight at the end")
    return judged("claimed_requests", FAIL, figure, reason, **figures)


def claimed_latency_check(q, claimed_ms, server_ms):
    """server_ms: the same percentile of the time every client waited (answer_us)."""
    name = f"claimed_{q}"
    figure = (f"the tool claims {q} {claimed_ms:.4g} ms, the server answered in {q} "
              f"{server_ms:.3f} ms")
    figures = {"claimed_ms": claimed_ms, "server_ms": server_ms}
    if claimed_ms + CLAIM_LATENCY_SLACK_MS < server_ms:
        return judged(name, FAIL, figure, f"impossible: a client's {q} cannot be below the time "
                      "the server took to answer the same requests", **figures)
    return judged(name, PASS, figure, **figures)


def claimed_rate_check(claimed, shown, n):
    figure = f"the tool claims {claimed:g}/s, the journal shows {shown:.1f}/s"
    slack = max(CLAIM_RATE_SLACK, 1 / max(n, 1))
    figures = {"claimed": claimed, "journal": shown}
    if claimed > shown * (1 + slack):
        return judged("claimed_rate", FAIL, figure, f"{(claimed / shown - 1) * 100:.0f}% above "
                      "the rate the server saw", **figures)
    return judged("claimed_rate", PASS, figure, **figures)


def join_check(j, in_flight, resolution):
    """A per-request log joined with the journal (journal.join_columns' figures)."""
    figure = (f"{j['matched']:,} joined by {j['by']}, {j['tool_only']} in the log only, "
              f"{j['server_only']} at the server only")
    if j["matched"]:
        cm = j["client_ms"]
        figure += f"; client's share p50 {cm['p50']:.3f} ms, p99 {cm['p99']:.3f} ms"
    figures = {k: v for k, v in j.items() if k != "pairs"}
    if j["tool_only"] > in_flight or j["server_only"] > in_flight:
        return judged("join", FAIL, figure, "the log and the server disagree on which requests "
                      f"were made, by more than the {in_flight} in flight at the end", **figures)
    if j.get("impossible"):
        return judged("join", FAIL, figure, f"{j['impossible']} requests whose logged latency is "
                      f"below the server's time to answer by more than {resolution:.3g} ms",
                      **figures)
    if j["by"] == "order" and j["matched"] and j["ambiguous"] > JOIN_AMBIGUOUS_WARN * j["matched"]:
        return judged("join", WARN, figure, f"{j['ambiguous']:,} neighbouring arrivals closer "
                      "than the log's resolution: pairs may be swapped; send an X-Request-Id",
                      **figures)
    return judged("join", PASS, figure, **figures)
