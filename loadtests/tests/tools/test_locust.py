"""locust's adapter against real headless runs (fixtures/tools/locust/<case>/,
captured against notesd): the figures below were read off the final CSV files
by hand, and agree with the summary locust printed on stderr."""
import csv
import json
import os
import tempfile
import unittest

from loadlib.tools import locust
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES

FIXTURES = os.path.join(TOOL_FIXTURES, "locust")


def parse_fixture(case):
    d = os.path.join(FIXTURES, case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return locust.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 3198)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max),
                         (0.0, 1.0, 3.0, 25.0))
        self.assertAlmostEqual(r.latency.mean, 0.1985616010006254)
        self.assertAlmostEqual(r.rps, 2267.141535013513)
        self.assertEqual(r.duration_s, 2.0)

    def test_periodic_csv_misses_the_end_of_the_run(self):
        # why the locustfile writes its own final CSV
        with open(os.path.join(FIXTURES, "json", "locust_stats.csv")) as f:
            agg = next(r for r in csv.DictReader(f) if r["Name"] == "Aggregated")
        self.assertLess(int(agg["Request Count"]), 3198)
        with open(os.path.join(FIXTURES, "json", "stderr.txt")) as f:
            self.assertRegex(f.read(), r"Aggregated\s+3198 ")

    def test_delay(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 277)
        self.assertEqual((r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max),
                         (52.0, 60.0, 70.0, 78.0))

    def test_refused_are_connect_errors_not_requests(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 2012)
        self.assertEqual(r.errors.total(), 2012)
        self.assertIsNone(r.latency.mean)

    def test_404_bad_status_is_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 1436)
        self.assertEqual(r.errors.non2xx, 1436)
        self.assertEqual(r.errors.total(), 1436)


class Command(unittest.TestCase):
    def test_locustfile_and_flags(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = locust.command(RunSpec(url="http://127.0.0.1:8080/delay/5?jitter=1",
                                          connections=8, duration_s=3, rate=80,
                                          keepalive=False), wd)
            with open(os.path.join(wd, locust.LOCUSTFILE)) as f:
                source = f.read()
        compile(source, locust.LOCUSTFILE, "exec")
        self.assertIn("'/delay/5?jitter=1'", source)
        self.assertIn("constant_throughput(10.0)", source)
        self.assertIn("'Connection': 'close'", source)
        self.assertEqual(argv[argv.index("-u") + 1], "8")
        self.assertEqual(argv[argv.index("-t") + 1], "3s")
        self.assertEqual(argv[argv.index("--host") + 1], "http://127.0.0.1:8080")
        self.assertIn("--headless", argv)


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(locust.NAME, "locust")
        self.assertTrue(locust.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(locust, name)), name)

    def test_version_of_the_installed_tool(self):
        if not locust.available():
            self.skipTest(f"locust not installed: {locust.INSTALL_HINT}")
        self.assertRegex(locust.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
