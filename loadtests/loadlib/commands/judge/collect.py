"""judge's run: the server that sees it (a notesd started here with its journal on, or
one already running, --target and --metrics), the load (a command, an adapter's tool,
or a window of whatever loads the server), and the journal read while it runs.

The journal is read after the run, and during it only when it must be: when a loop's
unread records reach half its ring (Reader), since reading takes CPU from the tool and
the server being judged. A server judge did not start may be busy with anything: its
ring size is unknown, so it is read every POLL_S. Then the server is given time to
dispose of what the tool left in flight (http_requests_in_flight back to 0) and the
rest is read.
"""
import signal
import subprocess
import threading
import time
import urllib.parse

from loadlib import journal_pages, procs, prom
from loadlib.report import logger
from loadlib.server import NO_DATABASE, Target
from loadlib.tools import run as toolrun

POLL_S = 1.0                # how often a running load's journal is looked at
LAG_PROBE_MS = 10           # the event-loop lag probe of a notesd started here (its own pauses)
SETTLE_S = 5.0              # the longest wait for the server to dispose of the last requests
JOURNAL_RECORDS = 1_000_000  # the ring of a notesd started here (160 bytes a record, as it fills)
TOOL_START_S = 60           # a command's time to start and stop, beyond its --duration

log = logger("judge")


class Server:
    """The server judged: `own` when started here. base: the API port's URL; source: its
    journal; metrics_url: its /metrics."""

    def __init__(self, args):
        self.own = not args.target
        if self.own:
            self.target = Target(args.notesd, args.pin, journal=args.journal_records,
                                 db_url=args.db_url or NO_DATABASE,
                                 extra=("--lag-interval-ms", str(LAG_PROBE_MS)))
            self.base = self.target.url("")
            metrics = self.target.metrics_url
        else:
            self.target, self.base, metrics = None, args.target.rstrip("/"), args.metrics
        self.source = journal_pages.Source.from_url(metrics, args.journal_token)
        self.metrics_url = f"http://{self.source.host}:{self.source.port}/metrics"

    def placeholders(self, route):
        u = urllib.parse.urlsplit(self.base)
        return {"{url}": self.base + route, "{base}": self.base, "{host}": u.hostname or "",
                "{port}": str(u.port or 80)}

    def scrape(self):
        return prom.scrape(self.metrics_url)

    def settle(self):
        """Waits (at most SETTLE_S) until the server holds no request: what the tool left
        in flight is recorded once it is disposed of."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            held = prom.value(self.scrape() or [], "http_requests_in_flight")
            if not held:
                return
            time.sleep(0.02)

    def stop(self):
        if self.target:
            self.target.stop()


class Reader(threading.Thread):
    """Reads the journal into `collector` while the load runs: every POLL_S when the ring
    is unknown (capacity None), else once a loop's unread records reach half of it."""

    def __init__(self, source, collector, capacity):
        super().__init__(daemon=True)
        self.source, self.collector, self.capacity = source, collector, capacity
        self.done = threading.Event()
        self.error = None
        self.read_s = 0.0

    def read(self):
        t = time.perf_counter()
        self.collector.drain(self.source)
        self.read_s += time.perf_counter() - t

    def run(self):
        while not self.done.wait(POLL_S):
            try:
                if self.capacity is None or \
                        self.collector.behind(self.source) > self.capacity // 2:
                    self.read()
            except ConnectionError:       # a server restarting: its next page says so
                continue
            except OSError as e:          # Restarted among them: finish() raises it
                self.error = e
                return

    def finish(self):
        """Stops reading during the run, reads the rest; raises what reading raised."""
        self.done.set()
        self.join()
        if self.error:
            raise self.error
        self.read()


def run_command(argv, limit, cpu):
    """Runs the tool's command with its output on our stderr; (exit status, failure)."""
    try:
        proc = subprocess.Popen(procs.taskset(argv, cpu), stdin=subprocess.DEVNULL,
                                stdout=2, stderr=2)
    except OSError as e:
        return None, f"{argv[0]}: {e}"
    try:
        rc = proc.wait(timeout=limit)
    except KeyboardInterrupt:
        log("interrupted: stopping the command, then judging what the server saw")
        proc.send_signal(signal.SIGINT)
        rc = proc.wait()
    except subprocess.TimeoutExpired:
        log(f"the command ran past {limit:.0f} s: stopped")
        proc.terminate()
        rc = proc.wait()
        return rc, f"ran past {limit:.0f} s and was stopped"
    return rc, None


def run_adapter(adapter, spec, cpu):
    """Runs an adapter's tool; (exit status, failure, its ToolResult or None)."""
    try:
        result = toolrun.run_tool(adapter, spec, cpu=cpu, timeout=(spec.duration_s or 0)
                                  + (spec.requests or 0) / (spec.rate or 200) + TOOL_START_S)
        return 0, None, result
    except (toolrun.ToolFailed, ValueError, OSError) as e:
        return None, str(e), None


def wait_window(seconds):
    """The window of a server judged while others load it: `seconds`, or until ^C."""
    try:
        if seconds:
            log(f"judging a window of {seconds:g} s from now")
            time.sleep(seconds)
        else:
            log("judging until interrupted (^C)")
            threading.Event().wait()
    except KeyboardInterrupt:
        log("interrupted: judging the window so far")


def lateness_ms(before, after, own):
    """How late the server's event loop was at most over the run, in ms: its
    notes_eventloop_lag_max_seconds since the scrape before the run where no one else
    scrapes it (a notesd started here), else the highest bucket of
    notes_eventloop_delay_seconds that grew (an upper bound). None without the figures."""
    if before is None or after is None:
        return None
    if own:
        lag = prom.value(after, "notes_eventloop_lag_max_seconds")
        return None if lag is None else round(lag * 1000, 3)
    try:
        buckets = prom.histogram_deltas(before, after, "notes_eventloop_delay_seconds",
                                        lambda labels: "all").get("all")
    except prom.InputError:
        return None
    if not buckets or not buckets[-1][1]:
        return 0.0 if buckets else None
    finite = [le for le, _ in buckets if le != float("inf")]
    top = next(le for le, c in buckets if c >= buckets[-1][1])
    return round((top if top != float("inf") else finite[-1]) * 1000, 3)


def counted(before, after):
    """http_requests_total's growth between two scrapes (None without both)."""
    if before is None or after is None:
        return None
    return int(sum(prom.deltas(before, after, "http_requests_total").values()))


def collect(args, load, want_ids=False):
    """Runs the load against the server and reads what it saw. load: ("command", argv),
    ("tool", adapter, spec) or ("window", seconds); argv and spec may hold the
    placeholders of Server.placeholders(), filled in here. Returns a dict: "columns",
    "lost", "counted", "server_lag_ms", "command" ((exit status, failure) or None),
    "tool_result", "t0_us", "read_s"; journal_pages.Restarted when the server restarted."""
    server = Server(args)
    out = {"command": None, "tool_result": None, "base": server.base}
    try:
        collector = journal_pages.Collector(server.source.newest(), want_ids)
        before = server.scrape()
        reader = Reader(server.source, collector, args.journal_records if server.own else None)
        reader.start()
        out["t0_us"] = int(time.time() * 1e6)
        cpu = 0 if args.pin and procs.can_pin((0, 1)) else None
        fill = server.placeholders(args.route)
        if load[0] == "command":
            argv = [fill_in(a, fill) for a in load[1]]
            log(f"running {' '.join(argv)}")
            limit = (args.duration or 0) * 2 + TOOL_START_S if args.duration else None
            out["command"] = run_command(argv, limit, cpu)
        elif load[0] == "tool":
            adapter, spec = load[1], load[2]
            spec.url = fill["{url}"]
            log(f"running {adapter.NAME} against {spec.url}")
            rc, failure, out["tool_result"] = run_adapter(adapter, spec, cpu)
            out["command"] = (rc, failure)
        else:
            wait_window(load[1])
        out["server_lag_ms"] = lateness_ms(before, server.scrape(), server.own)
        if load[0] != "window":
            server.settle()
        reader.finish()
        out.update(read_s=reader.read_s, lost=collector.lost, columns=collector.columns(),
                   other=collector.other, csv=server.source.csv,
                   counted=counted(before, server.scrape()) if server.own else None)
    finally:
        server.stop()
    return out


def fill_in(arg, fill):
    for key, value in fill.items():
        arg = arg.replace(key, value)
    return arg
