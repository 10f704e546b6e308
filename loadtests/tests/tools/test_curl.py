"""curl's adapter against curl's real -w lines (fixtures/tools/curl/<case>/, captured
from runs against notesd): the figures below were computed by hand from the
CURLW lines (nearest rank over time_total of the transfers with a status)."""
import json
import os
import tempfile
import unittest

from loadlib.tools import curl
from loadlib.tools.base import RunSpec
from tests.tools import TOOL_FIXTURES


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "curl", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    with open(os.path.join(d, "stdout.txt")) as out, open(os.path.join(d, "stderr.txt")) as err:
        return curl.parse(out.read(), err.read(), d, spec)


class Parse(unittest.TestCase):
    def test_json_transfers(self):
        r = parse_fixture("json")
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        self.assertAlmostEqual(r.latency.p50, 0.032)
        self.assertAlmostEqual(r.latency.p90, 0.053)
        self.assertAlmostEqual(r.latency.p99, 0.156)
        self.assertAlmostEqual(r.latency.max, 0.673)
        self.assertAlmostEqual(r.latency.mean, 0.0406, places=4)
        self.assertAlmostEqual(r.duration_s, 0.1099, places=4)   # between the two stamps
        self.assertIn("HTTP version(s) used: 1.1", r.notes)

    def test_delay_transfers(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 400)
        self.assertAlmostEqual(r.latency.p50, 51.349)
        self.assertAlmostEqual(r.latency.p90, 59.17)
        self.assertAlmostEqual(r.latency.p99, 61.033)
        self.assertAlmostEqual(r.latency.max, 63.847)

    def test_refused_port_is_connect_errors(self):
        # status 000 with exit code 7 on every transfer: no response, 50 connect errors
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 50)
        self.assertEqual(r.errors.total(), 50)
        self.assertIsNone(r.latency.p50)

    def test_404_counts_as_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertAlmostEqual(r.latency.max, 0.327)

    def test_h2c_reuse_bug_is_named(self):
        # curl 7.88 over h2c: the first transfer, then exit code 16 on every reuse
        out = ("CURL_TIME 10.0\nCURLW 200 0.001000 0 2\nCURLW 000 0.000010 16 0\n"
               "CURLW 000 0.000010 16 0\nCURL_TIME 10.5\n")
        r = curl.parse(out, "", "", RunSpec(url="http://127.0.0.1:1/json", requests=3,
                                            http2=True))
        self.assertEqual((r.requests, r.errors.other), (1, 2))
        self.assertTrue(any("curl issue 10634" in n for n in r.notes))

    def test_no_stamps_is_an_error(self):
        with self.assertRaises(ValueError):
            curl.parse("CURLW 200 0.001 0 1.1\n", "", "", RunSpec(url="http://127.0.0.1:1/",
                                                                 requests=1))


class Command(unittest.TestCase):
    def argv(self, **kw):
        with tempfile.TemporaryDirectory() as wd:
            argv = curl.command(RunSpec(**dict({"url": "http://127.0.0.1:8080/json",
                                                "connections": 4, "requests": 3}, **kw)), wd)
            with open(os.path.join(wd, curl.CONFIG)) as f:
                config = f.read()
        return argv[2], config

    def test_count_run_writes_one_url_per_request(self):
        line, config = self.argv()
        self.assertEqual(config.count('url = "http://127.0.0.1:8080/json"'), 3)
        self.assertEqual(config.count('output = "/dev/null"'), 3)
        self.assertIn("--parallel-max 4", line)
        self.assertIn("--http1.1 --parallel-immediate", line)

    def test_duration_alone_is_refused(self):
        with tempfile.TemporaryDirectory() as wd, self.assertRaises(ValueError):
            curl.command(RunSpec(url="http://127.0.0.1:8080/json", duration_s=2), wd)

    def test_http2_modes(self):
        line, _ = self.argv(http2=True)
        self.assertIn("--http2-prior-knowledge", line)
        line, _ = self.argv(http2=True, url="https://127.0.0.1:8443/json")
        self.assertIn("--http2 ", line)
        self.assertIn(" -k", line)

    def test_no_keepalive_sends_close(self):
        line, _ = self.argv(keepalive=False)
        self.assertIn("'Connection: close'", line)


class Version(unittest.TestCase):
    def test_version_when_installed(self):
        if not curl.available():
            self.skipTest(f"curl not installed: {curl.INSTALL_HINT}")
        self.assertRegex(curl.version(), r"^\d+\.\d+\.\d+$")


if __name__ == "__main__":
    unittest.main(verbosity=2)
