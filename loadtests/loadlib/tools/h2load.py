"""h2load (nghttp2-client 1.52, Debian's): the adapter.

Model: closed. -c clients, each keeps one request in flight (-m 1) on one
connection, until -n requests or for -D seconds.

What it reports, and its quirks:
- The summary's "time for request" line gives min, max, mean and sd with a
  unit on each figure (us, ms or s); no percentiles. --log-file writes one
  line per completed request (start in microseconds since the epoch, status,
  microseconds to the end of the response): p50, p90 and p99 are computed from
  it by nearest rank, over every response of any status. Requests that failed
  are not in the log; the summary's mean and max include only completed ones too.
- "requests: T total, S started, D done, OK succeeded, F failed, E errored,
  X timeout": failed = errored + timeout + responses outside 2xx. The
  "status codes" line gives the 3xx, 4xx and 5xx counts (non2xx). "done"
  counts every request that got an answer or an error; the requests completed
  here are the status-code counts added up.
- Errored requests that were never started (T - S) could not get a connection:
  they are connect errors; errored requests that had started are resets. With
  -D, h2load does not count failed connection attempts at all: a port where
  nothing listens reads as zero requests and zero errors.
- HTTP/1.1 needs --h1; without it h2load speaks HTTP/2 (h2c with prior
  knowledge for http:// URLs). Keep-alive is always on; Connection: close is
  not an option. -r is a rate of new connections, not of requests, so a
  spec's request rate is not applied. -N is the connection inactivity timeout.
"""
import math
import re
import shutil
import subprocess

from ..quantile import percentile
from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "h2load"
INSTALL_HINT = install_hint("apt-get install -y nghttp2-client")

LOG_FILE = "h2load-requests.tsv"
UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def available() -> bool:
    return shutil.which("h2load") is not None


def version() -> str:
    out = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"nghttp2/(\S+)", out)
    return m.group(1) if m else ""


def command(spec: RunSpec, workdir: str) -> list:
    argv = ["h2load", "-c", str(spec.connections), "-t", str(max(1, spec.threads)), "-m", "1",
            "-N", f"{max(1, math.ceil(spec.timeout_s))}s"]
    if spec.requests:
        argv += ["-n", str(spec.requests)]
    else:
        argv += ["-D", f"{max(1, math.ceil(spec.duration_s))}s"]
    if not spec.http2:
        argv.append("--h1")
    return argv + [f"--log-file={workdir}/{LOG_FILE}", spec.url]


def _ms(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    return float(m.group(1)) * UNIT_MS[m.group(2)] if m else None


def _log_times(workdir):
    times = []
    try:
        with open(f"{workdir}/{LOG_FILE}") as f:
            for line in f:
                parts = line.split("\t")
                if len(parts) == 3:
                    times.append(int(parts[2]) / 1000)
    except FileNotFoundError:
        pass
    return sorted(times)



def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    if spec.rate:
        result.notes.append("h2load has no request rate (-r is new connections per second): "
                            "the run was closed-model")
    if not spec.keepalive:
        result.notes.append("h2load always keeps connections alive")

    m = re.search(r"^finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", stdout, re.M)
    if not m:
        result.errors.other = 1
        result.notes.append("h2load printed no summary")
        return result
    result.duration_s = float(m.group(1)) * UNIT_MS[m.group(2)] / 1000
    result.rps = float(m.group(3))

    r = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored, (\d+) timeout", stdout, re.M)
    s = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", stdout, re.M)
    total, started, _done, _ok, _failed, errored, timeout = (int(g) for g in r.groups())
    codes = [int(g) for g in s.groups()]
    result.requests = sum(codes)
    result.errors.non2xx = sum(codes[1:])
    result.errors.timeout = timeout
    # with -D, started can exceed total: requests still in flight at the end
    never_started = max(0, min(errored, total - started))
    result.errors.connect = never_started
    result.errors.reset = errored - never_started
    if spec.duration_s and not spec.requests and total == 0:
        result.notes.append("h2load -D counts no failed connection attempts: zero requests "
                            "may mean nothing answered")

    t = re.search(r"^time for request:\s+(\S+)\s+(\S+)\s+(\S+)", stdout, re.M)
    times = _log_times(workdir)
    result.latency = Latency(
        mean=_ms(t.group(3)) if t and result.requests else None,
        max=_ms(t.group(2)) if t and result.requests else None,
        p50=percentile(times, 50) if times else None,
        p90=percentile(times, 90) if times else None,
        p99=percentile(times, 99) if times else None,
    )
    result.notes.append("h2load's percentiles are computed from its --log-file "
                        "(microseconds, completed requests)")
    return result
