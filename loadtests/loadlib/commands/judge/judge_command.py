"""judge: is a load tool telling the truth? Any generator, judged from the server's side.

    loadtests/judge [model] [options] -- COMMAND ...     a command of yours
    loadtests/judge [model] --tool NAME [options]        a tool with an adapter (loadlib/tools)
    loadtests/judge [model] --target URL --metrics URL   a notesd others load, over a window

With a command or --tool it starts a notesd with its request journal on (--notesd,
default build/notesd; --db-url for routes that query a database), runs the load, and
judges it from what the server recorded of every request. {url} in the command is
the route's full URL (--route, default /json); {base}, {host} and {port} the API
port's. The model is what the tool was asked to do: --rate R (open; --poisson when
it promises Poisson arrivals), --ramp FROM:TO:SECONDS, or --closed, with
--connections, --duration and --requests where they apply. What the tool claims
(--claimed-requests, --claimed-p50, --claimed-p99 in ms, --claimed-rate; an adapter
reads its tool's own) is held against the server's figures; --log FILE joins its
per-request log (judge's CSV: start_us,request_id,latency_us,status; or k6's CSV,
hey's CSV, h2load's --log-file, ab's -g file).

A summary on stdout, --json FILE and --html FILE (one page, no network). Exit status
0: every check PASS; 1: a FAIL; 2: bad usage; 3: WARN and no FAIL. The checks and
their thresholds: loadtests/judge.md.
"""
import argparse
import os
import resource
import sys
import tempfile
import time

from loadlib import journal, journal_pages, report
from loadlib.judgement import FAIL, PASS, WARN, Model, judged
from loadlib.paths import REPO
from loadlib.tools import run as toolrun
from loadlib.tools.base import RunSpec
from loadlib.commands.judge import collect, judge_figures, page

EXIT = {PASS: 0, FAIL: 1, WARN: 3}
DEFAULT_CONNECTIONS = 10        # an adapter's connections when none are declared
DEFAULT_SECONDS = 10            # and its duration


def ramp_arg(text):
    try:
        start, top, seconds = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: FROM:TO:SECONDS, e.g. 50:250:3") from None
    if min(start, top) < 0 or seconds <= 0 or max(start, top) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: rates at least 0, seconds above 0")
    return start, top, seconds


def positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if v <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be above 0")
        return v
    return parse


def parser():
    p = argparse.ArgumentParser(prog="judge", description=__doc__.split("\n\n")[0],
                                usage="judge [model] [options] -- COMMAND ...  |  --tool NAME  |  "
                                "--target URL --metrics URL",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    m = p.add_argument_group("the model: what the tool was asked to do")
    m.add_argument("--rate", type=positive(float), metavar="R",
                   help="an open model at R requests/s")
    m.add_argument("--poisson", action="store_true", help="with --rate: Poisson arrivals")
    m.add_argument("--ramp", type=ramp_arg, metavar="FROM:TO:SECONDS",
                   help="an open model from FROM/s to TO/s in SECONDS (then TO until --duration)")
    m.add_argument("--closed", action="store_true", help="a closed model (--connections)")
    m.add_argument("--connections", type=positive(int), metavar="C",
                   help="connections it was given")
    m.add_argument("--duration", type=positive(float), metavar="S",
                   help="seconds it was asked to run (with --target alone: the window's)")
    m.add_argument("--requests", type=positive(int), metavar="N",
                   help="requests it was asked to send")
    c = p.add_argument_group("what the tool claims")
    c.add_argument("--claimed-requests", type=int, metavar="N", help="requests it reported")
    c.add_argument("--claimed-p50", type=float, metavar="MS", help="its median latency, ms")
    c.add_argument("--claimed-p99", type=float, metavar="MS", help="its 99th percentile, ms")
    c.add_argument("--claimed-rate", type=float, metavar="R", help="its requests per second")
    c.add_argument("--log", metavar="FILE", help="the tool's per-request log, read after the run")
    c.add_argument("--log-format", choices=sorted(journal.LOG_FORMATS),
                   help="default: from its first line")
    c.add_argument("--log-id-tag", metavar="TAG", help="k6's CSV: the tag holding the request id")
    s = p.add_argument_group("the server")
    s.add_argument("--notesd", default=os.path.join(REPO, "build", "notesd"), metavar="PATH",
                   help="the notesd to start (default build/notesd)")
    s.add_argument("--db-url", metavar="URL", help="DB_URL of the notesd started (default: "
                   "none, for the routes that need no database)")
    s.add_argument("--route", default="/json", help="{url}'s path (default /json)")
    s.add_argument("--journal-records", type=positive(int), default=collect.JOURNAL_RECORDS,
                   metavar="N", help="JOURNAL of the notesd started (records per loop; read "
                   "during the run once half full)")
    s.add_argument("--pin", action="store_true", help="notesd on CPU 1, the tool on CPU 0")
    s.add_argument("--target", metavar="URL", help="a running notesd's API port")
    s.add_argument("--metrics", metavar="URL", help="its metrics port (with JOURNAL on)")
    s.add_argument("--journal-token", default=None, metavar="TOKEN",
                   help=f"for a /journal off loopback (default: ${journal_pages.TOKEN_ENV})")
    p.add_argument("--tool", metavar="NAME", help="a load tool with an adapter in loadlib/tools "
                   "(its figures are read as its claims)")
    o = p.add_argument_group("output")
    o.add_argument("--json", metavar="FILE", help="every figure, and verdict, requests, checks")
    o.add_argument("--html", metavar="FILE", help="one page: the verdicts and the pictures")
    return p


def parse_args(argv):
    """(parser, args, command): the options, and what follows `--`."""
    argv = list(argv)
    command = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1:]
    p = parser()
    args = p.parse_args(argv)
    if sum(bool(x) for x in (args.rate, args.ramp, args.closed)) > 1:
        p.error("one model: --rate, --ramp or --closed")
    if args.poisson and not args.rate:
        p.error("--poisson goes with --rate")
    if args.ramp and args.duration and args.duration < args.ramp[2]:
        p.error("--duration is shorter than the ramp")
    if bool(args.target) != bool(args.metrics):
        p.error("--target and --metrics go together")
    if sum(bool(x) for x in (command, args.tool)) > 1:
        p.error("a command after --, or --tool: not both")
    if not command and not args.tool and not args.target:
        p.error("nothing to judge: a command after --, --tool NAME, or --target and --metrics")
    if args.tool and args.target:
        p.error("--tool runs against a notesd judge starts; drop --target")
    if not args.target and not os.access(args.notesd, os.X_OK):
        p.error(f"{args.notesd} is not built (server/build.sh), or pass --notesd")
    if args.log_id_tag and args.log_format not in (None, "k6"):
        p.error("--log-id-tag is for k6's CSV")
    return p, args, command


def model_of(args, window):
    """The declared model; over a window (--target without a command) --duration is the
    window's, not the tool's, and its schedule is judged from its first arrival to its last."""
    kind = "open" if args.rate else "ramp" if args.ramp else "closed" if args.closed else None
    if args.tool and kind is None:
        kind = "closed"                 # an adapter's run without a rate is closed
    return Model(kind=kind, rate=args.rate, poisson=args.poisson, ramp=args.ramp,
                 connections=args.connections, duration_s=None if window else args.duration,
                 requests=args.requests)


def tool_load(p, args, model):
    """("tool", adapter, RunSpec) for --tool; a tool that runs only counts gets one sized
    to the rate (or the ramp's top) over the duration."""
    found = {name: (mod, why) for name, mod, why in toolrun.adapters()}
    if args.tool not in found:
        p.error(f"--tool: no adapter {args.tool!r}; known: {', '.join(sorted(found))}")
    adapter, why = found[args.tool]
    if adapter is None:
        p.error(f"--tool {args.tool}: {why}")
    ramp = tuple((s, r) for s, r in model.stages()[1:]) if model.kind == "ramp" else ()
    spec = RunSpec(url="{url}", connections=args.connections or DEFAULT_CONNECTIONS,
                   duration_s=None if args.requests else args.duration or DEFAULT_SECONDS,
                   requests=args.requests, rate=args.rate or (args.ramp[0] if args.ramp else None),
                   ramp=ramp)
    with tempfile.TemporaryDirectory(prefix="judge-spec-") as scratch:
        try:
            adapter.command(spec, scratch)
        except ValueError:
            top = args.rate or (args.ramp[1] if args.ramp else None)
            if not top:
                p.error(f"--tool {args.tool} runs a count: give --requests")
            spec.requests = int(top * spec.duration_s)
    return ("tool", adapter, spec)


def claims_of(args, tool_result):
    """What the tool claims: the command line's figures, else its adapter's."""
    given = {"requests": args.claimed_requests, "p50": args.claimed_p50,
             "p99": args.claimed_p99, "rate": args.claimed_rate}
    if tool_result is not None:
        lat = tool_result.latency
        read = {"requests": tool_result.requests, "p50": lat.p50, "p99": lat.p99,
                "rate": tool_result.rps or None}
        given = {k: v if v is not None else read[k] for k, v in given.items()}
    return given


def restarted_result(model, why):
    c = judged("journal", FAIL, "the server restarted during the run", f"{why}: the run "
               "cannot be judged")
    return {"verdict": FAIL, "requests": None, "checks": [c], "figures": {},
            "model": model.to_dict()}


def main(argv=None):
    """The command: argv without the program's name (default: this process's)."""
    t_start = time.perf_counter()
    p, args, command = parse_args(sys.argv[1:] if argv is None else argv)
    window = not command and not args.tool
    model = model_of(args, window)
    load = (("command", command) if command else tool_load(p, args, model) if args.tool
            else ("window", args.duration))
    try:
        run = collect.collect(args, load, want_ids=bool(args.log))
    except journal_pages.Restarted as e:
        return conclude(restarted_result(model, str(e)), args, {"total": time.perf_counter()
                                                              - t_start})
    except (OSError, RuntimeError) as e:
        print(f"judge: {e}", file=sys.stderr)
        return 2
    t_judge = time.perf_counter()
    log = None
    if args.log:
        try:
            fmt, entries = journal.read_log(args.log, args.log_format, run["t0_us"],
                                            args.log_id_tag)
            log = journal.log_columns(entries)
        except (OSError, ValueError) as e:
            print(f"judge: --log: {e}", file=sys.stderr)
            return 2
    result = judge_figures.judge(run["columns"], model, counted=run["counted"], lost=run["lost"],
                           claims=claims_of(args, run["tool_result"]), log=log,
                           command=run["command"], server_lag_ms=run["server_lag_ms"])
    result.update(model=model.to_dict(), server=run["base"], other_records=run["other"],
                  journal_format="csv" if run["csv"] else "ndjson")
    if log is not None:
        result["log"] = {"path": args.log, "format": fmt, "requests": len(entries)}
    if run["tool_result"] is not None:
        result["tool"] = run["tool_result"].to_dict()
    t_report = time.perf_counter()
    result["series"] = judge_figures.pictures(run["columns"], model, log)
    return conclude(result, args, {"journal_read": run["read_s"], "checks": t_report - t_judge,
                                 "start": t_start, "report_from": t_report})


def conclude(result, args, timings):
    """Writes the page and the JSON, prints the summary; the exit status."""
    if args.html:
        page.write_page(result, args.html)
    now = time.perf_counter()
    if "report_from" in timings:
        timings["report"] = now - timings.pop("report_from")
        timings["total"] = now - timings.pop("start")
    result["timings_s"] = {k: round(v, 3) for k, v in timings.items()}
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.json:
        report.write_json(args.json, result, indent=1, default=str)
    print(page.summary_text(result))
    return EXIT[result["verdict"]]
