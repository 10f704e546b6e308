"""reconcile: check a load tool's counts and latency against the server's own metrics.

    loadtests/reconcile --tool k6|wrk --summary FILE --before METRICS --after METRICS
                        [--tolerance N] [--json OUT]

--summary   k6: the JSON that handleSummary writes (-e SUMMARY=FILE, see
            loadtests/k6/lib/summary.js) or the file of `k6 run --summary-export`;
            wrk: wrk's output holding the `WRK_JSON {...}` line of
            loadtests/wrk/notes.lua (per-route counts need BREAKDOWN=1; its
            "sent" counts are an upper bound: wrk generates one request to
            check the script that it never sends)
--before, --after
            two scrapes of the server's /metrics (Prometheus text format), taken
            before the load started and after it ended
--tolerance how many more requests the server may count than the client (default 0)
--json      also write every figure as JSON to OUT

From the two scrapes it takes the server's deltas: requests per (method, path,
status) from http_requests_total, and latency percentiles per route (method and
path) and overall from http_request_duration_seconds_bucket, interpolated
linearly inside a bucket as PromQL's histogram_quantile() does. It prints what the client counted, what
the server counted and the difference, per route, per status and in total, and
the client's latency minus the server's per percentile (network, queueing in
the kernel and the client's own overhead).

Any count that does not agree is printed on a line starting with MISMATCH and
the exit status is 1. Exit status 2: unusable input.

Why a tolerance: a load tool stops counting when its duration ends, while each
connection may still have one request in flight. The server answers those (or
counts them with status 0 when the client had already gone), so it may count up
to one request per connection more than the client, never fewer. wrk stops that
way; k6 lets in-flight iterations finish (gracefulStop) and then normally agrees
exactly. Give the number of connections/VUs as the tolerance.
"""
import argparse
import math
import sys

from loadlib import report
from loadlib.commands.reconcile.client import PERCENTILES, load_k6, load_wrk, route_text
from loadlib.prom import InputError, deltas, histogram_deltas, read_metrics
from loadlib.quantile import HistogramError, histogram_quantile
from loadlib.report import fmt_ms_fine, fmt_signed


# --------------------------------------------------------------------- server side

class ServerCounts:
    """What the server counted between two scrapes of its /metrics: requests per
    (route, status) from http_requests_total, those with status 0 (the client had
    gone), and latency percentiles per route and overall from
    http_request_duration_seconds, each with the bucket it falls in."""

    def __init__(self, before, after):
        counts = deltas(before, after, "http_requests_total")
        self.by_route_status = {}      # ((method, path), status int) -> n
        for key, n in counts.items():
            labels = dict(key)
            try:
                status = int(labels.get("status_code", "-1"))
            except ValueError:
                status = -1
            k = ((labels.get("method", "?"), labels.get("path", "?")), status)
            self.by_route_status[k] = self.by_route_status.get(k, 0) + int(round(n))
        self.total = sum(self.by_route_status.values())
        self.client_left = sum(n for (_, s), n in self.by_route_status.items() if s == 0)

        def by_path(labels):
            if labels.get("status_code") == "0":
                return None
            return f"{labels.get('method', '?')} {labels.get('path', '?')}"

        def overall(labels):
            return None if labels.get("status_code") == "0" else "all"

        name = "http_request_duration_seconds"
        self.latency = {}              # "METHOD path" or "all" -> {p: (ms, (lo_ms, hi_ms)), "count": n}
        for groups in (histogram_deltas(before, after, name, by_path),
                       histogram_deltas(before, after, name, overall)):
            for group, buckets in groups.items():
                entry = {"count": int(round(buckets[-1][1])) if buckets else 0}
                for p in PERCENTILES:
                    v, rng = histogram_quantile(p / 100.0, buckets)
                    entry[p] = None if v is None else (v * 1000.0, (rng[0] * 1000.0, rng[1] * 1000.0))
                self.latency[group] = entry

    def route_total(self, route, exclude_zero=False):
        return sum(n for (r, s), n in self.by_route_status.items()
                   if r == route and not (exclude_zero and s == 0))

    def routes(self):
        return sorted({r for r, _ in self.by_route_status})


# --------------------------------------------------------------------- comparison

def compare(client, server, tolerance):
    """Returns (rows, mismatches, result dict)."""
    mismatches = []
    rows = []   # (label, client, server, diff, note)
    unatt = sum(client.unattributed.values())

    def check(what, c, s, slack=0, sent=None):
        d = s - c
        bad = d < 0 or d > tolerance + slack
        if sent is not None and s > sent:
            mismatches.append(f"MISMATCH {what}: the server counted {s} but the client sent only {sent}"
                              + (" that were not counted elsewhere" if what.endswith(" other") else ""))
        if bad:
            if d < 0:
                why = "the server counted fewer requests than the client received answers"
            else:
                why = f"more than the allowed {tolerance + slack}"
            mismatches.append(f"MISMATCH {what}: client {c}, server {s}, difference {fmt_signed(d)} ({why})")
        return d

    # per route
    unrouted = []
    if client.has_routes():
        croutes = client.by_route()
        for route in sorted(set(croutes) | set(server.routes())):
            c = croutes.get(route, 0)
            s = server.route_total(route)
            sent = client.sent.get(route, 0) if client.sent is not None else None
            if not c and not s and not sent:
                continue                     # a series the server had from before, untouched by this test
            note = []
            if route[1] == "other" and not c and not sent:
                # The server could not route these, e.g. the Express peer on Deno answers 400 on
                # path "other" when a connection closes before the body was read. They can only be
                # requests of the same method that were sent and not counted under their route.
                unrouted.append(route)
                if client.sent is not None:
                    spare = sum(max(0, n - server.route_total(r)) for r, n in client.sent.items()
                                if r[0] == route[0])
                    note.append(f"unrouted: fits in the {spare} {route[0]} requests sent and not counted "
                                "under their route" if s <= spare else "unrouted")
                    d = check(route_text(route), c, s, slack=unatt, sent=spare)
                else:
                    d = check(route_text(route), c, s, slack=unatt)
                    note.append("unrouted")
            else:
                d = check(route_text(route), c, s, slack=unatt, sent=sent)
                if sent is not None:
                    note.append(f"sent {sent}")
            left = server.route_total(route) - server.route_total(route, exclude_zero=True)
            if left:
                note.append(f"{left} with status 0 (client gone)")
            rows.append((route_text(route), c, s, d, ", ".join(note)))
        if unatt:
            rows.append(("(unattributed)", unatt, 0, -unatt, "responses wrk could not name, by status: "
                         + ", ".join(f"{s}: {n}" for s, n in sorted(client.unattributed.items()))))

    # per route and status
    status_rows = []
    if client.has_routes():
        keys = set(client.by_route_status)
        for (route, status) in server.by_route_status:
            if status == 0:
                continue
            neg = [k for k in keys if k[0] == route and isinstance(k[1], str)]
            expected = [int(k[1][1:]) for k in neg]
            if neg and status not in expected:
                continue   # counted in the "!NNN" row below
            keys.add((route, status))
        for route, status in sorted(keys, key=lambda k: (k[0], isinstance(k[1], str), str(k[1]))):
            c = client.by_route_status.get((route, status), 0)
            if isinstance(status, str):
                not_this = int(status[1:])
                s = sum(n for (r, st), n in server.by_route_status.items()
                        if r == route and st not in (0, not_this))
                label = f"{route_text(route)} not {not_this}"
            else:
                s = server.by_route_status.get((route, status), 0)
                label = f"{route_text(route)} {status}"
            if not c and not s:
                continue
            slack = unatt if not isinstance(status, str) else 0
            d = check(label, c, s, slack=slack)
            status_rows.append((label, c, s, d, ""))

    # total
    total_diff = check("total", client.total, server.total,
                       sent=sum(client.sent.values()) if client.sent is not None else None)
    rows.append(("total", client.total, server.total, total_diff,
                 f"{server.client_left} with status 0 (client gone)" if server.client_left else ""))

    # failures: the tool's own count against the server's non-2xx
    server_non2xx = sum(n for (_, s), n in server.by_route_status.items() if s != 0 and not 200 <= s <= 299)
    if client.tool == "wrk":
        d = check("non-2xx responses", client.failed, server_non2xx)
        status_rows.append(("non-2xx", client.failed, server_non2xx, d, ""))

    if unrouted:
        client.notes.append(
            "the server counted requests under path \"other\" (" + ", ".join(route_text(r) for r in unrouted)
            + "): it could not route them, typically because the connection closed before it had read the "
              "request; such requests count against the tolerance like any request in flight")
    result = {
        "tool": client.tool,
        "mode": client.mode,
        "tolerance": tolerance,
        "client": {
            "total": client.total, "duration_s": client.duration_s, "rps": client.rps,
            "percentiles_ms": {f"p{p}": v for p, v in client.percentiles.items()},
            "max_ms": client.max_ms, "failed": client.failed, "failed_what": client.failed_what,
            "socket_errors": client.socket_errors,
            "by_route_status": {f"{route_text(r)} {s}": n for (r, s), n in sorted(
                client.by_route_status.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))},
            "unattributed": {str(s): n for s, n in sorted(client.unattributed.items())},
            "sent": None if client.sent is None else {route_text(r): n for r, n in sorted(client.sent.items())},
        },
        "server": {
            "total": server.total, "client_left": server.client_left, "non2xx": server_non2xx,
            "by_route_status": {f"{route_text(r)} {s}": n for (r, s), n in sorted(server.by_route_status.items())},
            "latency_ms": {g: {f"p{p}": (None if e[p] is None else round(e[p][0], 4)) for p in PERCENTILES}
                           | {f"p{p}_bucket": (None if e[p] is None else [round(x, 4) if x != math.inf else None
                                                                       for x in e[p][1]]) for p in PERCENTILES}
                           | {"count": e["count"]}
                           for g, e in sorted(server.latency.items())},
        },
        "difference": server.total - client.total,
        "client_minus_server_ms": {},
        "mismatches": mismatches,
        "ok": not mismatches,
        "notes": list(client.notes),
    }
    overall = server.latency.get("all")
    for p in PERCENTILES:
        cv = client.percentiles.get(p)
        sv = overall[p][0] if overall and overall[p] else None
        result["client_minus_server_ms"][f"p{p}"] = None if cv is None or sv is None else round(cv - sv, 4)
    return rows, status_rows, mismatches, result


def render_text(args, client, server, rows, status_rows, mismatches, result):
    out = []
    mode = f", mode {client.mode}" if client.mode else ""
    out.append(f"reconcile: {client.tool}{mode}: {args.summary}")
    out.append(f"  server deltas between {args.before} and {args.after}")
    out.append("")
    width = max([len(r[0]) for r in rows + status_rows] + [24])
    head = f"{'requests':<{width}}  {'client':>9}  {'server':>9}  {'server-client':>13}"
    out.append(head)
    for label, c, s, d, note in rows:
        out.append(f"{label:<{width}}  {c:>9}  {s:>9}  {fmt_signed(d):>13}" + (f"   {note}" if note else ""))
    if status_rows:
        out.append("")
        out.append(f"{'by status':<{width}}  {'client':>9}  {'server':>9}  {'server-client':>13}")
        for label, c, s, d, note in status_rows:
            out.append(f"{label:<{width}}  {c:>9}  {s:>9}  {fmt_signed(d):>13}" + (f"   {note}" if note else ""))
    out.append("")
    out.append(f"client {client.failed_what}: {client.failed}"
               + (f"; socket errors: {client.socket_errors}" if client.socket_errors is not None else ""))
    out.append(f"server non-2xx responses: {result['server']['non2xx']}; "
               f"status 0 (client gone before the answer was written): {server.client_left}")
    out.append("")

    overall = server.latency.get("all")
    out.append("latency (ms)   client      server  server bucket      client-server")
    for p in PERCENTILES:
        cv = client.percentiles.get(p)
        sv = overall[p] if overall and overall[p] else None
        bucket = f"{fmt_ms_fine(sv[1][0])}..{fmt_ms_fine(sv[1][1])}" if sv else "-"
        diff = "-" if cv is None or sv is None else f"{cv - sv[0]:+.3f}"
        out.append(f"p{p:<12} {fmt_ms_fine(cv):>7}  {fmt_ms_fine(sv[0] if sv else None):>10}  {bucket:<17} {diff:>13}")
    out.append("  client-server = time outside the server's handler: network, kernel queues and the")
    out.append("  load tool's own overhead. Server figures are interpolated inside histogram buckets")
    out.append("  (histogram_quantile), so only differences larger than the bucket are meaningful.")
    paths = sorted(g for g in server.latency if g != "all" and server.latency[g]["count"])
    if paths:
        out.append("")
        out.append("server latency by route (ms)     count        p50        p95        p99")
        for g in paths:
            e = server.latency[g]
            out.append(f"{g:<28} {e['count']:>9}  " + "  ".join(
                f"{fmt_ms_fine(e[p][0] if e[p] else None):>9}" for p in PERCENTILES))
    for note in client.notes:
        out.append(f"note: {note}")
    out.append("")
    if args.tolerance:
        out.append(f"tolerance {args.tolerance}: the load tool stops counting when its time is up while each "
                   "connection may still")
        out.append("  have a request in flight; the server answers those (or counts them with status 0 once "
                   "the client")
        out.append(f"  has gone), so the server may count up to {args.tolerance} more than the client. "
                   "It may never count fewer.")
    else:
        out.append("tolerance 0: client and server must agree exactly.")
    for m in mismatches:
        out.append(m)
    if mismatches:
        out.append(f"RESULT MISMATCH ({len(mismatches)} count(s) disagree)")
    else:
        out.append(f"RESULT OK: client {client.total}, server {server.total}, "
                   f"difference {fmt_signed(server.total - client.total)} (allowed 0..{args.tolerance})")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="reconcile",
        description="Check a load tool's counts and latency against the server's /metrics deltas.")
    ap.add_argument("--tool", required=True, choices=("k6", "wrk"))
    ap.add_argument("--summary", required=True, help="k6 summary JSON, or wrk output with the WRK_JSON line")
    ap.add_argument("--before", required=True, help="/metrics scrape taken before the load")
    ap.add_argument("--after", required=True, help="/metrics scrape taken after the load")
    ap.add_argument("--tolerance", type=int, default=0,
                    help="how many more requests the server may count (in flight at the end; "
                         "at most the number of connections)")
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    args = ap.parse_args(argv)
    if args.tolerance < 0:
        ap.error("--tolerance must be >= 0")
    try:
        client = load_k6(args.summary) if args.tool == "k6" else load_wrk(args.summary)
        server = ServerCounts(read_metrics(args.before), read_metrics(args.after))
    except (InputError, HistogramError) as e:
        print(f"reconcile: {e}", file=sys.stderr)
        return 2
    rows, status_rows, mismatches, result = compare(client, server, args.tolerance)
    sys.stdout.write(render_text(args, client, server, rows, status_rows, mismatches, result))
    if args.json:
        result["files"] = {"summary": args.summary, "before": args.before, "after": args.after}
        report.write_json(args.json, result, indent=2, sort_keys=True)
    return 1 if mismatches else 0

