"""Locust 2.12 (Debian's python3-locust), headless: the adapter.

Model: closed. -u users, each runs its one task (a GET of the spec's URL) in a
loop with no wait, for -t seconds; all users start within the first second
(spawn rate = users). With a rate, each user's wait is constant_throughput
(rate / users per second): the users still wait for their answers, so a slow
server lowers the rate (coordinated omission is not avoided). Locust 2.12 has
no request count: the run is always a duration.

The adapter writes a locustfile into the work directory: a FastHttpUser
(geventhttpclient: keep-alive, much cheaper per request than HttpUser) named
after the path, with the spec's timeout. keepalive=False sends
"Connection: close" on every request.

What it reports, and its quirks:
- --csv PREFIX writes PREFIX_stats.csv and PREFIX_failures.csv, but Locust
  2.12 rewrites them once a second while the run goes on and not at the end:
  they miss up to the last second (a 1 s run can read as zero requests). The
  locustfile therefore writes the final figures itself when Locust quits, with
  Locust's own CSV writer (locust_final_stats.csv, locust_final_failures.csv),
  and parse() reads those (the periodic files only when they are missing).
- The stats CSV has one row per request name and an
  "Aggregated" row: Request Count, Failure Count, Average/Min/Max Response
  Time and percentiles 50%..100%, all in milliseconds. Request Count includes
  failures, connection errors too, and the times and percentiles include
  them. The percentiles come from locust's rounded histogram: exact to 1 ms
  below 100 ms, to 10 ms below 1 s, to 100 ms above (so a 0.3 ms route
  reads 0 or 1); the mean and max are exact.
- PREFIX_failures.csv counts failures by error text: an HTTP status of 400
  and up is a failure (3xx are followed as redirects); the adapter sorts the
  texts into non2xx (a status code), connect (refused), timeout and reset.
- Requests still running when -t ends are cut off and not counted.
- HTTP/1.1 only; the locust process is single-core (no --processes in 2.12).
"""
import csv
import math
import os
import re
import shutil
import subprocess
from urllib.parse import urlsplit

from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "locust"
INSTALL_HINT = install_hint("apt-get install -y python3-locust")

LOCUSTFILE = "locustfile.py"
CSV_PREFIX = "locust"
FINAL_STATS = "locust_final_stats.csv"
FINAL_FAILURES = "locust_final_failures.csv"
LOCUSTFILE_SOURCE = '''\
"""One locust user class for one run: GET {path} in a loop. At exit, the final
figures in locust's own CSV format (its --csv files are only rewritten once a
second while the run goes on, so they miss its last second)."""
import csv

from locust import FastHttpUser, constant, constant_throughput, events, task
from locust.runners import WorkerRunner
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

_env = []


@events.init.add_listener
def keep_environment(environment, **_kwargs):
    _env.append(environment)


@events.quit.add_listener
def write_final_csv(**_kwargs):
    if isinstance(_env[0].runner, WorkerRunner):
        return   # distributed: the master holds every worker's figures and writes them
    writer = StatsCSV(_env[0], PERCENTILES_TO_REPORT)
    with open({stats!r}, "w", newline="") as f:
        writer.requests_csv(csv.writer(f))
    with open({failures!r}, "w", newline="") as f:
        writer.failures_csv(csv.writer(f))


class OneRoute(FastHttpUser):
    wait_time = {wait}
    network_timeout = {timeout}
    connection_timeout = {timeout}

    @task
    def get(self):
        self.client.get({path!r}, name={path!r}, headers={headers!r})
'''


def available() -> bool:
    return shutil.which("locust") is not None


def version() -> str:
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-locust"],
                          capture_output=True, text=True).stdout.strip()


def command(spec: RunSpec, workdir: str) -> list:
    u = urlsplit(spec.url)
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    wait = (f"constant_throughput({spec.rate / spec.connections!r})" if spec.rate
            else "constant(0)")
    headers = {} if spec.keepalive else {"Connection": "close"}
    with open(os.path.join(workdir, LOCUSTFILE), "w") as f:
        f.write(LOCUSTFILE_SOURCE.format(
            path=path, wait=wait, timeout=float(spec.timeout_s), headers=headers,
            stats=os.path.join(workdir, FINAL_STATS),
            failures=os.path.join(workdir, FINAL_FAILURES)))
    seconds = max(1, math.ceil(spec.duration_s or 1))
    return ["locust", "-f", os.path.join(workdir, LOCUSTFILE), "--headless",
            "-u", str(spec.connections), "-r", str(spec.connections), "-t", f"{seconds}s",
            "--host", f"{u.scheme}://{u.netloc}", "--csv", os.path.join(workdir, CSV_PREFIX),
            "--only-summary", "--loglevel", "WARNING", "--exit-code-on-error", "0"]


def _classify(error_text):
    # FastHttpUser: BadStatusCode('http://...', code=404); HttpUser: HTTPError('404 ...')
    if re.search(r"BadStatusCode|code=\d{3}\b|HTTPError", error_text):
        return "non2xx"
    if re.search(r"refused", error_text, re.I):
        return "connect"
    if re.search(r"time(d )?out", error_text, re.I):
        return "timeout"
    if re.search(r"reset|RemoteDisconnected|closed|BrokenPipe", error_text, re.I):
        return "reset"
    return "other"


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("locust's percentiles are rounded (1 ms below 100 ms); they include "
                        "failed requests")
    if spec.requests:
        result.notes.append("locust 2.12 has no request count: the run was a duration")
    if spec.http2:
        result.notes.append("locust speaks HTTP/1.1 only")
    stats, failures = FINAL_STATS, FINAL_FAILURES
    if not os.path.exists(os.path.join(workdir, stats)):
        stats, failures = f"{CSV_PREFIX}_stats.csv", f"{CSV_PREFIX}_failures.csv"
        result.notes.append("no final CSV: read locust's periodic --csv files, which miss up to "
                            "the last second")
    try:
        with open(os.path.join(workdir, stats)) as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        result.errors.other = 1
        result.notes.append("locust wrote no stats CSV")
        return result
    agg = next(r for r in rows if r["Name"] == "Aggregated")
    count = int(agg["Request Count"])
    try:
        with open(os.path.join(workdir, failures)) as f:
            for row in csv.DictReader(f):
                kind = _classify(row["Error"])
                setattr(result.errors, kind, getattr(result.errors, kind) + int(row["Occurrences"]))
    except FileNotFoundError:
        pass
    # Request Count includes attempts that got no response at all
    result.requests = count - (result.errors.total() - result.errors.non2xx)
    result.duration_s = float(spec.duration_s or 0)
    result.rps = float(agg["Requests/s"])
    result.notes.append("locust's CSV has no run length: duration is the -t asked for")
    if result.requests:
        result.latency = Latency(mean=float(agg["Average Response Time"]),
                                 p50=float(agg["50%"]), p90=float(agg["90%"]),
                                 p99=float(agg["99%"]), max=float(agg["Max Response Time"]))
    return result
