"""Artillery's adapter against real --output reports (fixtures/tools/artillery/<case>/,
captured against notesd): the figures below were read off the reports' aggregate
by hand."""
import json
import os
import tempfile
import unittest

from loadlib.tools import artillery
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "artillery", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return artillery.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual((r.latency.mean, r.latency.p50, r.latency.p90, r.latency.p99,
                          r.latency.max), (1.9, 1, 5, 19.9, 37))
        self.assertEqual(r.rps, 1085.0)
        self.assertEqual(r.duration_s, 1.858)

    def test_delay(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 248)
        self.assertEqual((r.latency.mean, r.latency.p50, r.latency.p90, r.latency.p99,
                          r.latency.max), (54.7, 53, 63.4, 94.6, 101))

    def test_refused_fails_each_virtual_user_once(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 2)  # errors.ECONNREFUSED, one per VU
        self.assertEqual(r.errors.total(), 2)
        self.assertIsNone(r.latency.mean)

    def test_404_codes_are_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertEqual(r.errors.total(), 200)


class Command(unittest.TestCase):
    def test_closed_duration_loop_and_no_telemetry(self):
        with tempfile.TemporaryDirectory() as wd:
            argv = artillery.command(RunSpec(url="http://127.0.0.1:8080/json", connections=3,
                                             duration_s=2), wd)
            with open(os.path.join(wd, artillery.SCRIPT)) as f:
                script = json.load(f)
            with open(os.path.join(wd, artillery.PROCESSOR)) as f:
                self.assertIn("Date.now() + 2000", f.read())
        self.assertEqual(argv[:2], ["env", "ARTILLERY_DISABLE_TELEMETRY=true"])
        self.assertEqual(script["config"]["target"], "http://127.0.0.1:8080")
        self.assertEqual(script["config"]["phases"], [{"duration": 1, "arrivalCount": 3}])
        self.assertEqual(script["scenarios"][0]["flow"][0]["whileTrue"], "beforeDeadline")

    def test_open_model_at_a_rate(self):
        with tempfile.TemporaryDirectory() as wd:
            artillery.command(RunSpec(url="http://127.0.0.1:8080/json", duration_s=4, rate=50),
                              wd)
            with open(os.path.join(wd, artillery.SCRIPT)) as f:
                script = json.load(f)
        self.assertEqual(script["config"]["phases"], [{"duration": 4, "arrivalRate": 50}])
        self.assertEqual(script["scenarios"][0]["flow"], [{"get": {"url": "/json"}}])


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(artillery.NAME, "artillery")
        self.assertTrue(artillery.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(artillery, name)), name)

    def test_version_of_the_installed_tool(self):
        if not artillery.available():
            self.skipTest(f"artillery not installed: {artillery.INSTALL_HINT}")
        self.assertRegex(artillery.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
