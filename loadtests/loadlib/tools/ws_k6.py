"""k6 over WebSockets (k6/websockets): the adapter runs the repository's own
scripts, loadtests/k6/ws-echo.js and ws-feed.js, with -e variables, and reads
the summary data they write (-e SUMMARY=...).

What k6 reports, and how it is read:
- ws_sessions: connections opened; ws_msgs_sent and ws_msgs_received:
  messages each way. k6 counts the close frame it sends in ws_msgs_sent (the
  echo script closes each connection with 1000), so against a server that
  counts data messages its "sent" is one per connection too many.
- the scripts' own metrics: notesd_ws_echo_rtt (ms from sending a message to
  its echo, from the timestamps k6 puts on its events) and
  notesd_ws_feed_latency (ms from the server's sent_us to the receive event);
  notesd_ws_close_<code>: connections by the close code k6 saw; 
  notesd_ws_mismatched (echoes unlike what was sent) and notesd_ws_feed_gaps
  (sequence numbers that never came) as errors.
- k6 is usually not on PATH here: it is found on PATH (k6), as with the HTTP
  adapter.
"""
import json
import os
import shutil
from urllib.parse import urlsplit

from .. import paths
from . import k6
from .base import Latency
from .ws_base import Unsupported, WsResult, WsSpec, tool_version

NAME = "k6"
INSTALL_HINT = k6.INSTALL_HINT
K6_DIR = paths.loadtests("k6")
SUMMARY = "ws-summary.json"


def available() -> bool:
    return shutil.which("k6") is not None


def version() -> str:
    return tool_version(["k6", "version"], r"v(\d+\.\d+\.\d+)")


def command(spec: WsSpec, workdir: str) -> list:
    u = urlsplit(spec.url)
    base = f"{'https' if u.scheme == 'wss' else 'http'}://{u.netloc}"
    env = {"BASE_URL": base, "VUS": spec.connections, "ITERATIONS": spec.connections,
           "SUMMARY": os.path.join(workdir, SUMMARY)}
    if spec.mode == "echo":
        script = "ws-echo.js"
        if u.path != "/ws/echo":
            raise Unsupported(f"ws-echo.js speaks to /ws/echo, not {u.path}")
        env.update(MESSAGES=spec.messages, SIZE=spec.size, QUERY=u.query)
    elif spec.mode == "feed":
        script = "ws-feed.js"
        knobs = dict(part.split("=", 1) for part in u.query.split("&") if "=" in part)
        env.update(RATE=knobs.get("rate", "10"), COUNT=knobs.get("count", "10"),
                   SIZE=knobs.get("size", "128"))
    else:
        raise Unsupported(f"no mode {spec.mode}")
    argv = ["k6", "run", "--quiet", "--no-usage-report"]
    for k, v in env.items():
        argv += ["-e", f"{k}={v}"]
    return argv + [os.path.join(K6_DIR, script)]


def parse(stdout: str, stderr: str, workdir: str, spec: WsSpec) -> WsResult:
    with open(os.path.join(workdir, SUMMARY)) as f:
        data = json.load(f)
    metrics = data.get("metrics", {})

    def count(name):
        return int(metrics.get(name, {}).get("values", {}).get("count", 0))

    result = WsResult(tool=NAME, connections=count("ws_sessions"), sent=count("ws_msgs_sent"),
                      received=count("ws_msgs_received"),
                      duration_s=data.get("state", {}).get("testRunDurationMs", 0) / 1000)
    trend = "notesd_ws_echo_rtt" if spec.mode == "echo" else "notesd_ws_feed_latency"
    v = metrics.get(trend, {}).get("values")
    if v:
        result.latency = Latency(mean=v.get("avg"), p50=v.get("p(50)", v.get("med")),
                                 p90=v.get("p(90)"), p99=v.get("p(99)"), max=v.get("max"))
    result.closes = {name[len("notesd_ws_close_"):]: count(name) for name in metrics
                     if name.startswith("notesd_ws_close_") and count(name)}
    for name in ("notesd_ws_mismatched", "notesd_ws_feed_gaps"):
        if count(name):
            result.errors[name] = count(name)
    result.notes.append("k6's ws_msgs_sent counts the close frames it sends")
    return result
