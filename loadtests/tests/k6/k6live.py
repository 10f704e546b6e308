"""What the live k6 tests share: finding k6 (or skipping with exit 77 and the
reason), a notesd on a database of its own copied from the CTest PostgreSQL's
notes_template, one k6 run with the server's /metrics scraped on either side,
and loadtests/reconcile on the result.

    from tests.k6 import k6live
    k6 = k6live.require_k6("what this test runs")   # skips (exit 77) saying why without k6
    server = k6live.Server("k6_live")         # notesd on its own copy of the 200,000 rows
    run = k6live.run_script(k6, server, "notes.js", {"MODE": "read", "VUS": "10"}, workdir)
    run.reconcile()                           # loadtests/reconcile --tolerance 0
    server.stop()

The tests run under CTest (tests/CMakeLists.txt), which provides NOTESD_BIN,
NOTESD_PGSTATE (the shared PostgreSQL of pg_fixture.py) and K6 when CMake found
a k6; by hand, from loadtests/:

    NOTESD_BIN=../build/notesd NOTESD_PGSTATE=../build-test/pgstate.json K6=/path/to/k6 \\
      /usr/bin/python3 -B -m tests.k6.test_live

The notesd and the databases are the integration suite's (tests/integration/
notes_testlib.py), loaded from that file by integration_lib(): that tree is no
package, and this one adds nothing to sys.path.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from loadlib import prom
from loadlib.tools import k6 as k6tool
from tests import LOADTESTS, REPO

K6DIR = os.path.join(LOADTESTS, "k6")
INTEGRATION_LIB = os.path.join(REPO, "tests", "integration", "notes_testlib.py")

SKIP = 77
# k6's exit status when a threshold failed (its ThresholdsHaveFailed error code)
THRESHOLDS_FAILED = 99
RUN_TIMEOUT_S = 120


def skip(why):
    """Ends a test module that cannot run here, saying why: exit 77 (CTest's skip) when
    it runs as the program, unittest.SkipTest when `python3 -m unittest` imports it."""
    print(f"SKIP {why}", flush=True)
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    if main is not None and main.name == "unittest.__main__":
        raise unittest.SkipTest(why)
    sys.exit(SKIP)


def require_k6(skipped):
    """The k6 binary (K6, else PATH), or skip() saying why and what the test skips
    (`skipped`: what it would have run)."""
    path = k6tool.path()
    if path is None:
        skip(f"{os.path.basename(sys.argv[0])}, {skipped}: {k6tool.missing()}")
    print(f"k6 {k6tool.version(path) or '?'} at {path}", flush=True)
    return path


def integration_lib():
    """The integration suite's notes_testlib, loaded once from its file."""
    lib = sys.modules.get("notes_testlib")
    if lib is None:
        spec = importlib.util.spec_from_file_location("notes_testlib", INTEGRATION_LIB)
        lib = importlib.util.module_from_spec(spec)
        sys.modules["notes_testlib"] = lib
        spec.loader.exec_module(lib)
    return lib


def require_notesd_and_postgres():
    lib = integration_lib()
    if not os.access(lib.BIN, os.X_OK):
        skip(f"no notesd binary at {lib.BIN} (server/build.sh builds it)")
    if not os.environ.get("NOTESD_PGSTATE"):
        skip("NOTESD_PGSTATE is unset: run under CTest (the postgres fixture), or point it at "
             "pg_fixture.py's state file")
    return lib


class Server:
    """notesd on free loopback ports against a fresh copy of notes_template, with
    /static served from loadtests/static and the /primes limit of the peer."""

    def __init__(self, dbname, args=()):
        lib = require_notesd_and_postgres()
        self.db_url = lib.create_database(dbname)
        self.dbname = dbname
        self.notesd = lib.Notesd(self.db_url, args=args, env={
            "STATIC_DIR": os.path.join(LOADTESTS, "static"), "PRIMES_MAX": "10000000",
            "SERVER_TIMING": "0"})
        self.port = self.notesd.port
        self.metrics_port = self.notesd.metrics_port
        self.base_url = f"http://127.0.0.1:{self.port}"

    def scrape(self):
        return self.notesd.metrics()

    def requests_total(self, text=None):
        """notesd's http_requests_total over every route and status."""
        samples = prom.parse_metrics(text if text is not None else self.scrape())
        return int(sum(v for n, _, v in samples if n == "http_requests_total"))

    def warm(self, connections=40):
        """GET /notes/:id on `connections` connections at once, so notesd's database pool
        has opened its connections before a run that is timed from its first request."""
        import threading
        import urllib.request
        errors = []

        def one(i):
            try:
                urllib.request.urlopen(f"{self.base_url}/notes/{i + 1}", timeout=30).read()
            except OSError as e:
                errors.append(e)
        threads = [threading.Thread(target=one, args=(i,)) for i in range(connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise AssertionError(f"warming notesd: {errors[0]}")

    def settle(self, quiet_s=0.5, limit_s=30):
        """Waits until http_requests_total stops moving for quiet_s: requests a client
        gave up on are still answered (or counted as left) after the client exits, and
        must not land in the next run's scrapes."""
        deadline = time.monotonic() + limit_s
        last = self.requests_total()
        while time.monotonic() < deadline:
            time.sleep(quiet_s)
            now = self.requests_total()
            if now == last:
                return now
            last = now
        raise AssertionError(f"notesd kept counting requests for {limit_s} s after the run")

    def stop(self):
        code = self.notesd.stop()
        if code != 0:
            raise AssertionError(f"notesd exited with {code}: {self.notesd.output[-2000:]}")


class Run:
    """One k6 run: its exit status, output, summary data and the two scrapes."""

    def __init__(self, name, workdir):
        self.name = name
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.summary_path = os.path.join(self.dir, "summary.json")
        self.before = os.path.join(self.dir, "before.prom")
        self.after = os.path.join(self.dir, "after.prom")
        self.rc = None
        self.stdout = self.stderr = ""
        self.seconds = 0.0

    @property
    def summary(self):
        with open(self.summary_path) as f:
            return json.load(f)

    def metric(self, name, key, default=None):
        return (self.summary["metrics"].get(name) or {}).get("values", {}).get(key, default)

    def output(self):
        return f"\n--- k6 exit {self.rc}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n" \
               f"{self.stderr[-3000:]}"

    def reconcile(self, tolerance=0):
        """loadtests/reconcile on this run: (exit status, its JSON, its text)."""
        out = os.path.join(self.dir, "reconcile.json")
        res = subprocess.run([sys.executable, os.path.join(LOADTESTS, "reconcile"), "--tool", "k6",
                              "--summary", self.summary_path, "--before", self.before,
                              "--after", self.after, "--tolerance", str(tolerance),
                              "--json", out], capture_output=True, text=True, timeout=60)
        data = None
        if os.path.exists(out):
            with open(out) as f:
                data = json.load(f)
        return res.returncode, data, res.stdout + res.stderr


def k6_env(extra=None):
    """The environment of a k6 run: ours without stray k6 settings, no usage report."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("K6_")}
    env["K6_NO_USAGE_REPORT"] = "true"
    env.update(extra or {})
    return env


def run_script(k6, server, script, variables, workdir, name=None, args=(), env=None):
    """k6 run of loadtests/k6/<script> against `server` with -e variables (BASE_URL and
    SUMMARY added), the server's /metrics scraped just before and after."""
    run = Run(name or re.sub(r"\W+", "-", f"{script}-{'-'.join(variables.values())}"), workdir)
    argv = [k6, "run", "--quiet", *args, "-e", f"BASE_URL={server.base_url}",
            "-e", f"SUMMARY={run.summary_path}"]
    for k, v in variables.items():
        argv += ["-e", f"{k}={v}"]
    argv.append(os.path.join(K6DIR, script))
    with open(run.before, "w") as f:
        f.write(server.scrape())
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                       env=k6_env(env), stdin=subprocess.DEVNULL, cwd=run.dir)
    run.seconds = time.monotonic() - t0
    with open(run.after, "w") as f:
        f.write(server.scrape())
    run.rc, run.stdout, run.stderr = p.returncode, p.stdout, p.stderr
    return run


class ScriptRuns(unittest.TestCase):
    """A test class of k6 script runs: one notesd for the class (on the database SUITE), a
    scratch directory, each run checked for its exit status and reconciled on its own."""
    SUITE = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix=f"{cls.SUITE}-")
        cls.server = Server(cls.SUITE)
        cls.t0 = time.monotonic()

    @classmethod
    def tearDownClass(cls):
        print(f"  figure: the script runs took {time.monotonic() - cls.t0:.1f} s", flush=True)
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_script(self, k6, script, variables, name=None, want_rc=0):
        run = run_script(k6, self.server, script, variables, self.tmp, name=name)
        self.assertEqual(run.rc, want_rc, run.output())
        return run

    def assert_reconciled(self, run, at_least=1):
        """loadtests/reconcile --tolerance 0 agrees, with at least `at_least` requests;
        its figures."""
        rc, data, text = run.reconcile(tolerance=0)
        self.assertEqual(rc, 0, text + run.output())
        self.assertTrue(data["ok"], text)
        self.assertEqual(data["difference"], 0, text)
        self.assertGreaterEqual(data["client"]["total"], at_least, text)
        self.assertEqual(data["client"]["total"], int(run.metric("http_reqs", "count")))
        print(f"  {run.name}: {data['client']['total']} requests in {run.seconds:.1f} s, "
              f"server {data['server']['total']}: reconciled", flush=True)
        return data

