"""The contract every WebSocket load-tool adapter keeps, beside tools/base.py's for HTTP.

A WebSocket adapter is a module tools/ws_<tool>.py with:

    NAME: str                   the tool's name in reports
    INSTALL_HINT: str           the command that installs it on Debian 12 (or where it comes from)
    def available() -> bool     is the tool on this machine
    def version() -> str        the tool's own version string
    def command(spec: WsSpec, workdir: str) -> list[str]
                                argv that runs the load described by spec; raises
                                Unsupported when the tool cannot do what spec asks
    def parse(stdout: str, stderr: str, workdir: str, spec: WsSpec) -> WsResult
                                the tool's own figures, as it reports them

run.adapters() leaves these modules out (they take a WsSpec, not a RunSpec);
tools/ws_run.py lists and runs them. Like the HTTP adapters, they never start
servers and never touch any address but the spec's URL, on loopback.
"""
import re
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Optional

from .base import Latency


class Unsupported(ValueError):
    """The tool cannot run this load (its reason is the message)."""


@dataclass
class WsSpec:
    url: str                  # ws://127.0.0.1:PORT/ws/echo?... or /ws/feed?...
    mode: str = "echo"        # "echo": send `messages`, each after the last one's echo, then close;
                              # "feed": read until the server closes, expecting `expect` messages
    connections: int = 10     # connections, opened at once, one per virtual user
    messages: int = 100       # echo: messages each connection sends
    size: int = 64            # echo: bytes of each message (text)
    expect: int = 0           # feed: messages the server sends on each connection
    timeout_s: float = 5      # how long the tool may wait for one answer


@dataclass
class WsResult:
    tool: str
    version: str = ""
    connections: int = 0       # WebSocket connections the tool says it opened
    sent: int = 0              # messages the tool says it sent
    received: int = 0          # messages the tool says it received
    latency: Latency = field(default_factory=Latency)   # ms: echo round trip, or feed delivery
    closes: Optional[dict] = None  # {close code (str): connections} as the tool saw the server's
                                   # close; None when the tool does not report close codes
    errors: dict = field(default_factory=dict)   # what the tool counted as failed, by its names
    duration_s: float = 0.0
    cpu_s: Optional[float] = None  # the tool's user+system CPU (filled by the runner)
    notes: list = field(default_factory=list)

    def error_total(self) -> int:
        return int(sum(self.errors.values()))

    def to_dict(self) -> dict:
        return asdict(self)


def tool_version(argv, pattern):
    """The first group of `pattern` in what `argv` prints, or "" (no such tool, no match)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(pattern, done.stdout + done.stderr)
    return m.group(1) if m else ""
