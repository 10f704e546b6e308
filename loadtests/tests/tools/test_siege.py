"""siege's adapter against siege's real --json-output (fixtures/tools/siege/<case>/,
captured from runs against notesd): the figures below were read off those
files by hand."""
import json
import os
import tempfile
import unittest

from loadlib.tools import siege
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "siege", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return siege.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json_seconds_with_two_decimals(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual(r.rps, 8000.0)
        self.assertEqual(r.duration_s, 0.25)
        self.assertEqual(r.latency.mean, 0.0)  # 0.00 s: below siege's 10 ms resolution
        self.assertAlmostEqual(r.latency.max, 10.0)
        self.assertIsNone(r.latency.p50)
        self.assertIsNone(r.latency.p99)

    def test_delay_ends_early(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 217)
        self.assertAlmostEqual(r.latency.mean, 50.0)
        self.assertAlmostEqual(r.latency.max, 70.0)
        self.assertEqual(r.duration_s, 1.15)  # asked for -t 2S

    def test_refused_failures_from_stderr(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 50)
        self.assertEqual(r.errors.total(), 50)
        self.assertIsNone(r.latency.mean)

    def test_404_is_not_successful(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertEqual(r.errors.connect + r.errors.other, 0)


class Command(unittest.TestCase):
    def test_rc_file_sets_keepalive_and_quiet_json(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = siege.command(RunSpec(url="http://127.0.0.1:8080/json", connections=3,
                                         requests=10, timeout_s=4), wd)
            with open(os.path.join(wd, siege.RC_FILE)) as f:
                rc = f.read()
            self.assertEqual(argv[:3], ["env", f"HOME={wd}", "siege"])
        self.assertIn("connection = keep-alive\n", rc)
        self.assertIn("json_output = true\n", rc)
        self.assertIn("logging = false\n", rc)
        self.assertIn("timeout = 4\n", rc)
        self.assertEqual(argv[argv.index("-r") + 1], "4")  # 10 requests / 3 users, rounded up

    def test_close_is_siege_default_and_kept_when_asked(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = siege.command(RunSpec(url="http://127.0.0.1:8080/json", duration_s=2,
                                         keepalive=False), wd)
            with open(os.path.join(wd, siege.RC_FILE)) as f:
                self.assertIn("connection = close\n", f.read())
        self.assertEqual(argv[argv.index("-t") + 1], "2S")


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(siege.NAME, "siege")
        self.assertTrue(siege.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(siege, name)), name)

    def test_version_of_the_installed_tool(self):
        if not siege.available():
            self.skipTest(f"siege not installed: {siege.INSTALL_HINT}")
        self.assertRegex(siege.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
