"""autocannon's adapter against autocannon's real --json output
(fixtures/tools/autocannon/<case>/, captured from runs against notesd): the figures
below were read off those files by hand."""
import json
import os
import tempfile
import unittest

from loadlib.tools import autocannon
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "autocannon", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return autocannon.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json_whole_ms_percentiles(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual((r.latency.mean, r.latency.p50, r.latency.p90, r.latency.p99,
                          r.latency.max), (0.22, 0.0, 0.0, 3.0, 35.0))
        self.assertEqual(r.duration_s, 1.01)
        self.assertAlmostEqual(r.rps, 2000 / 1.01)

    def test_delay_sent_more_than_answered(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 387)  # requests.total; 397 were sent
        self.assertEqual((r.latency.mean, r.latency.p50, r.latency.p90, r.latency.p99,
                          r.latency.max), (50.8, 51.0, 59.0, 62.0, 69.0))

    def test_refused_errors_are_connect_by_their_debug_code(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 50)
        self.assertEqual(r.errors.total(), 50)
        self.assertIsNone(r.latency.mean)

    def test_404_counts_as_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertEqual(r.errors.total(), 200)


class Command(unittest.TestCase):
    def test_pinned_binary_and_rate(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = autocannon.command(RunSpec(url="http://127.0.0.1:8080/json", connections=5,
                                              duration_s=2.5, rate=300, timeout_s=2), wd)
        self.assertTrue(argv[0].endswith("autocannon"))
        self.assertIn("--json", argv)
        self.assertIn("--debug", argv)
        self.assertEqual(argv[argv.index("-d") + 1], "3")
        self.assertEqual(argv[argv.index("-R") + 1], "300")
        self.assertEqual(argv[argv.index("-t") + 1], "2")

    def test_count_run(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = autocannon.command(RunSpec(url="http://127.0.0.1:8080/json", requests=77), wd)
        self.assertEqual(argv[argv.index("-a") + 1], "77")
        self.assertNotIn("-d", argv)


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(autocannon.NAME, "autocannon")
        self.assertTrue(autocannon.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(autocannon, name)), name)

    def test_version_of_the_installed_tool(self):
        if not autocannon.available():
            self.skipTest(f"autocannon not installed: {autocannon.INSTALL_HINT}")
        self.assertRegex(autocannon.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
