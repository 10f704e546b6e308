"""The wrk adapter (wrk 4, Debian's 4.1.0), and the reading of the one-line JSON
summaries the Lua scripts under loadtests/ print from wrk's done() hook.

Two scripts print such a line, both starting `WRK_JSON `:
  calibration/latency.lua  wrk's own request to the spec's URL; latency figures,
                           errors by kind (connect, read, write, timeouts, status >= 400)
  wrk/notes.lua            the request mixes; p50/p95/p99, non2xx, socket_errors, and
                           per-name counts with BREAKDOWN=1
The adapter runs latency.lua, which fits a RunSpec (one URL); the commands that
run the mixes use json_line() and read_json_line() on notes.lua's output.
"""
import json
import re
import shutil
import subprocess

from .. import paths
from .base import Errors, Latency, ToolResult, install_hint

NAME = "wrk"
INSTALL_HINT = install_hint("apt-get install -y wrk")
TAG = "WRK_JSON"
LATENCY_LUA = paths.loadtests("calibration", "latency.lua")


class OutputError(ValueError):
    """wrk's output without a usable WRK_JSON line."""


def path():
    return shutil.which("wrk")


def available():
    return path() is not None


def version_line(binary=None):
    """wrk's banner without the copyright: 'wrk 4.1.0 [epoll]' ('' when it cannot be run)."""
    try:
        res = subprocess.run([binary or path() or "wrk", "-v"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    first = ((res.stdout + res.stderr).strip().splitlines() or [""])[0]
    return first.split(" Copyright")[0].strip()


def version():
    """'wrk 4.1.0' ('' when wrk cannot be run)."""
    return re.sub(r"\s*\[epoll\].*$", "", version_line()).strip()


def json_line(text, tag=TAG):
    """The JSON object of the last `TAG {...}` line of a script's output; None when
    there is none or it is not JSON."""
    for line in reversed(text.splitlines()):
        if line.startswith(tag + " "):
            try:
                return json.loads(line[len(tag) + 1:])
            except ValueError:
                return None
    return None


def read_json_line(file_path, tag=TAG):
    """json_line() of a saved output file; OutputError saying what is wrong otherwise."""
    try:
        with open(file_path, encoding="utf-8", errors="replace") as f:
            lines = [l for l in f.read().splitlines() if l.startswith(tag + " ")]
    except OSError as e:
        raise OutputError(f"cannot read {file_path}: {e.strerror}") from None
    if not lines:
        raise OutputError(f"{file_path}: no {tag} line (is it the output of loadtests/wrk/notes.lua?)")
    try:
        return json.loads(lines[-1][len(tag) + 1:])
    except json.JSONDecodeError as e:
        raise OutputError(f"{file_path}: {tag} line is not JSON: {e}") from None


def timeouts(text):
    """Requests wrk gave up on, from notes.lua's `socket errors ... timeout N)` line."""
    m = re.search(r"timeout (\d+)\)", text)
    return int(m.group(1)) if m else 0


def command(spec, workdir):
    """wrk -tT -cC -dDs --timeout Ss --latency -s latency.lua URL; wrk needs a duration,
    so a spec given only as a request count runs for its timeout instead."""
    seconds = spec.duration_s if spec.duration_s else spec.timeout_s
    argv = [path() or "wrk", f"-t{max(1, spec.threads)}", f"-c{max(spec.connections, spec.threads, 1)}",
            f"-d{max(1, round(seconds))}s", "--timeout", f"{max(1, round(spec.timeout_s))}s", "--latency",
            "-s", LATENCY_LUA]
    if not spec.keepalive:
        argv[1:1] = ["-H", "Connection: close"]
    return argv + [spec.url]


def parse(stdout, stderr, workdir, spec):
    """latency.lua's (or notes.lua's) WRK_JSON line as a ToolResult."""
    data = json_line(stdout + "\n" + stderr)
    if data is None:
        raise OutputError("no WRK_JSON line in wrk's output")
    return from_json(data)


def from_json(data):
    """A WRK_JSON object of either script as a ToolResult."""
    res = ToolResult(tool=NAME, version=version())
    res.requests = int(data.get("requests", 0))
    res.duration_s = float(data.get("duration_s") or 0.0)
    res.rps = float(data.get("rps") or 0.0)
    res.latency = Latency(mean=data.get("mean_ms"), p50=data.get("p50_ms"), p90=data.get("p90_ms"),
                          p99=data.get("p99_ms"), max=data.get("max_ms"))
    if "status_errors" in data:                              # latency.lua
        res.errors = Errors(non2xx=int(data["status_errors"]), connect=int(data.get("connect_errors", 0)),
                            timeout=int(data.get("timeouts", 0)),
                            reset=int(data.get("read_errors", 0)) + int(data.get("write_errors", 0)))
        res.notes.append("non2xx is wrk's own count of status >= 400: 3xx answers are not counted")
    else:                                                    # notes.lua
        res.errors = Errors(non2xx=int(data.get("non2xx", 0)), other=int(data.get("socket_errors", 0)))
        res.notes.append("socket errors are reported as one sum, counted as other")
    res.notes.append("latency is measured from when a request was written (closed model, "
                     "wrk 4's after-the-fact correction for stalls)")
    return res
