"""Locust's distributed mode (a master and two workers) against real runs
(fixtures/tools/locust-distributed/<case>/, captured against notesd with
`smoke_live.py --capture locust-distributed`): the figures below were read off the
master's final CSV by hand and agree with the summary it printed on stderr. Then
the runner script and the locustfile the adapter writes, and the fix that lets
Debian's locust start its workers at all."""
import json
import os
import tempfile
import unittest

from loadlib.tools import locust, locust_distributed as ld
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES

FIXTURES = os.path.join(TOOL_FIXTURES, "locust-distributed")


def parse_fixture(case):
    d = os.path.join(FIXTURES, case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return ld.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json(self):
        r = parse_fixture("json")
        self.assertEqual(r.tool, "locust-distributed")
        self.assertEqual(r.requests, 13903)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max),
                         (0.0, 0.0, 4.0, 46.0))
        with open(os.path.join(FIXTURES, "json", "stderr.txt")) as f:
            self.assertRegex(f.read(), r"Aggregated\s+0 .* 13903\n")

    def test_delay(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 354)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max),
                         (51.0, 60.0, 69.0, 75.0))

    def test_refused_and_notfound(self):
        r = parse_fixture("refused")
        self.assertEqual((r.requests, r.errors.connect, r.errors.total()), (0, 5026, 5026))
        r = parse_fixture("notfound")
        self.assertEqual((r.requests, r.errors.non2xx, r.errors.total()), (1426, 1426, 1426))

    def test_the_master_wrote_the_final_csv(self):
        # the workers' quit hooks must not overwrite the master's sums with their own
        for case in ("json", "delay", "refused", "notfound"):
            with open(os.path.join(FIXTURES, case, "locustfile.py")) as f:
                self.assertIn("isinstance(_env[0].runner, WorkerRunner)", f.read())


class Command(unittest.TestCase):
    def test_runner_master_and_workers(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = ld.command(RunSpec(url="http://127.0.0.1:8080/json", connections=10,
                                      duration_s=3, rate=100), wd)
            self.assertEqual(argv[1], os.path.join(wd, ld.RUNNER))
            with open(argv[1]) as f:
                runner = f.read()
            with open(os.path.join(wd, locust.LOCUSTFILE)) as f:
                locustfile = f.read()
        compile(runner, ld.RUNNER, "exec")
        compile(locustfile, locust.LOCUSTFILE, "exec")
        self.assertIn("'--master', '--master-bind-host', '127.0.0.1'", runner)
        self.assertIn("'--expect-workers', '2'", runner)
        self.assertIn("'--worker', '--master-host', '127.0.0.1'", runner)
        self.assertIn("range(2)", runner)
        self.assertIn("signal.SIGTERM", runner)
        self.assertIn("constant_throughput(10.0)", locustfile)   # 100/s over 10 users
        self.assertIn("_runners.__version__ =", locustfile)

    def test_fewer_users_than_workers_is_refused(self):
        with tempfile.TemporaryDirectory() as wd:
            with self.assertRaises(ValueError):
                ld.command(RunSpec(url="http://127.0.0.1:8080/json", connections=1), wd)

    @unittest.skipUnless(locust.available(), f"locust not installed: {locust.INSTALL_HINT}")
    def test_debian_locust_has_no_version_which_the_fix_supplies(self):
        import subprocess
        code = ("import locust.runners as r; print(repr(r.__version__))")
        out = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True,
                             text=True).stdout.strip()
        if out != "''":
            self.skipTest(f"this locust knows its version ({out}): the fix does nothing")
        with tempfile.TemporaryDirectory() as wd:
            ld.command(RunSpec(url="http://127.0.0.1:8080/json", connections=4), wd)
            fixed = subprocess.run(["/usr/bin/python3", "-c",
                                    "import runpy, locust.runners as r; "
                                    f"runpy.run_path({os.path.join(wd, locust.LOCUSTFILE)!r}); "
                                    "print(r.__version__)"],
                                   capture_output=True, text=True)
        self.assertEqual(fixed.stdout.strip(), locust.version().split("-")[0], fixed.stderr)


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(ld.NAME, "locust-distributed")
        self.assertEqual(ld.INSTALL_HINT, locust.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(ld, name)), name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
