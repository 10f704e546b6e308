"""Tsung 1.7 (Debian's tsung package) over WebSockets (its ts_websocket
sessions): the adapter.

Model: `connections` users arrive within the first second, each runs one
session: connect to the spec's path, `messages` times a text message of `size`
bytes inside a transaction named "echo" (each message waits for an answer, up
to global_ack_timeout = spec.timeout_s), then a close. The feed is not
something tsung can read: it waits for server data only as the answer to a
request it sent (or one `wait_bidi` think time per read, which counts reads,
not messages), so that mode is Unsupported.

What it reports: tsung.log, in the log directory, with a dump of its counters
every 10 s and one at the end:
- "connect": connections opened (the first number of a dump is that interval's
  count; the dumps are added up); "tr_echo": echo transactions, their mean and
  max in ms (tsung keeps no percentiles); error_<reason> counters (two numbers:
  the interval's and the total).
- received is the echo transactions that did not end in error_timeout.
- no close codes. After a server's close, tsung opens a new TCP connection for
  each message still to send (a "connect" each) and writes the frame on it
  without a WebSocket handshake; it counts those echo transactions as done (the
  one that was waiting when the close came ends in error_timeout).
"""
import glob
import os
import shutil
import urllib.parse
from xml.sax.saxutils import escape, quoteattr

from .base import Latency, install_hint
from .ws_base import Unsupported, WsResult, WsSpec, tool_version

NAME = "tsung"
INSTALL_HINT = install_hint("apt-get install -y tsung")
CONFIG = "tsung-ws.xml"
CONFIG_SOURCE = """<?xml version="1.0"?>
<!DOCTYPE tsung SYSTEM "/usr/share/tsung/tsung-1.0.dtd" []>
<tsung loglevel="notice" version="1.0">
  <clients><client host="localhost" use_controller_vm="true" maxusers="%(users)d"/></clients>
  <servers><server host=%(host)s port="%(port)d" type="tcp"/></servers>
  <load>
    <arrivalphase phase="1" duration="1" unit="second">
      <users maxnumber="%(users)d" arrivalrate="%(rate)d" unit="second"/>
    </arrivalphase>
  </load>
  <options><option name="global_ack_timeout" value="%(ack_ms)d"/></options>
  <sessions>
    <session name="echo" probability="100" type="ts_websocket">
      <request><websocket type="connect" path=%(path)s></websocket></request>
      <for from="1" to="%(messages)d" incr="1" var="i">
        <transaction name="echo">
          <request><websocket type="message" frame="text">%(payload)s</websocket></request>
        </transaction>
      </for>
      <request><websocket type="close"></websocket></request>
    </session>
  </sessions>
</tsung>
"""


def available() -> bool:
    return shutil.which("tsung") is not None


def version() -> str:
    return tool_version(["tsung", "-v"], r"version (\S+)")


def command(spec: WsSpec, workdir: str) -> list:
    if spec.mode != "echo":
        raise Unsupported("tsung waits for server data only as an answer to what it sends, "
                          "or per read (wait_bidi), never per message: it cannot read a feed")
    u = urllib.parse.urlsplit(spec.url)
    if u.scheme != "ws":
        raise Unsupported("this adapter speaks plain ws:// only")
    path = u.path + (f"?{u.query}" if u.query else "")
    with open(os.path.join(workdir, CONFIG), "w") as f:
        f.write(CONFIG_SOURCE % {"users": spec.connections, "rate": max(1000, 10 * spec.connections),
                                 "host": quoteattr(u.hostname), "port": u.port,
                                 "ack_ms": int(spec.timeout_s * 1000), "path": quoteattr(path),
                                 "messages": spec.messages, "payload": escape("x" * spec.size)})
    return ["tsung", "-n", "-f", os.path.join(workdir, CONFIG), "-l",
            os.path.join(workdir, "log"), "start"]


def read_dumps(text):
    """{name: numbers} from tsung.log: a sample's count (its first number) added up over the
    dumps, with its mean and max from the last; a counter (two numbers) by its total."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[0] != "stats:" or parts[1].startswith("{"):
            continue
        nums = [float(x) for x in parts[2:]]
        if len(nums) == 2:
            out[parts[1]] = {"count": nums[1]}
        else:
            prev = out.get(parts[1], {"count": 0})
            out[parts[1]] = {"count": prev["count"] + nums[0], "mean": nums[1], "max": nums[3]}
    return out


def parse(stdout: str, stderr: str, workdir: str, spec: WsSpec) -> WsResult:
    logs = glob.glob(os.path.join(workdir, "log", "*", "tsung.log"))
    if not logs:
        raise ValueError("tsung wrote no tsung.log")
    with open(logs[0]) as f:
        stats = read_dumps(f.read())

    def n(name):
        return int(stats.get(name, {}).get("count", 0))

    result = WsResult(tool=NAME, connections=n("connect"), sent=n("tr_echo"),
                      received=n("tr_echo") - n("error_timeout"))
    echo = stats.get("tr_echo")
    if echo and echo.get("mean") is not None:
        result.latency = Latency(mean=echo["mean"], max=echo["max"])
    result.errors = {name: n(name) for name in stats if name.startswith("error_")}
    result.notes.append("tsung keeps a mean and a max, no percentiles, and no close codes")
    return result
