"""Live smoke test of the load-tool adapters: `loadtests/calibrate --tools all
--smoke` in-process (the conformance matrix's own code: its notesd, its runs, its
counts verdict), then one test per tool asserting that its counts check passed:
about two seconds of GET /json at 4 connections, the tool's request count against
the delta of notesd's own http_requests_total, and that notesd's request journal holds
one record for each request its counter counted.

    cd loadtests && /usr/bin/python3 -B -m tests.tools.smoke_live        # the test
    cd loadtests && /usr/bin/python3 -B -m tests.tools.smoke_live --capture ab hey
                                # rewrite tests/fixtures/tools/<tool>/<case>/ from live runs

notesd runs without a database (DB_URL only has to parse for /json, /delay and
/status), on free loopback ports. NOTESD_BIN names the binary (default
build/notesd). A tool that is not installed is skipped, with its install hint.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from unittest import mock
from dataclasses import asdict, replace

from loadlib.commands.calibrate import calibrate_command as calibrate
from loadlib.commands.calibrate import matrix
from loadlib.commands.calibrate import verdicts as calibrate_verdicts
from loadlib.server import free_port
from loadlib.tools import (ab, artillery, autocannon, curl, h2load, hey, httperf, k6, loadtest,
                           locust, locust_distributed, siege, wrk)
from loadlib.tools.base import RunSpec
from tests import REPO
from tests.tools import TOOL_FIXTURES

ADAPTERS = [h2load, ab, hey, siege, httperf, locust, locust_distributed, autocannon, artillery,
            loadtest, k6, curl]
# the fixtures are captured for these; wrk's figures come from latency.lua's own line
SMOKED = ADAPTERS + [wrk]
RUN_TIMEOUT_S = 60
RETRY_SECONDS = 6      # a tool that counted nothing in its smoke run gets this long once more


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
    """One run of the matrix in smoke mode; each tool's test reads its row."""

    @classmethod
    def setUpClass(cls):
        binary = os.environ.get("NOTESD_BIN", os.path.join(REPO, "build", "notesd"))
        if not os.access(binary, os.X_OK):
            raise unittest.SkipTest(f"no notesd binary at {binary} (server/build.sh builds it)")
        cls.binary = binary
        cls.matrix = calibrate.run_matrix(["all"], binary, smoke=True)
        cls.rows = {row["tool"]: row for row in cls.matrix["tools"]}

    def check_tool(self, adapter):
        row = self.rows.get(adapter.NAME)
        self.assertIsNotNone(row, f"{adapter.NAME} is missing from the matrix")
        if not row["installed"]:
            self.assertIn(adapter.INSTALL_HINT, row["why"])
            self.skipTest(f"{adapter.NAME} {row['why']}")
        run = row["runs"]["counts"]
        if run["result"] and run["result"]["requests"] == 0 \
                and run["server"]["requests"] <= run["spec"]["connections"]:
            # A tool whose requests were still in flight when its 2 s were up (Locust's
            # Python and gevent on a loaded machine answered 4 of 4 connections' first
            # requests and counted none): one more run, alone and for RETRY_SECONDS; a
            # tool that counts nothing twice fails below.
            print(f"{adapter.NAME}: counted nothing in {matrix.SMOKE_SECONDS} s, the server "
                  f"{run['server']['requests']}; once more for {RETRY_SECONDS} s", file=sys.stderr)
            with mock.patch.object(matrix, "SMOKE_SECONDS", RETRY_SECONDS):
                row = calibrate.run_matrix([adapter.NAME], self.binary, smoke=True)["tools"][0]
        rec, run = row["checks"]["counts"], row["runs"]["counts"]
        res = run["result"]
        what = f"{adapter.NAME}: {rec['detail']} {rec['evidence']} ({run.get('failure') or ''})"
        if res:
            print(f"{adapter.NAME:10} tool {res['requests']:7d} server "
                  f"{run['server']['requests']:7d} journal "
                  f"{(run.get('journal') or {}).get('records', '-'):>7}  {res['rps']:9.1f} req/s  "
                  f"p50 {res['latency']['p50']}  errors {sum(res['errors'].values())}",
                  file=sys.stderr)
        self.assertIsNotNone(res, what)
        self.assertGreater(res["requests"], 0, what)
        self.assertEqual(sum(res["errors"].values()), 0, what)
        # the matrix's counts verdict: the server counted at least as many, and at most
        # the requests in flight (one per connection) more
        self.assertEqual(rec["verdict"], calibrate_verdicts.PASS, what)
        self.assertLessEqual(res["requests"], run["server"]["requests"], what)
        self.assertLessEqual(run["server"]["requests"] - res["requests"],
                             run["spec"]["connections"], what)
        # notesd's side: a journal record for every request its counter counted, none lost
        self.assertEqual(run["journal"], {"records": run["server"]["requests"], "lost": 0}, what)


for _adapter in SMOKED:
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
                if adapter in (httperf, curl) and not spec.requests:
                    spec = replace(spec, requests=400)  # tools that run a count
                with tempfile.TemporaryDirectory() as workdir:
                    argv, out, err, rc = run(adapter, spec, workdir)
                    dest = os.path.join(TOOL_FIXTURES, adapter.NAME, case)
                    shutil.rmtree(dest, ignore_errors=True)
                    shutil.copytree(workdir, dest, ignore=shutil.ignore_patterns(".siege", curl.CONFIG))
                with open(os.path.join(dest, "stdout.txt"), "w") as f:
                    f.write(out)
                with open(os.path.join(dest, "stderr.txt"), "w") as f:
                    f.write(err)
                argv = [a.replace(workdir, "$WORKDIR") for a in argv]
                if os.path.isabs(argv[0]):      # the tool's name, not where it sat here
                    argv[0] = os.path.basename(argv[0])
                with open(os.path.join(dest, "run.json"), "w") as f:
                    json.dump({"spec": asdict(spec), "argv": argv,
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
