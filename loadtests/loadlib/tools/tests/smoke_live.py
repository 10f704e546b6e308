#!/usr/bin/python3
"""Live smoke test of the load-tool adapters: every installed tool, about two
seconds against a notesd this file starts, its request count against the
delta of notesd's own http_requests_total{path="/json"}.

    /usr/bin/python3 loadtests/loadlib/tools/tests/smoke_live.py          # the test
    /usr/bin/python3 loadtests/loadlib/tools/tests/smoke_live.py --capture ab hey
                                            # rewrite fixtures/<tool>/<case>/ from live runs

notesd runs without a database (DB_URL only has to parse for /json, /delay and
/status), on free loopback ports. NOTESD_BIN names the binary (default
build/notesd). A tool that is not installed is skipped, with its install hint.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from dataclasses import asdict, replace

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "loadtests"))

from loadlib.tools import (ab, artillery, autocannon, h2load, hey, httperf,  # noqa: E402
                           k6, loadtest, locust, siege)
from loadlib.tools.base import RunSpec  # noqa: E402

ADAPTERS = [h2load, ab, hey, siege, httperf, locust, autocannon, artillery, loadtest, k6]
FIXTURES = os.path.join(HERE, "..", "fixtures")
RUN_TIMEOUT_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Notesd:
    """A notesd without a database on free loopback ports; stop() ends it."""

    def __init__(self):
        binary = os.environ.get("NOTESD_BIN", os.path.join(REPO, "build", "notesd"))
        if not os.access(binary, os.X_OK):
            raise unittest.SkipTest(f"no notesd binary at {binary} (server/build.sh builds it)")
        # Ports the kernel picks, read back from notesd's start-up line: nothing
        # else can take them between a probe and the bind.
        env = dict(os.environ, DB_URL="postgresql://x@127.0.0.1:1/x", LOG_LEVEL="warn")
        self.proc = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", "0", "--metrics-host", "127.0.0.1",
             "--metrics-port", "auto"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.port = self.metrics_port = None
        deadline = time.monotonic() + 10
        while self.port is None:
            line = self.proc.stdout.readline()  # the line comes first, or notesd exits
            m = re.search(r"listening on http://\S+:(\d+), metrics on http://\S+:(\d+)/", line)
            if m:
                self.port, self.metrics_port = int(m.group(1)), int(m.group(2))
            elif not line or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"notesd did not start: {line}")
        # Nothing reads the rest of its output; let it go nowhere instead of filling the pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        while True:
            try:
                urllib.request.urlopen(self.url("/status"), timeout=1).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("notesd did not start")
                time.sleep(0.05)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def requests_on(self, path):
        """Sum of http_requests_total over every method and status for one path."""
        text = urllib.request.urlopen(
            f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()
        total = 0
        for m in re.finditer(r'^http_requests_total\{([^}]*)\} (\d+)', text, re.M):
            if f'path="{path}"' in m.group(1):
                total += int(m.group(2))
        return total

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run(adapter, spec, workdir):
    """Runs the adapter's command in workdir; returns (argv, stdout, stderr, returncode)."""
    argv = adapter.command(spec, workdir)
    p = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                       stdin=subprocess.DEVNULL)
    return argv, p.stdout, p.stderr, p.returncode


# ------------------------------------------------------------ the live test

class SmokeLive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.notesd = Notesd()

    @classmethod
    def tearDownClass(cls):
        cls.notesd.stop()

    def check_tool(self, adapter):
        if not adapter.available():
            self.skipTest(f"{adapter.NAME} not installed: {adapter.INSTALL_HINT}")
        spec = RunSpec(url=self.notesd.url("/json"), connections=4, duration_s=2, timeout_s=5)
        if adapter is httperf:
            spec = replace(spec, requests=4000)  # httperf runs a count, not a duration
        with tempfile.TemporaryDirectory(prefix=f"smoke-{adapter.NAME}-") as workdir:
            before = self.notesd.requests_on("/json")
            argv, out, err, rc = run(adapter, spec, workdir)
            # the server counts a request when it is disposed of: let the last ones land
            time.sleep(0.2)
            delta = self.notesd.requests_on("/json") - before
            result = adapter.parse(out, err, workdir, spec)
        what = f"{adapter.NAME}: {' '.join(argv)}\nrc={rc} stderr tail: {err[-500:]}"
        print(f"{adapter.NAME:10} tool {result.requests:7d} server {delta:7d}  "
              f"{result.rps:9.1f} req/s  p50 {result.latency.p50}  errors {result.errors.total()}",
              file=sys.stderr)
        self.assertGreater(result.requests, 0, what)
        self.assertEqual(result.errors.total(), 0, what)
        # requests in flight when the tool stopped reached the server but not
        # the tool's count: at most one per connection (a few more for tools
        # whose virtual users keep a spare connection)
        slack = 2 * spec.connections
        self.assertLessEqual(result.requests, delta, what)
        self.assertLessEqual(delta - result.requests, slack, what)


for _adapter in ADAPTERS:
    setattr(SmokeLive, f"test_{_adapter.NAME}",
            lambda self, a=_adapter: self.check_tool(a))


# ------------------------------------------------------------ capturing fixtures

def cases(notesd):
    """The fixture cases: name -> RunSpec (tools that run counts get `requests`)."""
    closed_port = free_port()
    return {
        "json": RunSpec(url=notesd.url("/json"), connections=4, duration_s=2, requests=2000,
                        timeout_s=5),
        "delay": RunSpec(url=notesd.url("/delay/50?jitter=10"), connections=10, duration_s=2,
                         timeout_s=5),
        "refused": RunSpec(url=f"http://127.0.0.1:{closed_port}/json", connections=2,
                           duration_s=1, requests=50, timeout_s=2),
        "notfound": RunSpec(url=notesd.url("/nope"), connections=2, duration_s=1, requests=200,
                            timeout_s=5),
    }


def capture(names):
    notesd = Notesd()
    try:
        for adapter in ADAPTERS:
            if adapter.NAME not in names:
                continue
            for case, spec in cases(notesd).items():
                if adapter is httperf and not spec.requests:
                    spec = replace(spec, requests=400)
                with tempfile.TemporaryDirectory() as workdir:
                    argv, out, err, rc = run(adapter, spec, workdir)
                    dest = os.path.join(FIXTURES, adapter.NAME, case)
                    shutil.rmtree(dest, ignore_errors=True)
                    shutil.copytree(workdir, dest, ignore=shutil.ignore_patterns(".siege"))
                with open(os.path.join(dest, "stdout.txt"), "w") as f:
                    f.write(out)
                with open(os.path.join(dest, "stderr.txt"), "w") as f:
                    f.write(err)
                with open(os.path.join(dest, "run.json"), "w") as f:
                    json.dump({"spec": asdict(spec), "argv": [a.replace(workdir, "$WORKDIR")
                                                              for a in argv],
                               "returncode": rc, "version": adapter.version()}, f, indent=1)
                    f.write("\n")
                print(f"{adapter.NAME}/{case}: rc={rc}", file=sys.stderr)
    finally:
        notesd.stop()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--capture":
        capture(set(sys.argv[2:]))
    else:
        unittest.main(verbosity=2)
