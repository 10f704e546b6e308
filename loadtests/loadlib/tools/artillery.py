"""Artillery 2 (npm, pinned in loadtests/tools at 2.0.21): the adapter.

Model: Artillery's own model is open in virtual users: a phase starts new
VUs at arrivalRate per second, each runs the scenario once and leaves. The
adapter writes a script into the work directory that maps a spec onto it:

- a rate (open): arrivalRate = rate for the duration, each VU sends one GET.
  A VU opens its own connection, so every request pays a TCP connect;
- no rate (closed): `connections` VUs arrive spread evenly over the first
  second (arrivalCount of a 1 s phase: Artillery has no "all at once") and each
  loops GET until the duration is over (a whileTrue condition in a small
  processor module next to the script) or for requests / connections rounds.
  A request that fails (refused, timed out) fails its VU, which stops there.

keepalive=False sends "Connection: close". Telemetry is turned off
(ARTILLERY_DISABLE_TELEMETRY) so a run talks only to its target.

What it reports, and its quirks:
- --output writes a JSON report; its "aggregate" has counters
  (http.requests, http.responses, http.codes.<status>, errors.<code> such as
  errors.ECONNREFUSED, errors.ETIMEDOUT, errors.ECONNRESET, vusers.failed),
  rates (http.request_rate) and summaries.http.response_time: min, max,
  mean, p50, p90, p99 in milliseconds, one decimal, from a sketch with about
  1% relative error, over responses of any status.
- Requests completed are http.responses; non2xx adds up every http.codes.*
  outside 200..299.
- The run's length is lastCounterAt - firstCounterAt (milliseconds); the
  req/s figure is http.request_rate when present, else responses over it.
- Artillery takes a few seconds to start (it loads its plugins and engines);
  that time is outside its figures.
- HTTP/1.1 here (Artillery's HTTP/2 is experimental and needs TLS).
"""
import json
import math
import os
import subprocess
from urllib.parse import urlsplit

from . import _npm
from .base import Errors, Latency, RunSpec, ToolResult, install_hint

NAME = "artillery"
INSTALL_HINT = install_hint("loadtests/tools/install.sh")

SCRIPT = "artillery-script.json"
PROCESSOR = "artillery-processor.js"
REPORT = "artillery-report.json"
PROCESSOR_SOURCE = """\
// whileTrue condition of the closed-model loop: true until the run's duration is over.
const deadline = Date.now() + %d;
module.exports = { beforeDeadline: (context, next) => next(Date.now() < deadline) };
"""
CONNECT_CODES = ("ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL")
TIMEOUT_CODES = ("ETIMEDOUT", "ESOCKETTIMEDOUT", "ECONNABORTED")
RESET_CODES = ("ECONNRESET", "EPIPE", "ERR_STREAM_PREMATURE_CLOSE")


def binary():
    return _npm.binary(NAME)


def available() -> bool:
    return os.access(binary(), os.X_OK)


def version() -> str:
    out = subprocess.run(["env", "ARTILLERY_DISABLE_TELEMETRY=true", binary(), "version"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Artillery:"):
            return line.split(":", 1)[1].strip()
    return ""


def command(spec: RunSpec, workdir: str) -> list:
    u = urlsplit(spec.url)
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    get = {"get": {"url": path}}
    if not spec.keepalive:
        get["get"]["headers"] = {"Connection": "close"}
    config = {"target": f"{u.scheme}://{u.netloc}", "http": {"timeout": spec.timeout_s}}
    if spec.insecure_tls:
        config["tls"] = {"rejectUnauthorized": False}
    seconds = spec.duration_s or 1
    if spec.rate:
        config["phases"] = [{"duration": max(1, math.ceil(seconds)), "arrivalRate": spec.rate}]
        flow = [get]
    else:
        config["phases"] = [{"duration": 1, "arrivalCount": spec.connections}]
        if spec.requests:
            flow = [{"loop": [get], "count": math.ceil(spec.requests / spec.connections)}]
        else:
            config["processor"] = os.path.join(workdir, PROCESSOR)
            with open(config["processor"], "w") as f:
                f.write(PROCESSOR_SOURCE % round(seconds * 1000))
            flow = [{"loop": [get], "whileTrue": "beforeDeadline"}]
    with open(os.path.join(workdir, SCRIPT), "w") as f:
        json.dump({"config": config, "scenarios": [{"name": path, "flow": flow}]}, f, indent=1)
    return ["env", "ARTILLERY_DISABLE_TELEMETRY=true", binary(), "run", "--quiet",
            "--output", os.path.join(workdir, REPORT), os.path.join(workdir, SCRIPT)]


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("artillery's latencies come from a sketch (about 1% relative error, "
                        "0.1 ms digits)")
    if spec.http2:
        result.notes.append("this run was HTTP/1.1")
    try:
        with open(os.path.join(workdir, REPORT)) as f:
            agg = json.load(f)["aggregate"]
    except FileNotFoundError:
        result.errors.other = 1
        result.notes.append("artillery wrote no report")
        return result
    counters = agg.get("counters", {})
    result.requests = int(counters.get("http.responses", 0))
    errors = Errors()
    for name, n in counters.items():
        if name.startswith("http.codes."):
            code = int(name.rsplit(".", 1)[1])
            if not 200 <= code <= 299:
                errors.non2xx += n
        elif name.startswith("errors."):
            code = name[len("errors."):]
            if code in CONNECT_CODES:
                errors.connect += n
            elif code in TIMEOUT_CODES:
                errors.timeout += n
            elif code in RESET_CODES:
                errors.reset += n
            else:
                errors.other += n
    result.errors = errors
    first, last = agg.get("firstCounterAt"), agg.get("lastCounterAt")
    result.duration_s = (last - first) / 1000 if first and last else 0.0
    rate = agg.get("rates", {}).get("http.request_rate")
    result.rps = float(rate) if rate else (result.requests / result.duration_s
                                           if result.duration_s else 0.0)
    rt = agg.get("summaries", {}).get("http.response_time")
    if rt and result.requests:
        result.latency = Latency(mean=rt["mean"], p50=rt["p50"], p90=rt["p90"], p99=rt["p99"],
                                 max=rt["max"])
    return result
