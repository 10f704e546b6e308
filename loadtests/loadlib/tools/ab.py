"""ab (ApacheBench 2.3, Debian's apache2-utils): the adapter.

Model: closed. -c connections each send one request, wait for the answer and
send the next, until -n requests or -t seconds (whichever comes first; -t alone
would cap the run at 50,000 requests, so a duration run also passes a large -n).

What it reports, and its quirks:
- It speaks HTTP/1.0 only. Keep-alive is off unless -k is given (then it sends
  "Connection: Keep-Alive"); without -k every request opens a new connection.
  No HTTP/2, no rate limit (closed model only).
- -e writes a CSV of the latency at every whole percent 0..100, in milliseconds
  with microsecond digits: p50, p90, p99 and max (the 100% row) come from it.
  The mean is the "Total" mean of the "Connection Times (ms)" table, which ab
  prints in whole milliseconds (a sub-millisecond route reads as 0).
- Percentiles are over every completed request, failed or not.
- "Failed requests" has four kinds: Connect, Receive, Length, Exceptions.
  Length is not an error: ab counts every response whose body length differs
  from the first response's, and many routes (/json) vary in length. It is
  left out of the errors and reported in notes. Receive is a connection reset
  or closed mid-response; Exceptions are other errors.
- "Non-2xx responses" appears only when there were some.
- A connection ab cannot open ends the whole run at once: no summary, exit
  status 111, "apr_socket_recv: Connection refused (111)" (or
  apr_socket_connect) on stderr. That reads as one connect error.
- A request past -s seconds also ends the whole run ("The timeout specified has
  expired"): one timeout error, and the figures of the requests before it are
  lost.
"""
import re
import shutil
import subprocess
from urllib.parse import urlsplit

from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "ab"
INSTALL_HINT = install_hint("apt-get install -y apache2-utils")

PERCENTILES_CSV = "ab-percentiles.csv"
# A duration run still needs -n (ab sizes its sample array by it, lazily): more
# requests per second than ab can send on one core, so -t always ends the run.
DURATION_RUN_RPS_CEILING = 200_000


def available() -> bool:
    return shutil.which("ab") is not None


def version() -> str:
    out = subprocess.run(["ab", "-V"], capture_output=True, text=True).stdout
    m = re.search(r"Version (\S+)", out)
    return m.group(1) if m else ""


def command(spec: RunSpec, workdir: str) -> list:
    argv = ["ab", "-c", str(spec.connections), "-s", str(max(1, round(spec.timeout_s)))]
    if spec.requests:
        argv += ["-n", str(spec.requests)]
    else:
        seconds = max(1, round(spec.duration_s))
        argv += ["-t", str(seconds), "-n", str(max(50_000, seconds * DURATION_RUN_RPS_CEILING))]
    if spec.keepalive:
        argv.append("-k")
    argv += ["-e", f"{workdir}/{PERCENTILES_CSV}"]
    # ab wants a path, even "/", after the host
    url = spec.url if urlsplit(spec.url).path else spec.url + "/"
    return argv + [url]


def _number(pattern, text, cast=float):
    m = re.search(pattern, text, re.M)
    return cast(m.group(1)) if m else None


def _percentiles(workdir):
    """{percent: ms} from ab's -e CSV, or {} when ab wrote none."""
    rows = {}
    try:
        with open(f"{workdir}/{PERCENTILES_CSV}") as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) == 2 and parts[0].isdigit():
                    rows[int(parts[0])] = float(parts[1])
    except FileNotFoundError:
        pass
    return rows


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("ab's mean is whole milliseconds (its Connection Times table)")

    complete = _number(r"^Complete requests:\s+(\d+)", stdout, int)
    if complete is None:
        # ab stopped before its summary: one connection it could not open or
        # one request past -s; the requests before it are not reported.
        if re.search(r"Connection refused|apr_socket_connect", stderr):
            result.errors.connect = 1
        elif "timeout specified has expired" in stderr:
            result.errors.timeout = 1
        else:
            result.errors.other = 1
        result.notes.append("ab stopped without a summary: " + stderr.strip().splitlines()[-1]
                            if stderr.strip() else "ab stopped without a summary")
        return result

    result.requests = complete
    m = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", stdout)
    if m:
        connect, receive, length, exceptions = (int(g) for g in m.groups())
        result.errors.connect = connect
        result.errors.reset = receive
        result.errors.other = exceptions
        if length:
            result.notes.append(f"{length} 'Length' failures not counted as errors: ab flags every "
                                "body whose length differs from the first one's")
    result.errors.non2xx = _number(r"^Non-2xx responses:\s+(\d+)", stdout, int) or 0
    result.duration_s = _number(r"^Time taken for tests:\s+([\d.]+) seconds", stdout) or 0.0
    result.rps = _number(r"^Requests per second:\s+([\d.]+)", stdout) or 0.0

    total = re.search(r"^Total:\s+(\d+)\s+(\d+)\s", stdout, re.M)
    pct = _percentiles(workdir)
    result.latency = Latency(
        mean=float(total.group(2)) if total else None,
        p50=pct.get(50),
        p90=pct.get(90),
        p99=pct.get(99),
        max=pct.get(100),
    )
    if not pct:
        result.notes.append("no -e percentile CSV: p50/p90/p99/max not reported")
    return result
