"""loadtest 8 (npm, pinned in loadtests/tools): the adapter.

Model: closed by default (-c clients, each sends, waits, sends again); with
requestsPerSecond it is open: one timer sends requests at that overall rate,
adding clients as needed, whatever happened to the earlier ones.

The command-line tool prints only text; its machine-readable form is the
result object of its JavaScript API (loadTest(options) resolves to it). The
adapter writes a five-line ES module into the work directory that calls the
pinned package's loadTest() with the spec's settings and prints that object as
JSON; parse() reads it.

What it reports, and its quirks:
- histogramMs counts requests by latency FLOORED to whole milliseconds, over
  every measured request, failed or not; p50/p90/p99 are read from it by
  nearest rank, max is maxLatencyMs (also floored). The mean is
  accumulatedMs / measured requests, fractional (its own meanLatencyMs is
  rounded to 0.1 ms and divides by totalRequests).
- loadtest's own "percentiles" take the first millisecond where the share
  passes p, and never report 0 (a 0 is falsy to it and is overwritten by the
  next bucket): the adapter does not use them.
- totalRequests counts every request that ended, including ones that ended
  after the run stopped (not measured) and ones that failed at the socket.
- errorCodes: a status code for responses of 400 and up (only when a
  statusCallback is set: without one, loadtest 8.2.1 builds no result for the
  response and files 4xx/5xx under "-1" with the socket errors; the CLI has
  that flaw, the adapter's runner sets a no-op callback) (3xx are not errors
  to loadtest, so they are not counted as non2xx here), and "-1" for every
  socket error: connection refused, reset and timeout cannot be told apart and
  are all counted as "other".
- agentKeepAlive is keep-alive (the CLI's -k); without it every request opens
  a connection. No HTTP/2. timeout is per request, in milliseconds.
"""
import json
import math
import os
import shutil

from . import _npm
from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "loadtest"
INSTALL_HINT = install_hint("loadtests/tools/install.sh")

NODE_MODULES = _npm.NODE_MODULES
RUNNER = "run-loadtest.mjs"
RUNNER_SOURCE = """\
// One loadtest run through its API; prints the result object as JSON.
import { loadTest } from %s;
const options = JSON.parse(process.argv[2]);
// without a statusCallback, loadtest 8.2.1 records 4xx/5xx as socket errors (-1)
options.statusCallback = () => {};
const result = await loadTest(options);
process.stdout.write(JSON.stringify(result) + '\\n');
"""


def package_dir():
    return os.path.join(NODE_MODULES, "loadtest")


def available() -> bool:
    return os.path.isfile(os.path.join(package_dir(), "index.js")) and \
        shutil.which("node") is not None


def version() -> str:
    with open(os.path.join(package_dir(), "package.json")) as f:
        return json.load(f)["version"]


def command(spec: RunSpec, workdir: str) -> list:
    entry = "file://" + os.path.join(package_dir(), "index.js")
    with open(os.path.join(workdir, RUNNER), "w") as f:
        f.write(RUNNER_SOURCE % json.dumps(entry))
    options = {"url": spec.url, "concurrency": spec.connections, "quiet": True,
               "agentKeepAlive": spec.keepalive, "timeout": round(spec.timeout_s * 1000)}
    if spec.requests:
        options["maxRequests"] = spec.requests
    else:
        options["maxSeconds"] = spec.duration_s
    if spec.rate:
        options["requestsPerSecond"] = spec.rate
    if spec.insecure_tls:
        options["insecure"] = True
    return ["node", os.path.join(workdir, RUNNER), json.dumps(options)]


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("loadtest's latencies are whole milliseconds (floored); socket errors "
                        "(refused, reset, timeout) are one code, counted as other")
    if spec.http2:
        result.notes.append("loadtest speaks HTTP/1.1 only")
    line = next((l for l in reversed(stdout.splitlines()) if l.startswith("{")), None)
    if line is None:
        result.errors.other = 1
        result.notes.append("loadtest printed no result" +
                            (": " + stderr.strip().splitlines()[-1] if stderr.strip() else ""))
        return result
    d = json.loads(line)
    codes = {k: int(v) for k, v in d.get("errorCodes", {}).items()}
    socket_errors = sum(v for k, v in codes.items() if not k.split(":")[0].isdigit())
    result.errors.other = socket_errors
    result.errors.non2xx = sum(v for k, v in codes.items() if k.split(":")[0].isdigit())
    result.requests = int(d["totalRequests"]) - socket_errors
    result.duration_s = float(d["elapsedSeconds"])
    result.rps = float(d["effectiveRps"] or 0)
    hist = sorted((int(ms), int(n)) for ms, n in d.get("histogramMs", {}).items())
    measured = sum(n for _, n in hist)
    if measured and result.requests:
        def rank(p):
            target, seen = max(1, math.ceil(p / 100 * measured)), 0
            for ms, n in hist:
                seen += n
                if seen >= target:
                    return float(ms)
        result.latency = Latency(mean=float(d["accumulatedMs"]) / measured, p50=rank(50),
                                 p90=rank(90), p99=rank(99), max=float(d["maxLatencyMs"]))
    return result
