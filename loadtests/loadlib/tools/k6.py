"""k6 (Grafana's): the adapter, and where the k6 binary is found.

k6 is in neither Debian 12 nor npm. It is found the way users and CI have it:
the file K6 names when that variable is set (K6=/path/to/k6), else `k6` on
PATH. `.ci/run` puts the checkout's sibling `../shared/tools/k6` on PATH when
that directory exists, and CMake passes the k6 it found the same way to the
tests as K6. The version every pin in the repository names (docker/compose.yaml,
the TestRun, @types/k6, the docs) is PINNED; loadtests/tests/k6/test_version.py
compares it with the binary's.

The parser is tested on fixtures in the data shape k6 documents for
handleSummary(), and the whole adapter live in the conformance matrix
(loadtests/calibrate --tools all) and its smoke run.

Model, as the generated script sets it up:
- no rate (closed): `constant-vus`, `connections` VUs for the duration, or
  `shared-iterations` (the VUs share `requests` iterations);
- a rate and a ramp (open): `ramping-arrival-rate` from the rate through the
  ramp's stages, VUs as for a constant rate;
- a rate (open): `constant-arrival-rate`, rate iterations per second for the
  duration (or requests / rate seconds), `connections` VUs allocated and at
  most 10x that added when answers are slow; iterations k6 could not start
  for want of a VU are its dropped_iterations.
One iteration is one GET. keepalive=False sets noConnectionReuse.

The adapter writes the script into the work directory; its handleSummary
writes the summary data as JSON to k6-summary.json there, and parse() reads it:
- metrics.http_reqs.values.count: requests sent, failed ones included;
  metrics.http_req_duration.values: avg, p(50), p(90), p(99), max in ms
  (the script asks for these trend stats), exact over all samples. Note that
  http_req_duration is sending + waiting + receiving: it leaves out the time
  blocked, connecting and in the TLS handshake.
- Requests that got no response (status 0) are sorted by the script itself,
  from res.error_code, into counters notesd_errors_connect (1210-1212: dial
  errors, refused), notesd_errors_timeout (1050), notesd_errors_reset (1201,
  1213, 1220, 1221) and notesd_errors_other; responses outside 2xx add to
  notesd_errors_non2xx. k6's own http_req_failed counts all of them without
  kinds (and counts 3xx as fine by default).
- state.testRunDurationMs is the run's length (graceful stop included).
- HTTP/2 is negotiated over TLS by itself (no h2c): http2 needs an https URL.
"""
import json
import math
import os
import re
import shutil
import subprocess

from .base import Latency, RunSpec, ToolResult

NAME = "k6"
# The k6 release the tests run and every pin names.
PINNED = "2.2.0"
INSTALL_HINT = (f"k6 is in neither Debian nor npm: put k6 {PINNED} (Grafana's release binary or "
                "package) on PATH or set K6=/path/to/k6; .ci/run uses ../shared/tools/k6 when it "
                "exists. Or run the scripts in Compose: docker compose -f docker/compose.yaml run "
                "--rm k6")
# k6's built-in web dashboard and its HTML export (K6_WEB_DASHBOARD_EXPORT) came with v0.49.0.
WEB_DASHBOARD_SINCE = (0, 49, 0)

SCRIPT = "k6-script.js"
SUMMARY = "k6-summary.json"
KINDS = ("connect", "timeout", "reset", "other", "non2xx")
SCRIPT_SOURCE = """\
// One k6 run against one URL; handleSummary writes the summary data as JSON.
import http from 'k6/http';
import { Counter } from 'k6/metrics';

const URL = %(url)s;
const SUMMARY = %(summary)s;
const errors = {
  connect: new Counter('notesd_errors_connect'),
  timeout: new Counter('notesd_errors_timeout'),
  reset: new Counter('notesd_errors_reset'),
  other: new Counter('notesd_errors_other'),
  non2xx: new Counter('notesd_errors_non2xx'),
};

export const options = %(options)s;

// k6's error codes: 1050 request timeout; 1210-1212 dial errors (refused among
// them); 1201, 1213, 1220, 1221 broken pipe and resets.
function kind(code) {
  if (code === 1050) return 'timeout';
  if (code >= 1210 && code <= 1212) return 'connect';
  if (code === 1201 || code === 1213 || code === 1220 || code === 1221) return 'reset';
  return 'other';
}

export default function () {
  const res = http.get(URL, { timeout: %(timeout)s });
  if (res.status === 0) errors[kind(res.error_code)].add(1);
  else if (res.status < 200 || res.status > 299) errors.non2xx.add(1);
}

export function handleSummary(data) {
  return { [SUMMARY]: JSON.stringify(data, null, 1) };
}
"""


def path():
    """The k6 binary: the file K6 names when K6 is set (None when that is not an
    executable file: an explicit choice is not second-guessed by PATH), else `k6` on
    PATH, else None."""
    chosen = os.environ.get("K6", "")
    if chosen:
        return os.path.abspath(chosen) if os.path.isfile(chosen) and os.access(chosen, os.X_OK) \
            else None
    return shutil.which("k6")


def missing() -> str:
    """Why there is no k6, and how to get one (for skip messages)."""
    chosen = os.environ.get("K6", "")
    if chosen:
        return f"K6={chosen} is not an executable file. {INSTALL_HINT}"
    return f"no k6 on PATH and K6 is unset. {INSTALL_HINT}"


def available() -> bool:
    return path() is not None


def version(binary=None) -> str:
    """'2.2.0' from `k6 version` ('' when it cannot be run)."""
    try:
        out = subprocess.run([binary or path() or "k6", "version"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r"v(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else ""


def version_tuple(text) -> tuple:
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(x) for x in m.groups()) if m else ()


def web_dashboard_env(html_path, binary=None) -> dict:
    """The environment that makes k6 write its web dashboard's end-of-run HTML report
    to html_path, without serving the dashboard on any port (K6_WEB_DASHBOARD_PORT=-1);
    {} when the k6 at hand predates the dashboard. One point a second, as Prometheus
    scrapes the server (k6's default is 10 s, too coarse for short runs, and a run
    shorter than about two periods gets no report)."""
    v = version_tuple(version(binary))
    if not v or v < WEB_DASHBOARD_SINCE:
        return {}
    return {"K6_WEB_DASHBOARD": "true", "K6_WEB_DASHBOARD_PORT": "-1",
            "K6_WEB_DASHBOARD_PERIOD": "1s", "K6_WEB_DASHBOARD_EXPORT": html_path}


def scenario(spec: RunSpec) -> dict:
    seconds = f"{max(1, math.ceil(spec.duration_s or 1))}s"
    if spec.rate and spec.ramp:
        return {"executor": "ramping-arrival-rate", "startRate": spec.rate, "timeUnit": "1s",
                "stages": [{"duration": f"{s:g}s", "target": t} for s, t in spec.ramp],
                "preAllocatedVUs": spec.connections, "maxVUs": 10 * spec.connections}
    if spec.rate:
        if spec.requests:
            seconds = f"{max(1, math.ceil(spec.requests / spec.rate))}s"
        return {"executor": "constant-arrival-rate", "rate": spec.rate, "timeUnit": "1s",
                "duration": seconds, "preAllocatedVUs": spec.connections,
                "maxVUs": 10 * spec.connections}
    if spec.requests:
        return {"executor": "shared-iterations", "vus": spec.connections,
                "iterations": spec.requests, "maxDuration": "10m"}
    return {"executor": "constant-vus", "vus": spec.connections, "duration": seconds}


def command(spec: RunSpec, workdir: str) -> list:
    options = {
        "scenarios": {"load": scenario(spec)},
        "discardResponseBodies": True,
        "noConnectionReuse": not spec.keepalive,
        "insecureSkipTLSVerify": spec.insecure_tls,
        "summaryTrendStats": ["avg", "min", "p(50)", "p(90)", "p(99)", "max"],
    }
    with open(os.path.join(workdir, SCRIPT), "w") as f:
        f.write(SCRIPT_SOURCE % {"url": json.dumps(spec.url),
                                 "summary": json.dumps(os.path.join(workdir, SUMMARY)),
                                 "options": json.dumps(options, indent=2),
                                 "timeout": json.dumps(f"{spec.timeout_s:g}s")})
    return [path() or "k6", "run", "--quiet", "--no-usage-report", os.path.join(workdir, SCRIPT)]


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = ToolResult(tool=NAME)
    result.notes.append("k6's http_req_duration leaves out connect and TLS time")
    if spec.http2 and not spec.url.startswith("https:"):
        result.notes.append("k6 negotiates HTTP/2 over TLS only: this run was HTTP/1.1")
    try:
        with open(os.path.join(workdir, SUMMARY)) as f:
            data = json.load(f)
    except FileNotFoundError:
        result.errors.other = 1
        result.notes.append("k6 wrote no summary")
        return result
    return from_summary(data, result)


def from_summary(data: dict, result: ToolResult) -> ToolResult:
    """Fills result from k6's handleSummary data (the documented shape)."""
    metrics = data.get("metrics", {})

    def value(name, key, default=0):
        return metrics.get(name, {}).get("values", {}).get(key, default)

    for kind in KINDS:
        setattr(result.errors, kind, int(value(f"notesd_errors_{kind}", "count")))
    sent = int(value("http_reqs", "count"))
    result.requests = sent - (result.errors.total() - result.errors.non2xx)
    result.duration_s = data.get("state", {}).get("testRunDurationMs", 0) / 1000
    result.rps = float(value("http_reqs", "rate", 0.0))
    dropped = int(value("dropped_iterations", "count"))
    if dropped:
        result.notes.append(f"k6 dropped {dropped} iterations (no VU free to start them)")
    d = metrics.get("http_req_duration", {}).get("values")
    if d and result.requests:
        result.latency = Latency(mean=d.get("avg"), p50=d.get("p(50)", d.get("med")),
                                 p90=d.get("p(90)"), p99=d.get("p(99)"), max=d.get("max"))
        if d.get("p(99)") is None:
            result.notes.append("p99 not in the summary's trend stats")
    return result
