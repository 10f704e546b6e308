"""httperf's adapter against httperf's real summary (fixtures/tools/httperf/<case>/,
captured from runs against notesd): the figures below were read off those
files by hand."""
import json
import os
import tempfile
import unittest

from loadlib.tools import httperf
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "httperf", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return httperf.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json_four_connections_of_500_calls(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual(r.rps, 31697.2)
        self.assertEqual(r.duration_s, 0.063)
        self.assertEqual(r.latency.mean, 0.1)  # response 0.1 + transfer 0.0
        self.assertIsNone(r.latency.p50)
        self.assertIsNone(r.latency.max)

    def test_delay_mean_is_response_plus_transfer(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 400)
        self.assertEqual(r.latency.mean, 51.4)
        self.assertEqual(r.duration_s, 2.131)

    def test_refused_connections(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 2)  # one per connection, not per call
        self.assertEqual(r.errors.total(), 2)
        self.assertIsNone(r.latency.mean)

    def test_404_counts_as_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertEqual(r.latency.mean, 0.3)


class Command(unittest.TestCase):
    URL = "http://127.0.0.1:8080/delay/50?jitter=10"

    def test_closed_keepalive_opens_every_connection_at_once(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = httperf.command(RunSpec(url=self.URL, connections=10, requests=401), wd)
        self.assertEqual(argv[argv.index("--uri") + 1], "/delay/50?jitter=10")
        self.assertEqual(argv[argv.index("--port") + 1], "8080")
        self.assertEqual(argv[argv.index("--num-conns") + 1], "10")
        self.assertEqual(argv[argv.index("--num-calls") + 1], "41")
        self.assertEqual(argv[argv.index("--rate") + 1], "1000")

    def test_rate_is_one_request_per_connection(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = httperf.command(RunSpec(url=self.URL, rate=200, duration_s=3), wd)
        self.assertEqual(argv[argv.index("--rate") + 1], "200")
        self.assertEqual(argv[argv.index("--num-conns") + 1], "600")
        self.assertEqual(argv[argv.index("--num-calls") + 1], "1")

    def test_duration_alone_is_refused(self):
        with tempfile.TemporaryDirectory() as wd:
            with self.assertRaises(ValueError):
                httperf.command(RunSpec(url=self.URL, duration_s=3), wd)


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(httperf.NAME, "httperf")
        self.assertTrue(httperf.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(httperf, name)), name)

    def test_version_of_the_installed_tool(self):
        if not httperf.available():
            self.skipTest(f"httperf not installed: {httperf.INSTALL_HINT}")
        self.assertRegex(httperf.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
