"""h2load's adapter against h2load's real output (fixtures/tools/h2load/<case>/,
captured from runs against notesd): the figures below were read off those
files by hand (percentiles: nearest rank over the --log-file's third column)."""
import json
import os
import tempfile
import unittest

from loadlib.tools import h2load
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "h2load", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return h2load.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json_microsecond_units(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        self.assertAlmostEqual(r.rps, 52072.48)
        self.assertAlmostEqual(r.duration_s, 0.03841)
        self.assertAlmostEqual(r.latency.mean, 0.074)  # "74us"
        self.assertAlmostEqual(r.latency.max, 0.223)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99), (0.069, 0.103, 0.131))

    def test_delay_duration_run_with_requests_in_flight(self):
        r = parse_fixture("delay")
        # 405 started, 395 done: ten requests were in flight at the end
        self.assertEqual(r.requests, 395)
        self.assertEqual(r.errors.total(), 0)
        self.assertAlmostEqual(r.duration_s, 2.01)
        self.assertAlmostEqual(r.latency.mean, 50.08)  # "50.08ms"
        self.assertAlmostEqual(r.latency.max, 61.22)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99), (49.801, 57.95, 60.0))

    def test_refused_requests_never_started_are_connect_errors(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 50)
        self.assertEqual(r.errors.total(), 50)
        self.assertIsNone(r.latency.mean)

    def test_404_counts_as_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertEqual(r.errors.connect + r.errors.reset, 0)


class Command(unittest.TestCase):
    def test_http1_duration_run(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = h2load.command(RunSpec(url="http://127.0.0.1:8080/json", connections=16,
                                          duration_s=3, threads=2), wd)
            self.assertIn(f"--log-file={wd}/{h2load.LOG_FILE}", argv)
        self.assertIn("--h1", argv)
        self.assertEqual(argv[argv.index("-D") + 1], "3s")
        self.assertEqual(argv[argv.index("-c") + 1], "16")
        self.assertEqual(argv[argv.index("-t") + 1], "2")

    def test_http2_drops_h1(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = h2load.command(RunSpec(url="https://127.0.0.1:8443/json", http2=True,
                                          requests=100), wd)
        self.assertNotIn("--h1", argv)
        self.assertEqual(argv[argv.index("-n") + 1], "100")


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(h2load.NAME, "h2load")
        self.assertTrue(h2load.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(h2load, name)), name)

    def test_version_of_the_installed_tool(self):
        if not h2load.available():
            self.skipTest(f"h2load not installed: {h2load.INSTALL_HINT}")
        self.assertRegex(h2load.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
