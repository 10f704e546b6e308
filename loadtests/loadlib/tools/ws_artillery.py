"""Artillery 2 over WebSockets (its `ws` engine; npm, pinned in loadtests/tools at
2.0.21): the adapter.

Model: `connections` virtual users arrive within the first second (arrivalCount
of a 1 s phase), each opens one WebSocket and runs the flow once:
- echo: `messages` times `send` with a `match` on the answer, so each send waits
  for its echo (ws.timeout, spec.timeout_s, is how long); then the engine closes
  the connection (code 1005, no status);
- feed: `expect` times `wait` with a `capture` of the message's seq.

What it reports (--output's "aggregate" counters), and its quirks:
- vusers.created: one WebSocket each; websocket.messages_sent and
  websocket.messages_received (the engine counts a received message only while
  a step waits for one: it sets its message handler per step); vusers.failed
  and errors.<reason>.
- no message latency (the ws engine times nothing but the VU's session), and no
  close codes: it has no handler for the server's close at all, so a close it
  did not ask for is seen as "response timeout" after ws.timeout, and counted
  twice, once more as errors.undefined.
"""
import json
import os
import subprocess

from . import _npm, artillery
from .ws_base import Unsupported, WsResult, WsSpec

NAME = "artillery"
INSTALL_HINT = artillery.INSTALL_HINT
SCRIPT = "artillery-ws.json"
REPORT = "artillery-ws-report.json"


def binary():
    return _npm.binary(NAME)


def available() -> bool:
    return os.access(binary(), os.X_OK)


def version() -> str:
    out = subprocess.run(["env", "ARTILLERY_DISABLE_TELEMETRY=true", binary(), "version"],
                         capture_output=True, text=True).stdout
    found = [line.split(":", 1)[1].strip() for line in out.splitlines()
             if line.startswith("Artillery:")]
    return found[0] if found else ""


def command(spec: WsSpec, workdir: str) -> list:
    config = {"target": spec.url, "phases": [{"duration": 1, "arrivalCount": spec.connections}],
              "ws": {"timeout": spec.timeout_s}}
    if spec.mode == "echo":
        payload = "x" * spec.size
        step = {"send": {"payload": payload, "match": {"regexp": "x+", "value": payload}}}
        flow = [{"loop": [step], "count": spec.messages}]
    elif spec.mode == "feed":
        flow = [{"loop": [{"wait": {"capture": {"json": "$.seq", "as": "seq"}}}],
                 "count": spec.expect}]
    else:
        raise Unsupported(f"no mode {spec.mode}")
    with open(os.path.join(workdir, SCRIPT), "w") as f:
        json.dump({"config": config, "scenarios": [{"engine": "ws", "flow": flow}]}, f, indent=1)
    return ["env", "ARTILLERY_DISABLE_TELEMETRY=true", binary(), "run", "--quiet",
            "--output", os.path.join(workdir, REPORT), os.path.join(workdir, SCRIPT)]


def parse(stdout: str, stderr: str, workdir: str, spec: WsSpec) -> WsResult:
    with open(os.path.join(workdir, REPORT)) as f:
        agg = json.load(f)["aggregate"]
    counters = agg.get("counters", {})
    result = WsResult(tool=NAME, connections=int(counters.get("vusers.created", 0)),
                      sent=int(counters.get("websocket.messages_sent", 0)),
                      received=int(counters.get("websocket.messages_received", 0)))
    result.errors = {name[len("errors."):]: int(n) for name, n in counters.items()
                     if name.startswith("errors.")}
    if counters.get("vusers.failed"):
        result.errors["vusers.failed"] = int(counters["vusers.failed"])
    first, last = agg.get("firstCounterAt"), agg.get("lastCounterAt")
    result.duration_s = (last - first) / 1000 if first and last else 0.0
    result.notes.append("no message latency and no close codes in artillery's ws engine")
    return result
