"""The contract every load-tool adapter keeps.

An adapter is a module in this package with:

    NAME: str                   the tool's name in reports ("wrk", "h2load", ...)
    INSTALL_HINT: str           how to install it on Debian 12: install_hint(the tool's own
                                command), which names INSTALL_ALL first
    def available() -> bool     is the tool on this machine
    def version() -> str        the tool's own version string
    def command(spec: RunSpec, workdir: str) -> list[str]
                                argv that runs the load described by spec; the
                                adapter may write helper files (scripts) into workdir
    def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult
                                the tool's figures, read from its machine-readable
                                output where it has one (files it wrote in workdir)

and, where a command runs the tool's binary itself rather than through command() (wrk with
the harness's and calibrate's Lua scripts, k6 with the scripts of loadtests/k6):

    def path() -> str | None    where the tool's binary is; None when there is none

Adapters never start servers, never sleep and never touch any address but the
spec's URL (which the runner has checked is loopback or a namespace of ours).
"""
from dataclasses import dataclass, field, asdict
from typing import Optional

# The one command that installs every tool Debian 12 and npm have; each adapter's
# INSTALL_HINT names it first, then how to install that tool alone.
INSTALL_ALL = "loadtests/tools/install.sh --all"


def install_hint(alone: str) -> str:
    return f"{INSTALL_ALL} (every tool at once; this one alone: {alone})"


@dataclass
class RunSpec:
    url: str                           # full URL of the one route under load
    connections: int = 10              # concurrent connections (or virtual users)
    duration_s: Optional[float] = 10   # run for this long ...
    requests: Optional[int] = None     # ... or until this many requests (when the tool needs a count)
    keepalive: bool = True
    rate: Optional[float] = None       # requests/s for tools with an open (rate-driven) model
    # a ramping open model (k6's ramping-arrival-rate only): ((seconds, target/s), ...) stages
    # from `rate` as the start, each moving linearly to its target
    ramp: tuple = ()
    http2: bool = False                # HTTP/2 (over TLS for https URLs, h2c otherwise)
    insecure_tls: bool = True          # self-signed test certificates
    timeout_s: float = 10              # per-request timeout the tool should use
    threads: int = 1                   # tool threads/workers where it has them


@dataclass
class Errors:
    non2xx: int = 0    # responses with a status outside 200..299
    connect: int = 0   # connections that could not be opened
    timeout: int = 0   # requests the tool gave up waiting for
    reset: int = 0     # connections reset or closed mid-request
    other: int = 0     # anything the tool reports that fits none of the above

    def total(self) -> int:
        return self.non2xx + self.connect + self.timeout + self.reset + self.other


@dataclass
class Latency:
    """Milliseconds; None where the tool does not report the figure."""
    mean: Optional[float] = None
    p50: Optional[float] = None
    p90: Optional[float] = None
    p99: Optional[float] = None
    max: Optional[float] = None


@dataclass
class ToolResult:
    tool: str
    version: str = ""
    requests: int = 0              # requests completed: a response was received, any status
    errors: Errors = field(default_factory=Errors)
    rps: float = 0.0               # the tool's own req/s figure (or requests / its duration)
    duration_s: float = 0.0        # the run's length as the tool measured it
    latency: Latency = field(default_factory=Latency)
    cpu_s: Optional[float] = None  # the tool's user+system CPU (filled by the runner)
    notes: list = field(default_factory=list)  # caveats about what the tool reports

    def to_dict(self) -> dict:
        return asdict(self)
