"""ab's adapter against ab's real output (fixtures/tools/ab/<case>/, captured from
runs against notesd): the figures below were read off those files by hand."""
import json
import os
import tempfile
import unittest

from loadlib.tools import ab
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "ab", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return ab.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json_keepalive_run(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)  # the 1528 'Length' failures are not errors
        self.assertTrue(any("1528 'Length' failures" in n for n in r.notes), r.notes)
        self.assertAlmostEqual(r.rps, 43012.60)
        self.assertAlmostEqual(r.duration_s, 0.046)
        # -e CSV rows 50, 90, 99, 100; the mean is the table's whole-ms Total mean
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max),
                         (0.063, 0.098, 1.019, 5.341))
        self.assertEqual(r.latency.mean, 0.0)

    def test_delay_percentiles_are_fractional_ms(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 382)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual((r.latency.mean, r.latency.p50, r.latency.p90, r.latency.p99,
                          r.latency.max), (51.0, 50.792, 58.63, 60.13, 64.536))
        self.assertAlmostEqual(r.duration_s, 2.002)

    def test_refused_port_is_one_connect_error(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 1)
        self.assertEqual(r.errors.total(), 1)
        self.assertIsNone(r.latency.p50)

    def test_404_counts_as_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertEqual(r.errors.total(), 200)
        self.assertEqual(r.latency.max, 0.302)


class Command(unittest.TestCase):
    def test_keepalive_count_run(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = ab.command(RunSpec(url="http://127.0.0.1:8080/json", connections=8,
                                      requests=1000, timeout_s=3), wd)
        self.assertEqual(argv[0], "ab")
        self.assertIn("-k", argv)
        self.assertEqual(argv[argv.index("-n") + 1], "1000")
        self.assertEqual(argv[argv.index("-c") + 1], "8")
        self.assertEqual(argv[argv.index("-s") + 1], "3")
        self.assertEqual(argv[-1], "http://127.0.0.1:8080/json")

    def test_duration_run_without_keepalive(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = ab.command(RunSpec(url="http://127.0.0.1:8080", duration_s=5,
                                      keepalive=False), wd)
        self.assertNotIn("-k", argv)
        self.assertEqual(argv[argv.index("-t") + 1], "5")
        self.assertGreaterEqual(int(argv[argv.index("-n") + 1]), 50000)
        self.assertEqual(argv[-1], "http://127.0.0.1:8080/")  # ab needs a path


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(ab.NAME, "ab")
        self.assertTrue(ab.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(ab, name)), name)

    def test_version_of_the_installed_tool(self):
        if not ab.available():
            self.skipTest(f"ab not installed: {ab.INSTALL_HINT}")
        self.assertRegex(ab.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
