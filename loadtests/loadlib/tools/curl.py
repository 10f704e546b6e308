"""curl 7.88 (Debian's curl): the adapter.

Model: closed, by count. The adapter writes a config file with `requests`
URLs (each with `output = /dev/null`) and runs them with --parallel
--parallel-max `connections`: curl keeps that many transfers going and starts
the next when one ends. There is no duration and no rate: a spec without
`requests` makes command() raise ValueError, as httperf's adapter does.

curl is not a load generator; it is here as the one HTTP/2 client besides
h2load that Debian ships, so the conformance matrix can check HTTP/2 figures
against a second implementation (nghttp2 under both, but curl's own
connection handling and timing).

What it reports, and its quirks:
- -w writes one line per transfer: `CURLW <status> <time_total> <exitcode>
  <http_version>`, time in seconds with microsecond digits. Every figure is
  computed from those lines: requests completed are the transfers with a
  status (000 means no response), percentiles by nearest rank over them.
- A transfer that failed has status 000 and curl's exit code: 7 (could not
  connect) is connect, 28 (timed out) is timeout, 52/55/56 (empty reply,
  send or receive failure) are resets, anything else other.
- The run's length is the wall time between two `date` stamps printed by the
  wrapping shell around curl: it includes curl's start (a few ms).
- HTTP/1.1 transfers reuse connections (keep-alive); keepalive=False sends
  `Connection: close`. --parallel-immediate opens a connection per transfer
  slot at once instead of waiting to see whether it can multiplex.
- HTTP/2: --http2-prior-knowledge for http:// (h2c), --http2 (ALPN) for
  https://. Over HTTP/2 curl multiplexes the parallel transfers onto one
  connection; -k accepts a self-signed certificate.
- Known bug of curl 7.88 (Debian 12's), curl issue 10634, fixed in curl 8.0:
  an h2c prior-knowledge connection cannot be reused. The first transfer
  succeeds and every later one on that connection fails at once with exit
  code 16 ("Error in the HTTP2 framing layer") without sending anything, so a
  count run over h2c completes one request. parse() says so in notes.
"""
import os
import re
import shlex
import shutil
import subprocess

from ..quantile import percentile
from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "curl"
INSTALL_HINT = install_hint("apt-get install -y curl")

CONFIG = "curl-urls.conf"
WRITE_OUT = "CURLW %{http_code} %{time_total} %{exitcode} %{http_version}\\n"
H2_FRAMING = 16    # curl's "Error in the HTTP2 framing layer"
CONNECT_CODES = (6, 7)
TIMEOUT_CODES = (28,)
RESET_CODES = (52, 55, 56)


def available() -> bool:
    return shutil.which("curl") is not None


def version() -> str:
    out = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout
    m = re.match(r"curl (\S+)", out)
    return m.group(1) if m else ""


def command(spec: RunSpec, workdir: str) -> list:
    if not spec.requests:
        raise ValueError("curl adapter: curl runs a count: give `requests`")
    with open(os.path.join(workdir, CONFIG), "w") as f:
        line = f'url = "{spec.url}"\noutput = "/dev/null"\n'
        f.write(line * spec.requests)
    # -s alone leaves --parallel's progress meter on stderr
    argv = ["curl", "-s", "--no-progress-meter", "--parallel", "--parallel-max",
            str(spec.connections), "-m", f"{spec.timeout_s:g}", "-w", WRITE_OUT,
            "-K", os.path.join(workdir, CONFIG)]
    if spec.http2:
        argv.append("--http2" if spec.url.startswith("https:") else "--http2-prior-knowledge")
    else:
        argv += ["--http1.1", "--parallel-immediate"]
    if not spec.keepalive:
        argv += ["-H", "Connection: close"]
    if spec.insecure_tls and spec.url.startswith("https:"):
        argv.append("-k")
    stamp = 'echo "CURL_TIME $(date +%s.%N)"'
    return ["sh", "-c", f"{stamp}; {' '.join(shlex.quote(a) for a in argv)}; {stamp}"]



def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("curl runs a count of transfers (--parallel); figures computed from "
                        "its per-transfer -w lines")
    if spec.rate:
        result.notes.append("curl has no request rate: the run was closed-model")
    times, versions, framing = [], set(), 0
    for m in re.finditer(r"^CURLW (\d{3}) ([\d.]+) (\d+) (\S+)$", stdout, re.M):
        status, seconds, code = int(m.group(1)), float(m.group(2)), int(m.group(3))
        if status == 0:
            framing += code == H2_FRAMING
            kind = ("connect" if code in CONNECT_CODES else "timeout" if code in TIMEOUT_CODES
                    else "reset" if code in RESET_CODES else "other")
            setattr(result.errors, kind, getattr(result.errors, kind) + 1)
            continue
        times.append(seconds * 1000)
        versions.add(m.group(4))
        if not 200 <= status <= 299:
            result.errors.non2xx += 1
    stamps = [float(x) for x in re.findall(r"^CURL_TIME ([\d.]+)$", stdout, re.M)]
    if len(stamps) != 2:
        raise ValueError("curl's wrapper printed no start and end time")
    result.requests = len(times)
    result.duration_s = round(stamps[1] - stamps[0], 4)
    result.rps = result.requests / result.duration_s if result.duration_s > 0 else 0.0
    if versions:
        result.notes.append("HTTP version(s) used: " + ", ".join(sorted(versions)))
    if framing and spec.http2 and spec.url.startswith("http:"):
        result.notes.append(f"known curl 7.88 bug (curl issue 10634, fixed in 8.0): {framing} "
                            "transfers failed with exit code 16 reusing an h2c prior-knowledge "
                            "connection; they were never sent")
    if times:
        times.sort()
        result.latency = Latency(mean=sum(times) / len(times), p50=percentile(times, 50),
                                 p90=percentile(times, 90), p99=percentile(times, 99),
                                 max=times[-1])
    return result
