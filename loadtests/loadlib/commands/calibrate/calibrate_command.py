"""calibrate: is the load tool telling the truth? Known-latency runs against notesd.

    loadtests/calibrate [--out report.md] [--json raw.json] [--seconds 5]
    loadtests/calibrate --base-url http://127.0.0.1:8080 [--metrics-url http://127.0.0.1:9091/metrics]
    loadtests/calibrate --tools all|h2load,ab,... [--smoke] [--out report.md] [--json raw.json]
    loadtests/calibrate --tools k6 --merge calibration/latest-scorecard.json [--out ...] [--json ...]
    loadtests/calibrate --ws all|k6,artillery,tsung [--out ws.md] [--json ws.json]
    loadtests/calibrate --report-from calibration/latest-scorecard.json

Without --base-url it starts build/notesd itself on 127.0.0.1:18220 (metrics
on 19220; --port, --metrics-port), pinned to CPU 1 with `taskset -c 1`, and
stops it at the end; wrk and the Python generator run pinned to CPU 0. The
routes used (/delay, /primes, /status) never touch the database, so no
PostgreSQL is needed (DB_URL only has to parse).

Sections of the Markdown report (stdout, and --out FILE):

 1. /delay/50 at 1, 10 and 50 connections, and ?jitter=20 at 10 and 50:
    wrk's percentiles and req/s against the truth (p50 = 50 ms; with jitter J
    uniform on [50-J, 50+J]: p90 = 50+0.8J, p99 = 50+0.98J; req/s = c / 50 ms).
 2. The server's own view: Server-Timing `total` of a few sequential
    requests against what the client measured, and the delta of the
    http_request_duration_seconds histogram for path /delay/:ms.
 3. Saturation: /primes at 1 and 50 connections (latency = queueing, Little's
    law), and /delay/50 measured while /primes saturates the loop.
 4. Coordinated omission: /delay/0 while a /primes request stalls the loop
    every --stall-every seconds: wrk (closed), a raw closed model and an open
    model at --open-rate (loadtests/calibration/openload.py), with the open
    model's expected p99 computed from the measured stalls. The stalling
    request's ?below= is sized to take about --stall-ms first.

Every run is bounded (--seconds each, about 60 s in all at the default) and
only loopback targets are accepted.

--tools LIST replaces those sections with the load-tool conformance matrix
(matrix.py and its parts run and judge it, scorecard.py writes it): every
listed tool ("all": every adapter in loadlib/tools) through the same checks against
a notesd started for it, a scorecard on stdout and in
loadtests/results/calibrate-<UTC time>/ (scorecard.md, scorecard.json, SVG charts,
scorecard.html; --html FILE: that page here too).
--smoke runs the counts check alone, two seconds per tool. The scorecard gains the
WebSocket column (ws.py) for the listed tools that speak WebSocket; --ws
LIST runs that column alone.

--report-from JSON runs nothing: the scorecard of a saved --tools or --ws run's JSON
is written again beside it (its name with .md, and the charts), made from the data
alone, as the run wrote it; the committed scorecards in calibration/ are made so.
"""
# The command is split by what each part owns. Without --tools: calibrate_runs.py (one
# measure_*() per section, and the load under them) and calibrate_report.py (one
# section_*() per section). With --tools: matrix.py (checks 1-6, each tool's
# runs), calibrate_target.py (its notesd and the server's side of a run), verdicts.py
# (the judges and their thresholds), protocols.py (check 7, HTTP/2) and
# scorecard.py (the scorecard). This module holds the options, the target, the
# order of the phases of both modes (run_sections() and sections_markdown(); run_matrix())
# and the files they write: a new section or phase is a line or two there.
import argparse
import datetime
import json
import os
import tempfile
import time
import urllib.parse

from loadlib import procs, server as srv
from loadlib.commands.calibrate import (matrix, protocols, calibrate_report, calibrate_runs, scorecard,
                                       scorecard_page, ws)
from loadlib.netcheck import is_loopback
from loadlib.paths import LOADTESTS, REPO
from loadlib.report import logger

log = logger("calibrate")


def parse_args(argv=None):
    """The options; (parser, args), the parser for the errors main() still finds."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--base-url", help="a running target; default: start build/notesd")
    p.add_argument("--metrics-url", help="its /metrics (default with a started notesd: its own)")
    p.add_argument("--notesd", default=os.path.join(REPO, "build", "notesd"))
    p.add_argument("--db-url", default="postgresql://calibrate@127.0.0.1:9/unused",
                   help="DB_URL for the started notesd (never connected to by these routes)")
    p.add_argument("--port", type=int, default=18220)
    p.add_argument("--metrics-port", type=int, default=19220)
    p.add_argument("--seconds", type=int, default=5, help="length of each run (1..30)")
    p.add_argument("--primes-below", type=int, default=100000,
                   help="the saturation route's ?below= (default 100000)")
    p.add_argument("--stall-ms", type=float, default=250.0,
                   help="target length of one stall; --stall-below is sized to it (default 250)")
    p.add_argument("--stall-below", type=int,
                   help="?below= of the stalling /primes request (default: sized to --stall-ms)")
    p.add_argument("--stall-every", type=float, default=1.0, help="seconds between stalls")
    p.add_argument("--co-connections", type=int, default=10)
    p.add_argument("--open-rate", type=float, default=250.0,
                   help="requests per second of the open model (default 250)")
    p.add_argument("--slow-ms", type=float, default=100.0)
    p.add_argument("--samples", type=int, default=20, help="Server-Timing samples")
    p.add_argument("--wrk", help="path of wrk (default: from PATH)")
    p.add_argument("--out", help="also write the Markdown report here")
    p.add_argument("--json", help="write the raw figures here")
    p.add_argument("--html", help="with --tools: also write the scorecard as one page here")
    p.add_argument("--ws", help="the WebSocket column alone: 'all' or a comma list of tools "
                   "with a loadlib/tools/ws_* adapter (k6, artillery, tsung)")
    p.add_argument("--tools", help="the conformance matrix instead: 'all' or a comma list of "
                   "load tools (loadlib/tools adapters)")
    p.add_argument("--smoke", action="store_true",
                   help="with --tools: the counts check only, about 2 s per tool")
    p.add_argument("--merge", metavar="SCORECARD_JSON",
                   help="with --tools: the scorecard of that earlier full run with the rows of "
                        "the tools run now replaced or added (e.g. calibration/latest-scorecard"
                        ".json); the header says which rows came from which run")
    p.add_argument("--report-from", metavar="SCORECARD_JSON",
                   help="run nothing: write the report of a saved scorecard JSON (--tools or "
                        "--ws) again beside it, as its name with .md")
    args = p.parse_args(argv)
    if args.report_from and (args.tools or args.ws or args.merge):
        p.error("--report-from runs nothing; drop --tools, --ws and --merge")
    if args.ws and args.tools:
        p.error("--ws runs the WebSocket column alone; --tools adds it to the matrix")
    if args.smoke and not args.tools:
        p.error("--smoke goes with --tools")
    if args.merge and not args.tools:
        p.error("--merge goes with --tools")
    if args.html and not args.tools:
        p.error("--html goes with --tools")
    if args.tools and args.base_url:
        p.error("--tools starts its own notesd (it needs TLS and h2c variants); drop --base-url")
    if not 1 <= args.seconds <= 30:
        p.error("--seconds must be in 1..30")
    if args.stall_every < 0.2:
        p.error("--stall-every must be at least 0.2")

    return p, args


# ------------------------------------------------------------------ the target

def start_notesd(args, pin):
    """build/notesd on 127.0.0.1, pinned to CPU 1 when the machine allows; its log in a
    temporary file that goes away with it. Returns its ProcessUnderTest."""
    for p in (args.port, args.metrics_port):
        if not srv.port_free(p):
            raise SystemExit(f"calibrate: port {p} is taken; pick --port/--metrics-port")
    env = srv.target_env("notesd", os.environ, args.db_url, args.port, args.metrics_port)
    env.update(LOG_LEVEL="warn", SERVER_TIMING="1")     # section 2 reads Server-Timing
    argv, cwd = srv.target_command("notesd", args.notesd)
    log_path = os.path.join(tempfile.gettempdir(), f"calibrate-notesd-{os.getpid()}.log")
    server = srv.ProcessUnderTest(argv, env, cwd, log_path, port=args.port, cpus=1 if pin else None,
                                  taskset=True, tied=True, temporary_log=True)
    server.start()
    try:
        server.wait_ready(limit_s=15, poll_s=0.05)
    except srv.NotReady as e:
        text = server.log_text()
        server.stop()
        raise SystemExit(f"calibrate: notesd {e}: {text}")
    return server


def start_target(p, args, runner):
    """Fills in args.base_url and args.metrics_url: a given target, refused unless on
    loopback, or a notesd started here, which is returned so that main_sections() stops it."""
    server = None
    if args.base_url:
        host = urllib.parse.urlsplit(args.base_url).hostname or ""
        if not is_loopback(host):
            p.error("calibrate loads only loopback targets")
        args.base_url = args.base_url.rstrip("/")
    else:
        if not os.access(args.notesd, os.X_OK):
            p.error(f"{args.notesd} is not built (server/build.sh), or pass --base-url")
        server = start_notesd(args, runner.pin)
        args.base_url = f"http://127.0.0.1:{args.port}"
        args.metrics_url = args.metrics_url or f"http://127.0.0.1:{args.metrics_port}/metrics"
    if args.metrics_url and not is_loopback(urllib.parse.urlsplit(args.metrics_url).hostname or ""):
        p.error("--metrics-url must be on a loopback address")
    return server


# ------------------------------------------------------------------ the sections (no --tools)

def run_sections(runner, args):
    """The sections' measurements in report order: {its key in the JSON: raw figures}.
    A new section is one more line here and one in sections_markdown()."""
    return {"delay": calibrate_runs.measure_delay(runner, args),
            "server_timing": calibrate_runs.measure_server_view(runner, args),
            "saturation": calibrate_runs.measure_saturation(runner, args),
            "coordinated_omission": calibrate_runs.measure_co(runner, args)}


def sections_markdown(raw, header, args):
    """The Markdown report of run_sections()' figures."""
    return "\n".join([
        "# Load-tool calibration against notesd\n",
        header,
        calibrate_report.section_delay(raw["delay"]),
        calibrate_report.section_server_view(raw["server_timing"], raw["delay"]),
        calibrate_report.section_saturation(raw["saturation"]),
        calibrate_report.section_co(raw["coordinated_omission"], args),
        f"_{raw['started']}, {raw['seconds_total']} s of runs; load average at the end "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}._\n"])


def main_sections(p, args):
    """Without --tools: the sections against a started notesd or --base-url; the report
    on stdout (and --out), the raw figures in --json."""
    runner = calibrate_runs.Runner(args)
    server = start_target(p, args, runner)

    raw = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    header = calibrate_report.machine_line(runner, args, server is not None)
    t0 = time.monotonic()
    try:
        raw.update(run_sections(runner, args))
    finally:
        if server:
            server.stop()
    raw["seconds_total"] = round(time.monotonic() - t0, 1)

    text = sections_markdown(raw, header, args)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=2, default=str)
            f.write("\n")
    return 0


# ------------------------------------------------------------------ the matrix (--tools)

def run_matrix(tools, notesd, smoke=False):
    """The conformance matrix's phases in order, as the plain data scorecard.py
    writes: {"started", "smoke", "pinning", "machine", "loadavg_start", "tools",
    "protocols", "features", "server_timing", "loadavg_end", "seconds_total"}.
    `tools`: ["all"] or adapter names (ValueError for an unknown one); smoke: the counts
    check alone. A new phase is one more step here (and its part in the scorecard)."""
    t0 = time.monotonic()
    chosen = matrix.selected(tools)
    pin = procs.can_pin((0, 1))
    data = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "smoke": smoke,
            "pinning": "notesd on CPU 1, tools on CPU 0" if pin else "no pinning",
            "machine": procs.machine_info(), "loadavg_start": procs.loadavg(), "tools": [],
            "protocols": []}
    matrix.run_tools(data, chosen, notesd, pin, smoke)     # checks 1-6, one notesd
    if not smoke:                                                    # check 7, a notesd of its own
        data["protocols"] = protocols.run_protocols(notesd, pin, chosen, data["features"])
    data["loadavg_end"] = procs.loadavg()
    data["seconds_total"] = round(time.monotonic() - t0, 1)
    return data


def main_matrix(p, args):
    """--tools: the conformance matrix, its scorecard on stdout and in
    loadtests/results/calibrate-<UTC time>/ (and --out, --json)."""
    if not os.access(args.notesd, os.X_OK):
        p.error(f"{args.notesd} is not built (server/build.sh)")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    ws_only, tools = ws.split(tools)
    try:
        matrix.selected(tools)
    except ValueError as e:
        p.error(str(e))
    base = None
    if args.merge:
        try:
            with open(args.merge) as f:
                base = json.load(f)
        except (OSError, ValueError) as e:
            p.error(f"--merge {args.merge}: {e}")
        if base.get("smoke") or args.smoke:
            p.error("--merge joins full runs only (no --smoke on either side)")
    data = run_matrix(tools, args.notesd, smoke=args.smoke)
    if args.merge:
        data = scorecard.merge(base, data)
    ws.attach(data, ws_only + tools, args.notesd, args.smoke)
    outdir = os.path.join(LOADTESTS, "results", "calibrate-" + data["started"].replace(":", ""))
    print(scorecard.write(data, outdir, args.out, args.json))
    for path in (os.path.join(outdir, "scorecard.html"), args.html):
        if path:
            scorecard_page.write_scorecard_page(data, path)
    log(f"scorecard in {outdir}")
    return 0


def main(argv=None):
    """The command: argv without the program's name (default: this process's)."""
    p, args = parse_args(argv)
    if args.report_from:
        try:
            print(scorecard.rewrite(args.report_from))
        except (OSError, ValueError, KeyError) as e:
            p.error(f"--report-from {args.report_from}: {e!r}")
        return 0
    if args.ws:
        return ws.main_ws(args, os.path.join(LOADTESTS, "results"))
    if args.tools:
        return main_matrix(p, args)
    return main_sections(p, args)

