"""siege 4.0.7 (Debian's siege): the adapter.

Model: closed. -c simulated users, each sends a request, waits for the answer
and sends the next (benchmark mode: no delay between them), for -t time or -r
repetitions per user. There is no rate option (only a random delay).

What it reports, and its quirks:
- Settings come from a siegerc file the adapter writes into the work
  directory (-R), and HOME points there too, because siege writes a template
  ~/.siege/siege.conf on its first run. Without that file siege would use its
  defaults: "connection = close" (a new TCP connection per request: siege's
  default is NOT keep-alive), HTTP/1.1, a 30 s timeout, logging to
  /var/log/siege.log and an HTML parser that fetches the page's resources.
  The file turns keep-alive on when the spec asks for it, logging and the
  parser off, and JSON output on.
- --json-output (json_output = true) prints the final figures as JSON on
  stdout: transactions (responses of any status), successful_transactions
  (status below 400: siege counts 3xx as success), failed_transactions
  (socket failures: refused, timed out, reset; not HTTP statuses),
  elapsed_time, transaction_rate, response_time (the mean) and
  longest_transaction: every time in SECONDS with two decimals, so 10 ms
  resolution and a sub-10 ms route reads as 0.00. There are no percentiles.
- non2xx is transactions - successful_transactions: 4xx and 5xx only.
- The kinds of socket failures are read from the error lines on stderr
  ("unable to connect ... Connection refused", "timed out", "reset").
- siege aborts a run after 1,024 socket failures (its "failures" setting): a
  port where nothing listens ends within a fraction of a second, with 1,025
  failed transactions.
- -t is not exact: siege 4.0.7 was seen ending a "-t 2S" run after 1.3 s and
  a "-t 3S" run after 2.8 s. duration_s is siege's own elapsed_time.
- -r counts repetitions per user: a request count is rounded up to a whole
  number of repetitions for every user.
"""
import json
import math
import os
import re
import shutil
import subprocess

from .base import Latency, RunSpec, ToolResult, install_hint

NAME = "siege"
INSTALL_HINT = install_hint("apt-get install -y siege")

RC_FILE = "siegerc"


def available() -> bool:
    return shutil.which("siege") is not None


def version() -> str:
    p = subprocess.run(["siege", "--version"], capture_output=True, text=True)
    m = re.search(r"SIEGE (\S+)", p.stdout + p.stderr)
    return m.group(1) if m else ""


def command(spec: RunSpec, workdir: str) -> list:
    with open(os.path.join(workdir, RC_FILE), "w") as f:
        f.write("# written by loadlib/tools/siege.py for one run\n"
                f"connection = {'keep-alive' if spec.keepalive else 'close'}\n"
                "protocol = HTTP/1.1\n"
                f"timeout = {max(1, math.ceil(spec.timeout_s))}\n"
                "logging = false\n"
                "parser = false\n"
                "benchmark = true\n"
                "json_output = true\n"
                "verbose = false\n"
                "show-logfile = false\n")
    argv = ["env", f"HOME={workdir}", "siege", "-R", os.path.join(workdir, RC_FILE),
            "-c", str(spec.connections)]
    if spec.requests:
        argv += ["-r", str(math.ceil(spec.requests / spec.connections))]
    else:
        argv += ["-t", f"{max(1, math.ceil(spec.duration_s))}S"]
    return argv + [spec.url]


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("siege reports times in seconds with 2 decimals (10 ms resolution); "
                        "p50/p90/p99 not reported")
    if spec.rate:
        result.notes.append("siege has no request rate: the run was closed-model")
    if spec.http2:
        result.notes.append("siege speaks HTTP/1.x only")
    if spec.requests and spec.requests % spec.connections:
        result.notes.append("siege -r repeats per user: the request count was rounded up")
    start = stdout.find("{")
    if start < 0:
        result.errors.other = 1
        result.notes.append("siege printed no JSON")
        return result
    d = json.loads(stdout[start:stdout.rindex("}") + 1])
    result.requests = int(d["transactions"])
    result.errors.non2xx = result.requests - int(d["successful_transactions"])
    failed = int(d["failed_transactions"])
    lines = [l for l in stderr.splitlines() if "error" in l]
    result.errors.connect = min(failed, sum("unable to connect" in l or "refused" in l
                                            for l in lines))
    result.errors.timeout = min(failed - result.errors.connect,
                                sum("timed out" in l for l in lines))
    result.errors.reset = min(failed - result.errors.connect - result.errors.timeout,
                              sum("reset" in l for l in lines))
    result.errors.other = failed - result.errors.connect - result.errors.timeout \
        - result.errors.reset
    result.duration_s = float(d["elapsed_time"])
    result.rps = float(d["transaction_rate"])
    if result.requests:
        result.latency = Latency(mean=float(d["response_time"]) * 1000,
                                 max=float(d["longest_transaction"]) * 1000)
    return result
