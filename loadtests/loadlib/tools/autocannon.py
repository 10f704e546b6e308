"""autocannon 9 (npm, pinned in loadtests/tools): the adapter.

Model: closed by default: -c connections, each keeps one request in flight
(pipelining 1), for -d seconds or -a requests. -R caps the overall request
rate, but the connections still wait for their answers, so a slow server lowers
the rate (coordinated omission is not avoided).

What it reports, and its quirks:
- --json prints one JSON object on stdout. latency holds mean, max and
  percentiles (p50, p90, p99, ...) in milliseconds, but the percentiles and
  min/max come from a histogram of WHOLE milliseconds (a sub-millisecond route
  has p50 = 0 while min is 1); only the mean is fractional. Latencies are
  recorded for responses of any status.
- requests.total counts responses (any status); requests.sent what was sent.
- errors counts every failed request, timeouts included; timeouts and resets
  are also counted on their own. With --debug every error is printed on stderr
  with its code: ECONNREFUSED (and other connect failures) make the connect
  count, ECONNRESET adds to resets; the rest of errors is "other".
- non2xx is its own field ("1xx".."5xx" break it down).
- Connections are always kept alive; there is no HTTP/2. -t is the per-request
  timeout in seconds.
"""
import json
import math
import os
import subprocess

from . import _npm
from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "autocannon"
INSTALL_HINT = install_hint("loadtests/tools/install.sh")

CONNECT_CODES = ("ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL")


def binary():
    return _npm.binary(NAME)


def available() -> bool:
    return os.access(binary(), os.X_OK)


def version() -> str:
    out = subprocess.run([binary(), "--version"], capture_output=True, text=True).stdout
    return out.split()[1].lstrip("v") if len(out.split()) > 1 else ""


def command(spec: RunSpec, workdir: str) -> list:
    argv = [binary(), "--json", "--debug", "--no-progress", "-c", str(spec.connections),
            "-t", str(max(1, math.ceil(spec.timeout_s)))]
    if spec.requests:
        argv += ["-a", str(spec.requests)]
    else:
        argv += ["-d", str(max(1, math.ceil(spec.duration_s)))]
    if spec.rate:
        argv += ["-R", f"{spec.rate:g}"]
    if spec.threads > 1:
        argv += ["-w", str(spec.threads)]
    return argv + [spec.url]


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("autocannon's percentiles and max are whole milliseconds; "
                        "only the mean is fractional")
    if not spec.keepalive:
        result.notes.append("autocannon always keeps connections alive")
    if spec.http2:
        result.notes.append("autocannon speaks HTTP/1.1 only")
    start = stdout.find("{")
    if start < 0:
        result.errors.other = 1
        result.notes.append("autocannon printed no JSON")
        return result
    d = json.loads(stdout[start:])
    result.requests = int(d["requests"]["total"])
    result.errors.non2xx = int(d["non2xx"])
    result.errors.timeout = int(d["timeouts"])
    codes = [line.strip() for line in stderr.splitlines() if line.strip().startswith("code: ")]
    connect = sum(any(c in line for c in CONNECT_CODES) for line in codes)
    resets = max(int(d["resets"]), sum("ECONNRESET" in line for line in codes))
    failed = int(d["errors"]) - result.errors.timeout
    result.errors.connect = min(connect, failed)
    result.errors.reset = min(resets, failed - result.errors.connect)
    result.errors.other = failed - result.errors.connect - result.errors.reset
    result.duration_s = float(d["duration"])
    result.rps = result.requests / result.duration_s if result.duration_s else 0.0
    lat = d["latency"]
    if result.requests:
        result.latency = Latency(mean=float(lat["mean"]), p50=float(lat["p50"]),
                                 p90=float(lat["p90"]), p99=float(lat["p99"]),
                                 max=float(lat["max"]))
    return result
