"""calibrate's WebSocket column: the load tools that speak WebSocket, judged by
notesd's own counters on its WebSocket fixtures (/ws/echo and /ws/feed).

    loadtests/calibrate --ws all|k6,artillery,tsung [--out ws.md] [--json ws.json]
    loadtests/calibrate --tools ...      (the column is added for the listed tools that speak it)

Every tool with an adapter in loadlib/tools/ws_*.py (ws_base.py's contract) runs
the same three loads against a notesd started here (pinned to CPU 1, the tool to
CPU 0), and each figure is judged against the server's counters for the route:
notes_ws_connections_opened_total, notes_ws_messages_total{direction},
notes_ws_closes_total{reason}, notes_ws_messages_skipped_total.

 1. ws_connections  echo run (10 connections, 200 messages of 64 bytes each, each
                    sent after the last one's echo): the connections the tool says
                    it opened, against the server's.
 2. ws_messages     the same run: messages the tool says it sent and received,
                    against the data messages the server received and sent (a close
                    frame is not a message: a tool that counts its own is WARN).
 3. ws_echo_rtt     the same run: the tool's round trip at p50 (or its mean); the
                    server answers within microseconds, loopback adds a fraction of a
                    millisecond, so what is above that is the tool's.
 4. ws_feed         10 connections to /ws/feed?rate=200&count=400: every message the
                    server sent must arrive (no gaps), and where the tool computes it,
                    the delivery latency against the server's own clock (each message's
                    sent_us; the same host, the same clock) at p99.
 5. ws_close        /ws/echo?max_messages=5 with 10 messages per connection: the server
                    closes each connection with 1008 after 5 echoes. Does the tool count
                    exactly what it got, say how each connection ended (its code), and
                    stop waiting?

Thresholds are the constants below, with their reasons.
"""
import dataclasses
import os
import time

from loadlib import prom, procs, report
from loadlib.server import Target
from loadlib.commands.calibrate.verdicts import FAIL, PASS, SKIP, WARN, record, skipped
from loadlib.report import logger
from loadlib.tools import run as toolrun
from loadlib.tools import ws_run
from loadlib.tools.ws_base import Unsupported, WsSpec

CHECKS = ("ws_connections", "ws_messages", "ws_echo_rtt", "ws_feed", "ws_close")
ECHO = {"path": "/ws/echo", "mode": "echo", "connections": 10, "messages": 200, "size": 64}
FEED = {"path": "/ws/feed?rate=200&count=400&size=128", "mode": "feed", "connections": 10,
        "expect": 400}
CLOSE = {"path": "/ws/echo?max_messages=5", "mode": "echo", "connections": 10, "messages": 10,
         "size": 64}
CLOSE_ALLOWED, CLOSE_CODE = 5, "1008"
# How long a tool may wait for one answer (the close run's sixth message never gets one:
# a tool that waits for it, rather than seeing the close, waits this long).
ANSWER_TIMEOUT_S = 2
# A run is stopped when it outlives this (artillery alone takes 5-25 s to start).
RUN_LIMIT_S = 150
# Loopback round trips and deliveries take well under a millisecond on an idle machine;
# PASS within 2 ms (several tools round to whole ms), WARN up to 10 ms (the tool's own time
# shows), FAIL beyond: the figure is the tool's, not the server's or the network's.
LATENCY_PASS_MS = 2.0
LATENCY_WARN_MS = 10.0
SETTLE_S = 5  # longest wait after a run for the server to close what the tool left open

log = logger("calibrate")


def route(path):
    return path.split("?", 1)[0]


def ws_server_view(before, after, path):
    """The server's side of one run, for the route of `path`."""
    label = route(path)

    def delta(name, **labels):
        d = prom.deltas(before, after, name)
        return int(sum(v for k, v in d.items()
                       if dict(k).get("path") == label and all(dict(k).get(a) == b
                                                               for a, b in labels.items())))
    closes = {dict(k)["reason"]: int(v) for k, v in prom.deltas(before, after,
                                                                "notes_ws_closes_total").items()
              if dict(k).get("path") == label and v}
    accepted = prom.value(after, "notes_http_connections_accepted_total")
    return {"accepted": int(accepted - prom.value(before, "notes_http_connections_accepted_total")),
            "opened": delta("notes_ws_connections_opened_total"),
            "received": delta("notes_ws_messages_total", direction="received"),
            "sent": delta("notes_ws_messages_total", direction="sent"),
            "skipped": delta("notes_ws_messages_skipped_total"), "closes": closes}


def wait_closed(target, path):
    """Waits until the route has no connection open (closes are counted when they end)."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        if prom.value(target.scrape() or [], "notes_ws_connections", path=route(path)) == 0:
            return
        time.sleep(0.05)


def measure_ws(adapter, target, load):
    """One run with a scrape on each side: {"spec", "result", "failure", "server", "wall_s"}."""
    spec = WsSpec(url=target.url(load["path"], scheme="ws"), timeout_s=ANSWER_TIMEOUT_S,
                  **{k: v for k, v in load.items() if k != "path"})
    before = target.scrape()
    t0 = time.monotonic()
    out = {"spec": dataclasses.asdict(spec), "result": None, "failure": None}
    try:
        res = ws_run.run_ws_tool(adapter, spec, cpu=0 if procs.can_pin((0, 1)) else None,
                                 timeout=RUN_LIMIT_S)
        out["result"] = res.to_dict()
    except Unsupported as e:
        out["unsupported"] = str(e)
    except (toolrun.ToolFailed, ValueError, OSError) as e:
        out["failure"] = str(e)
    out["wall_s"] = round(time.monotonic() - t0, 2)
    wait_closed(target, load["path"])
    out["server"] = ws_server_view(before, target.scrape(), load["path"])
    return out


def latency_verdict(ms):
    return PASS if ms <= LATENCY_PASS_MS else WARN if ms <= LATENCY_WARN_MS else FAIL


def not_run(check, run):
    if run.get("unsupported"):
        return skipped(check, run["unsupported"])
    return record(check, FAIL, None, f"the tool did not run: {run['failure']}")


# ------------------------------------------------------------------ verdicts

def judge_ws_connections(run):
    if run["result"] is None:
        return not_run("ws_connections", run)
    got, truth = run["result"]["connections"], run["server"]["opened"]
    figures = {"tool": got, "server": truth}
    if got == truth:
        return record("ws_connections", PASS, 0, f"{got} connections, as the server counted",
                      figures=figures)
    return record("ws_connections", FAIL, got - truth,
                  f"the tool says {got} connections, the server opened {truth}", figures=figures)


def judge_ws_messages(run):
    if run["result"] is None:
        return not_run("ws_messages", run)
    r, s = run["result"], run["server"]
    d_sent, d_recv = r["sent"] - s["received"], r["received"] - s["sent"]
    client_closes = s["closes"].get("client", 0)
    figures = {"tool_sent": r["sent"], "server_received": s["received"],
               "tool_received": r["received"], "server_sent": s["sent"]}
    if d_sent == 0 and d_recv == 0:
        return record("ws_messages", PASS, 0, f"{r['sent']} sent, {r['received']} received: "
                      "exactly the server's counts", figures=figures)
    if d_recv == 0 and d_sent == client_closes:
        return record("ws_messages", WARN, d_sent,
                      f"received exact; sent {r['sent']} against the server's {s['received']}: "
                      f"the {client_closes} close frames it sent are counted as messages",
                      figures=figures)
    return record("ws_messages", FAIL, d_sent + d_recv,
                  f"sent {r['sent']} (server received {s['received']}), received "
                  f"{r['received']} (server sent {s['sent']})", figures=figures)


def judge_ws_rtt(run):
    if run["result"] is None:
        return not_run("ws_echo_rtt", run)
    lat = run["result"]["latency"]
    value, kind = (lat["p50"], "p50") if lat.get("p50") is not None else (lat.get("mean"), "mean")
    if value is None:
        return skipped("ws_echo_rtt", "the tool reports no message round trip")
    tail = lat.get("p99") if lat.get("p99") is not None else lat.get("max")
    figures = {kind: value, "p99_or_max": tail}
    return record("ws_echo_rtt", latency_verdict(value), value,
                  f"round trip {kind} {value:.2f} ms"
                  + (f", p99/max {tail:.2f} ms" if tail is not None else ""), figures=figures)


def judge_ws_feed(run):
    if run["result"] is None:
        return not_run("ws_feed", run)
    r, s = run["result"], run["server"]
    figures = {"tool_received": r["received"], "server_sent": s["sent"],
               "server_skipped": s["skipped"], "p50_ms": r["latency"].get("p50"),
               "p99_ms": r["latency"].get("p99")}
    if r["received"] != s["sent"]:
        return record("ws_feed", FAIL, r["received"] - s["sent"],
                      f"received {r['received']} of the {s['sent']} messages the server sent "
                      f"({s['skipped']} left out by the server)", figures=figures)
    p99 = r["latency"].get("p99")
    if p99 is None:
        return record("ws_feed", PASS, 0, f"every one of {s['sent']} messages; no latency figure",
                      figures=figures)
    return record("ws_feed", latency_verdict(p99), p99,
                  f"every one of {s['sent']} messages; delivery against the server's clock "
                  f"p50 {r['latency']['p50']:.2f} ms, p99 {p99:.2f} ms", figures=figures)


def judge_ws_close(run, connections):
    if run["result"] is None:
        return not_run("ws_close", run)
    r, s = run["result"], run["server"]
    limited = s["closes"].get("message_limit", 0)
    figures = {"tool_received": r["received"], "server_sent": s["sent"],
               "server_closed_1008": limited, "tool_closes": r["closes"], "errors": r["errors"],
               "tool_connections": r["connections"], "wall_s": run["wall_s"]}
    figures["server_accepted_tcp"] = s["accepted"]
    if r["received"] != s["sent"]:
        raw = s["accepted"] - s["opened"]
        return record("ws_close", FAIL, r["received"] - s["sent"],
                      f"counts {r['received']} echoes, the server sent {s['sent']}"
                      + (f"; after the server's close it opened {raw} more TCP connections that "
                         "never made a WebSocket handshake" if raw > 0 else ""), figures=figures)
    seen = (r["closes"] or {}).get(CLOSE_CODE, 0)
    if r["closes"] is not None and seen == limited == connections:
        return record("ws_close", PASS, 0, f"{CLOSE_ALLOWED} echoes and the server's 1008 on "
                      f"each of {connections} connections, counted exactly", figures=figures)
    how = ", ".join(f"{k} x{v}" for k, v in sorted(r["errors"].items())) or "nothing"
    again = r["connections"] - connections
    return record("ws_close", WARN, None,
                  f"counts exact, but no close code: the server's close shows as {how}"
                  + (f"; it reconnected {again} times and went on" if again > 0 else ""),
                  figures=figures)


# ------------------------------------------------------------------ the column

def split(names):
    """(names only the WebSocket column knows, the rest) of a --tools list."""
    ws_only = {n for n, _, _ in ws_run.ws_adapters()} - {n for n, _, _ in toolrun.adapters()}
    return [n for n in names if n in ws_only], [n for n in names if n not in ws_only]


def run_column(names, notesd):
    """{"started", "tools": [{tool, installed, why, version, checks, runs}], "seconds_total"}
    for the WebSocket adapters among `names` (["all"]: every one)."""
    t0 = time.monotonic()
    chosen = [a for a in ws_run.ws_adapters() if "all" in names or a[0] in names]
    out = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": procs.machine_info(), "loadavg_start": procs.loadavg(), "tools": []}
    target = Target(notesd, procs.can_pin((0, 1)))
    try:
        for name, adapter, why in chosen:
            row = {"tool": name, "installed": adapter is not None, "why": why,
                   "version": adapter.version() if adapter else None, "checks": [], "runs": {}}
            if adapter is not None:
                log(f"{name}: WebSocket echo, feed and close runs")
                runs = {key: measure_ws(adapter, target, load)
                        for key, load in (("echo", ECHO), ("feed", FEED), ("close", CLOSE))}
                row["runs"] = runs
                row["checks"] = [judge_ws_connections(runs["echo"]), judge_ws_messages(runs["echo"]),
                                 judge_ws_rtt(runs["echo"]), judge_ws_feed(runs["feed"]),
                                 judge_ws_close(runs["close"], CLOSE["connections"])]
            out["tools"].append(row)
    finally:
        target.stop()
    out["loadavg_end"] = procs.loadavg()
    out["seconds_total"] = round(time.monotonic() - t0, 1)
    return out


def merge_column(base, new):
    """The column of an earlier run (`base`) with the rows of the tools `new` ran replaced by,
    or joined with, new's; "merged" lists which rows came from which run, as the matrix's
    header does (scorecard.merge). A run of no WebSocket tool leaves `base` as it was."""
    names = {t["tool"] for t in new["tools"]}
    if not names:
        return base

    def run_of(column, tools):
        return {"started": column["started"], "tools": sorted(tools),
                "seconds_total": column.get("seconds_total"),
                "loadavg_start": column.get("loadavg_start")}

    runs = base.get("merged") or [run_of(base, [t["tool"] for t in base["tools"]])]
    runs = [dict(r, tools=[n for n in r["tools"] if n not in names]) for r in runs]
    out = dict(base, tools=sorted([t for t in base["tools"] if t["tool"] not in names]
                                  + new["tools"], key=lambda t: t["tool"]))
    out["merged"] = [r for r in runs if r["tools"]] + [run_of(new, names)]
    return out


def ws_markdown(column):
    """The column as Markdown: one row per tool, one cell per check, then the details."""
    load = lambda xs: " ".join(f"{x:.2f}" for x in xs or [])
    merged = column.get("merged")
    when = "; ".join((f"rows of {', '.join(r['tools'])}: " if merged else "")
                     + f"{r['started']}, {r['seconds_total']} s, load average "
                     f"{load(r.get('loadavg_start'))} at the start" for r in merged or [column])
    lines = ["## WebSocket column", "",
             f"notesd's /ws/echo and /ws/feed, judged by its own counters; {when}.",
             "", "| tool | version | " + " | ".join(CHECKS) + " |",
             "|---|---|" + "---|" * len(CHECKS)]
    for row in column["tools"]:
        if not row["installed"]:
            lines.append(f"| {row['tool']} | {row['why']} |" + " |" * len(CHECKS))
            continue
        cells = [c["verdict"] for c in row["checks"]]
        lines.append(f"| {row['tool']} | {row['version']} | " + " | ".join(cells) + " |")
    lines.append("")
    for row in column["tools"]:
        for c in row["checks"]:
            lines.append(f"- **{row['tool']}, {c['check']}**: {c['verdict']}: {c['detail']}")
    return "\n".join(lines) + "\n"


def generated_line(json_name):
    """The first line of a report calibrate writes from the data in `json_name` (a path from
    the report's folder): the command's, not to be edited, and how to write it again."""
    return (f"<!-- generated by loadtests/calibrate from {json_name}; do not edit: "
            f"calibrate --report-from {json_name} writes it again -->\n")


def write_column_report(column, md_path, json_path):
    """The column alone as Markdown at md_path, its first line naming json_path; the text
    without that line."""
    text = ws_markdown(column)
    folder = os.path.dirname(os.path.abspath(md_path))
    with open(md_path, "w") as f:
        f.write(generated_line(os.path.relpath(os.path.abspath(json_path), folder)) + text)
    return text


def write_ws(column, outdir, md_path=None, json_path=None):
    """ws-scorecard.md and .json into outdir (and copies at md_path, json_path); the Markdown."""
    os.makedirs(outdir, exist_ok=True)
    own_json = os.path.join(outdir, "ws-scorecard.json")
    for path in (own_json, json_path):
        if path:
            report.write_json(path, column, indent=1, default=str)
    text = write_column_report(column, os.path.join(outdir, "ws-scorecard.md"), own_json)
    if md_path:
        write_column_report(column, md_path, json_path or own_json)
    return text


def rewrite_column(column, json_path):
    """--report-from for a --ws run's JSON: its report written again beside it (the JSON's
    name with .md); the text."""
    return write_column_report(column, os.path.splitext(json_path)[0] + ".md", json_path)


def attach(data, names, notesd, smoke):
    """--tools: the column for the listed tools that speak WebSocket, into data["websocket"]
    (not in a --smoke run, which checks counts alone); a --merge keeps the rows of the
    earlier run's column that this run did not measure again."""
    if smoke:
        return
    column = run_column(names, notesd)
    data["websocket"] = merge_column(data["websocket"], column) if data.get("websocket") \
        else column


def main_ws(args, results_dir):
    """--ws LIST: the column alone; its scorecard on stdout and in results_dir."""
    column = run_column([n.strip() for n in args.ws.split(",") if n.strip()], args.notesd)
    outdir = os.path.join(results_dir, "calibrate-ws-" + column["started"].replace(":", ""))
    print(write_ws(column, outdir, args.out, args.json))
    log(f"WebSocket scorecard in {outdir}")
    return 0 if column["tools"] else 1
