"""httperf 0.9 (Debian's httperf): the adapter.

Model: httperf opens --num-conns connections at --rate connections per
second (or, without --rate, one after another: one connection at a time),
and sends --num-calls requests on each, one after the other. There is no
duration option: a run is a count. The adapter maps a spec onto that:

- keep-alive, no rate (closed): `connections` connections opened at once
  (--rate high enough to open them all within about 10 ms), each sending
  requests / connections calls in a row, so `connections` requests are in
  flight, as in the other closed-model tools;
- a rate (open): one request per connection (--num-calls 1), new connections
  at the rate, rate x duration of them (or `requests`); keep-alive is not used;
- no keep-alive, no rate: one request per connection, one connection at a
  time (httperf's default): concurrency 1, whatever `connections` says.

It needs `requests`, or a rate and a duration: otherwise command() raises
ValueError.

What it reports, and its quirks:
- Only a text summary. "Reply time [ms]: response R transfer T" are the mean
  times to the first byte and of the transfer: the mean latency is R + T, with
  0.1 ms resolution. No percentiles and no maximum: p50/p90/p99/max are None.
- "Reply status: 1xx= 2xx= 3xx= 4xx= 5xx=" counts replies by class: the sum is
  the requests completed, all but 2xx are non2xx.
- "Errors: total client-timo socket-timo connrefused connreset fd-unavail
  addrunavail ftab-full other" counts failed connections and calls:
  connrefused -> connect, client-timo + socket-timo -> timeout,
  connreset -> reset, the rest -> other. A refused connection is one error
  however many calls it was to carry.
- It speaks HTTP/1.1 only, and it uses select(): at most 1,024 descriptors
  (FD_SETSIZE), so at most about a thousand connections at once.
"""
import math
import re
import shutil
import subprocess
from urllib.parse import urlsplit

from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "httperf"
INSTALL_HINT = install_hint("apt-get install -y httperf")


def available() -> bool:
    return shutil.which("httperf") is not None


def version() -> str:
    p = subprocess.run(["httperf", "--version"], capture_output=True, text=True)
    m = re.search(r"httperf-(\S+) compiled", p.stdout + p.stderr)
    return m.group(1) if m else ""


def command(spec: RunSpec, workdir: str) -> list:
    u = urlsplit(spec.url)
    if u.scheme != "http":
        raise ValueError("httperf adapter: only http:// URLs")
    uri = (u.path or "/") + (f"?{u.query}" if u.query else "")
    argv = ["httperf", "--hog", "--server", u.hostname, "--port", str(u.port or 80),
            "--uri", uri, "--timeout", f"{spec.timeout_s:g}"]
    if spec.rate:
        total = spec.requests or (math.ceil(spec.rate * spec.duration_s)
                                  if spec.duration_s else None)
        if not total:
            raise ValueError("httperf adapter: a rate needs a duration or a request count")
        return argv + ["--rate", f"{spec.rate:g}", "--num-conns", str(total), "--num-calls", "1"]
    if not spec.requests:
        raise ValueError("httperf adapter: httperf runs a count: give `requests` (or a rate)")
    if spec.keepalive:
        calls = math.ceil(spec.requests / spec.connections)
        return argv + ["--rate", str(spec.connections * 100), "--num-conns",
                       str(spec.connections), "--num-calls", str(calls)]
    return argv + ["--num-conns", str(spec.requests), "--num-calls", "1"]


def _find(pattern, text):
    m = re.search(pattern, text, re.M)
    if not m:
        raise ValueError(f"httperf output has no line matching {pattern!r}")
    return [float(g) for g in m.groups()]


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("httperf reports mean reply time only (0.1 ms resolution): "
                        "p50/p90/p99/max not reported")
    if not spec.keepalive and not spec.rate and spec.connections > 1:
        result.notes.append("httperf without keep-alive or a rate runs one connection at a "
                            "time: concurrency was 1")
    if spec.rate and spec.keepalive:
        result.notes.append("httperf at a rate opens one connection per request: "
                            "keep-alive not used")
    if "Total: connections" not in stdout:
        result.errors.other = 1
        result.notes.append("httperf printed no summary")
        return result
    _conns, _reqs, _replies, duration = _find(
        r"^Total: connections (\d+) requests (\d+) replies (\d+) test-duration ([\d.]+) s",
        stdout)
    s1, s2, s3, s4, s5 = (int(x) for x in _find(
        r"^Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)", stdout))
    result.requests = s1 + s2 + s3 + s4 + s5
    result.errors.non2xx = s1 + s3 + s4 + s5
    _total, client_timo, socket_timo, refused, reset = (int(x) for x in _find(
        r"^Errors: total (\d+) client-timo (\d+) socket-timo (\d+) connrefused (\d+) "
        r"connreset (\d+)", stdout))
    others = sum(int(x) for x in _find(
        r"^Errors: fd-unavail (\d+) addrunavail (\d+) ftab-full (\d+) other (\d+)", stdout))
    result.errors.connect = refused
    result.errors.timeout = client_timo + socket_timo
    result.errors.reset = reset
    result.errors.other = others
    result.duration_s = duration
    result.rps = _find(r"^Request rate: ([\d.]+) req/s", stdout)[0]
    if result.requests:
        response, transfer = _find(r"^Reply time \[ms\]: response ([\d.]+) transfer ([\d.]+)",
                                   stdout)
        result.latency = Latency(mean=round(response + transfer, 3))
    return result
