"""Locust 2.12's distributed mode (Debian's python3-locust): the adapter.

A master (`--master --headless --expect-workers 2`, bound to 127.0.0.1 on a free
port) hands the users out to WORKERS worker processes (`--worker --master-host
127.0.0.1`), which run them and report their figures to the master every 3 s and
once more when the master tells them to quit; the master's statistics are the
sum. It is how Locust uses more than one core (one Python process each), and its
reports are the part worth checking: the master's counts against the server's.

The adapter writes the same locustfile as the single-process adapter (locust.py;
the final CSV is written by the master only), with one fix for Debian's package
(VERSION_FIX below: without it the master refuses every worker), and a small runner script,
locust-distributed.py, that starts the master and the workers and exits with the
master's status once the workers are gone (SIGTERM is passed on to all of them).
The master waits 0.5 s for the workers' final reports before it quits; a report
that comes later is lost, and the counts check shows it.

Model and figures as locust.py: closed, -u users in all (split over the workers),
constant_throughput(rate / users) per user with a rate; the master's final stats
CSV (counts, errors by text, rounded percentiles). Pinned with taskset, all the
processes share the tool's one core, so here the mode is checked for what it
reports, not for the throughput more cores would give.
"""
import os
import sys
from urllib.parse import urlsplit

from . import locust as single
from ..server import free_port
from .base import RunSpec, ToolResult

NAME = "locust-distributed"
INSTALL_HINT = single.INSTALL_HINT
WORKERS = 2
RUNNER = "locust-distributed.py"
RUNNER_SOURCE = '''\
"""Locust's distributed mode on one machine: a master and {workers} workers on
loopback; exits with the master's status once the workers are gone."""
import signal
import subprocess
import sys

master = subprocess.Popen({master!r}, stdin=subprocess.DEVNULL)
workers = [subprocess.Popen({worker!r}, stdin=subprocess.DEVNULL) for _ in range({workers})]


def stop(signum, frame):
    for p in [master, *workers]:
        if p.poll() is None:
            p.terminate()


signal.signal(signal.SIGTERM, stop)
rc = master.wait()
for w in workers:
    try:
        w.wait(timeout=30)
    except subprocess.TimeoutExpired:
        w.kill()
        w.wait()
sys.exit(rc)
'''


# Appended to the locustfile: Debian 12's python3-locust 2.12.1-1 is built without its
# version (locust.__version__ is ''), and a 2.12 master turns away every worker whose
# ready message carries none ("An old (pre 2.0) worker tried to connect"), so the
# distributed mode cannot start at all. Master and workers import the locustfile before
# their runners start; it gives both the package's version, which is all the check reads.
VERSION_FIX = '''

# {NAME}: Debian's python3-locust has an empty locust.__version__, and the master
# refuses workers that report none; both sides get the package's version.
import locust.runners as _runners  # noqa: E402
if not _runners.__version__:
    _runners.__version__ = {version!r}
'''


def available() -> bool:
    return single.available()


def version() -> str:
    return single.version()


def command(spec: RunSpec, workdir: str) -> list:
    if spec.connections < WORKERS:
        raise ValueError(f"{NAME} needs at least {WORKERS} users, one per worker")
    argv = single.command(spec, workdir)      # writes the locustfile; the standalone command
    locustfile = argv[argv.index("-f") + 1]
    with open(locustfile, "a") as f:
        f.write(VERSION_FIX.format(NAME=NAME, version=(version() or "2").split("-")[0]))
    port = free_port()
    u = urlsplit(spec.url)
    master = argv + ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port",
                     str(port), "--expect-workers", str(WORKERS)]
    worker = ["locust", "-f", locustfile, "--worker", "--master-host", "127.0.0.1",
              "--master-port", str(port), "--host", f"{u.scheme}://{u.netloc}",
              "--loglevel", "WARNING"]
    runner = os.path.join(workdir, RUNNER)
    with open(runner, "w") as f:
        f.write(RUNNER_SOURCE.format(master=master, worker=worker, workers=WORKERS))
    return [sys.executable, runner]


def parse(stdout: str, stderr: str, workdir: str, spec: RunSpec) -> ToolResult:
    result = single.parse(stdout, stderr, workdir, spec)
    result.tool = NAME
    result.notes.append(f"locust's distributed mode: a master and {WORKERS} workers; the "
                        f"figures are the master's sum of the workers' reports")
    return result
