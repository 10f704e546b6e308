"""hey's adapter against hey's real -o csv output (fixtures/tools/hey/<case>/,
captured from runs against notesd): the figures below were computed by hand
from the CSV rows (nearest rank over response-time)."""
import json
import os
import tempfile
import unittest

from loadlib.tools import hey
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "hey", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return hey.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json_rows(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        self.assertAlmostEqual(r.latency.p50, 0.2)
        self.assertAlmostEqual(r.latency.p90, 0.4)
        self.assertAlmostEqual(r.latency.p99, 0.9)
        self.assertAlmostEqual(r.latency.max, 1.6)
        self.assertAlmostEqual(r.latency.mean, 0.213, places=3)
        self.assertAlmostEqual(r.duration_s, 0.1086)  # end of the last response
        self.assertAlmostEqual(r.rps, 2000 / 0.1086, places=3)

    def test_delay_rows(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 398)
        self.assertAlmostEqual(r.latency.p50, 50.2)
        self.assertAlmostEqual(r.latency.p90, 58.5)
        self.assertAlmostEqual(r.latency.p99, 61.1)
        self.assertAlmostEqual(r.latency.max, 61.9)
        self.assertAlmostEqual(r.latency.mean, 50.537, places=3)
        self.assertAlmostEqual(r.duration_s, 2.0424)

    def test_refused_port_reads_as_nothing(self):
        # hey's CSV has no rows for failed requests: the documented blind spot
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.total(), 0)
        self.assertIsNone(r.latency.p50)
        self.assertTrue(any("no rows for failed requests" in n for n in r.notes))

    def test_404_counts_as_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertAlmostEqual(r.latency.max, 3.4)


class Command(unittest.TestCase):
    def test_rate_is_split_over_workers(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = hey.command(RunSpec(url="http://127.0.0.1:8080/json", connections=4,
                                       duration_s=2, rate=1000, keepalive=False), wd)
        self.assertEqual(argv[argv.index("-q") + 1], "250")
        self.assertEqual(argv[argv.index("-z") + 1], "2s")
        self.assertIn("-disable-keepalive", argv)
        self.assertEqual(argv[-3:], ["-o", "csv", "http://127.0.0.1:8080/json"])

    def test_count_run(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = hey.command(RunSpec(url="http://127.0.0.1:8080/json", connections=4,
                                       requests=100), wd)
        self.assertEqual(argv[argv.index("-n") + 1], "100")
        self.assertNotIn("-z", argv)
        self.assertNotIn("-disable-keepalive", argv)


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(hey.NAME, "hey")
        self.assertTrue(hey.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(hey, name)), name)

    def test_version_of_the_installed_tool(self):
        if not hey.available():
            self.skipTest(f"hey not installed: {hey.INSTALL_HINT}")
        self.assertRegex(hey.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
