"""loadtest's adapter against the result objects of real runs
(fixtures/tools/loadtest/<case>/, captured against notesd): percentiles worked out by
hand from each fixture's histogramMs (nearest rank)."""
import json
import os
import tempfile
import unittest

from loadlib.tools import loadtest
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "loadtest", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return loadtest.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json_percentiles_from_the_histogram(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        # 1511 requests in the 0 ms bucket; rank 1800 falls in 3 ms, rank 1980 in 13 ms.
        # (loadtest's own percentiles say p50 = 1: a 0 is falsy to it and overwritten.)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99), (0.0, 3.0, 13.0))
        self.assertEqual(r.latency.mean, 1850 / 2000)
        self.assertEqual(r.latency.max, 47.0)
        self.assertEqual(r.duration_s, 0.734)
        self.assertEqual(r.rps, 2725.0)

    def test_delay(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 369)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max),
                         (52.0, 62.0, 87.0, 93.0))
        self.assertAlmostEqual(r.latency.mean, 19579 / 369)

    def test_refused_is_a_socket_error_of_unknown_kind(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.other, 50)
        self.assertEqual(r.errors.total(), 50)
        self.assertIsNone(r.latency.p50)

    def test_404_is_non2xx_with_the_status_callback(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertEqual(r.errors.other, 0)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max),
                         (0.0, 2.0, 8.0, 19.0))


class Command(unittest.TestCase):
    def test_runner_module_and_options(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = loadtest.command(RunSpec(url="http://127.0.0.1:8080/json", connections=6,
                                            duration_s=2, rate=500, timeout_s=1.5,
                                            keepalive=False), wd)
            with open(os.path.join(wd, loadtest.RUNNER)) as f:
                runner = f.read()
        self.assertEqual(argv[0], "node")
        self.assertIn("statusCallback", runner)
        self.assertIn("loadtest/index.js", runner)
        options = json.loads(argv[2])
        self.assertEqual(options["concurrency"], 6)
        self.assertEqual(options["maxSeconds"], 2)
        self.assertEqual(options["requestsPerSecond"], 500)
        self.assertEqual(options["timeout"], 1500)
        self.assertFalse(options["agentKeepAlive"])


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(loadtest.NAME, "loadtest")
        self.assertTrue(loadtest.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(loadtest, name)), name)

    def test_version_of_the_installed_tool(self):
        if not loadtest.available():
            self.skipTest(f"loadtest not installed: {loadtest.INSTALL_HINT}")
        self.assertRegex(loadtest.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
