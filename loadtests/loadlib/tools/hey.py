"""hey 0.1.4 (Debian's hey): the adapter.

Model: closed by default (-c workers, each sends, waits, sends again); -q caps
each worker's rate (queries per second per worker), so a spec's rate is split
over the workers: an open-ish model whose workers still wait for answers, so a
slow server lowers the rate (coordinated omission is not avoided).

What it reports, and its quirks:
- -o csv prints one row per response: response-time, DNS+dialup, DNS,
  Request-write, Response-delay, Response-read (all seconds, 4 decimals:
  0.1 ms resolution), status-code, offset (seconds from the start). Every
  figure here is computed from those rows: percentiles by nearest rank over
  all responses, any status; the mean and max from the same rows.
- Failed requests (connection refused, timeouts, resets) have no row, and the
  CSV mode prints no error summary: those errors are invisible, and a port
  where nothing listens reads as zero requests and zero errors. Non-2xx
  responses are counted from the status-code column.
- There is no total duration in the CSV: the run's length is taken as the
  end of the last response (offset + response-time), a little short of the
  -z duration when the last requests were cut off.
- -n is the request count, shared out as n / c per worker in whole requests
  (1,001 requests over 4 workers send 1,000); -z a duration (then -n is
  ignored). Keep-alive is on
  unless -disable-keepalive. -h2 enables HTTP/2 over TLS only (Go's client has
  no h2c), so http:// URLs stay HTTP/1.1. -t is the per-request timeout in
  whole seconds.
"""
import csv
import io
import math
import shutil
import subprocess

from ..quantile import percentile
from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "hey"
INSTALL_HINT = install_hint("apt-get install -y hey")


def available() -> bool:
    return shutil.which("hey") is not None


def version() -> str:
    # hey has no --version; Debian's package version is the honest answer
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "hey"],
                         capture_output=True, text=True).stdout.strip()
    return out


def command(spec: RunSpec, workdir: str) -> list:
    argv = ["hey", "-c", str(spec.connections), "-t", str(max(1, math.ceil(spec.timeout_s)))]
    if spec.requests:
        argv += ["-n", str(max(spec.requests, spec.connections))]
    else:
        argv += ["-z", f"{spec.duration_s:g}s"]
    if spec.rate:
        argv += ["-q", f"{spec.rate / spec.connections:g}"]
    if not spec.keepalive:
        argv.append("-disable-keepalive")
    if spec.http2:
        argv.append("-h2")
    return argv + ["-o", "csv", spec.url]



def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("hey -o csv has no rows for failed requests: connect, timeout and reset "
                        "errors are not reported (only non-2xx)")
    if spec.requests and spec.requests % spec.connections:
        result.notes.append(f"hey sends requests // connections per worker: "
                            f"{spec.requests // spec.connections * spec.connections} were asked")
    if spec.http2 and spec.url.startswith("http://"):
        result.notes.append("hey -h2 is HTTP/2 over TLS only: this run was HTTP/1.1")
    times, end = [], 0.0
    for row in csv.DictReader(io.StringIO(stdout)):
        t = float(row["response-time"])
        times.append(t * 1000)
        end = max(end, float(row["offset"]) + t)
        if not 200 <= int(row["status-code"]) <= 299:
            result.errors.non2xx += 1
    result.requests = len(times)
    result.duration_s = round(end, 4)
    result.rps = result.requests / end if end > 0 else 0.0
    if times:
        times.sort()
        result.latency = Latency(mean=sum(times) / len(times), p50=percentile(times, 50),
                                 p90=percentile(times, 90), p99=percentile(times, 99),
                                 max=times[-1])
    result.notes.append("hey's CSV gives 0.1 ms resolution; duration is the end of the last "
                        "response, req/s is requests over it")
    return result
