#!/usr/bin/python3
"""Tests of loadtests/reconcile, on fixtures in loadtests/tests/fixtures/:

  native-read-*      a real 3 s wrk run (read, 8 connections) against notesd: the two
                     scrapes and wrk's output with BREAKDOWN=1
  node-read-*        the same against the Express peer on Node (which counts requests
                     the client left as status 0)
  deno-write-*       a real 10 s wrk run (write, 100 connections) against the Express peer
                     on Deno, which answered 13 requests whose connection wrk closed at the
                     end with 400 on path "other"
  small-*.prom       hand-written scrapes with known deltas (700 + 3 GET /notes/:id,
                     300 GET /notes) for the k6 summaries and exact percentiles
  k6-*.json          k6's handleSummary data, a --summary-export file, and a summary
                     that claims 10 answers the server never counted
  *-mismatch.txt     wrk output that claims 100 answers more than the server counted

    cd loadtests && /usr/bin/python3 -B -m tests.harness.test_reconcile
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

from loadlib import prom, quantile
from loadlib.commands.reconcile import client as rc
from tests import FIXTURES, LOADTESTS

FIX = FIXTURES
RECONCILE = os.path.join(LOADTESTS, "reconcile")   # the command as run.sh runs it


def run(*args):
    """(exit status, stdout, stderr, parsed --json output or None)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        res = subprocess.run([sys.executable, RECONCILE, *args, "--json", out], capture_output=True, text=True)
        data = None
        if os.path.exists(out):
            with open(out) as f:
                data = json.load(f)
        return res.returncode, res.stdout, res.stderr, data


def fx(name):
    return os.path.join(FIX, name)


class PrometheusText(unittest.TestCase):
    def test_labels_escapes_timestamps_and_special_values(self):
        text = ('# HELP x help\n'
                'a_total{method="GET",path="/notes/:id",status_code="200"} 17383\n'
                'b{v="say \\"hi\\"",w="back\\\\slash",n="line\\nbreak"} 1\n'
                'c 1.5e+09 1796026563000\n'
                'd{le="+Inf"} +Inf\n'
                'e NaN\n')
        samples = prom.parse_metrics(text)
        self.assertEqual(samples[0], ("a_total", {"method": "GET", "path": "/notes/:id", "status_code": "200"}, 17383.0))
        self.assertEqual(samples[1][1], {"v": 'say "hi"', "w": "back\\slash", "n": "line\nbreak"})
        self.assertEqual(samples[2], ("c", {}, 1.5e9))
        self.assertEqual(samples[3][2], math.inf)
        self.assertTrue(math.isnan(samples[4][2]))

    def test_garbage_is_refused(self):
        with self.assertRaises(prom.InputError):
            prom.parse_metrics("<html>not metrics</html>\n")

    def test_real_pages_of_both_servers_parse(self):
        for name in ("native-read-after.prom", "node-read-after.prom"):
            with open(fx(name)) as f:
                samples = prom.parse_metrics(f.read())
            names = {n for n, _, _ in samples}
            for wanted in ("http_requests_total", "http_request_duration_seconds_bucket",
                           "notes_db_pool_waiting_requests", "notes_eventloop_delay_seconds_sum",
                           "process_resident_memory_bytes"):
                self.assertIn(wanted, names, name)


class Quantiles(unittest.TestCase):
    BUCKETS = [(0.001, 100.0), (0.003, 500.0), (0.005, 650.0), (0.01, 700.0), (math.inf, 700.0)]

    def test_linear_interpolation_inside_the_bucket(self):
        v, rng = quantile.histogram_quantile(0.5, self.BUCKETS)          # rank 350: 250 of 400 into (1, 3] ms
        self.assertAlmostEqual(v, 0.001 + 0.002 * 250 / 400)
        self.assertEqual(rng, (0.001, 0.003))
        v, _ = quantile.histogram_quantile(0.1, self.BUCKETS)            # rank 70 in the first bucket, from 0
        self.assertAlmostEqual(v, 0.001 * 70 / 100)

    def test_rank_in_the_inf_bucket_gives_the_highest_finite_bound(self):
        v, rng = quantile.histogram_quantile(0.99, [(0.01, 10.0), (0.1, 10.0), (math.inf, 20.0)])
        self.assertEqual(v, 0.1)
        self.assertEqual(rng, (0.1, math.inf))

    def test_empty_histogram(self):
        self.assertEqual(quantile.histogram_quantile(0.5, [(0.1, 0.0), (math.inf, 0.0)]), (None, None))

    def test_a_histogram_needs_inf(self):
        with self.assertRaises(prom.InputError):
            quantile.histogram_quantile(0.5, [(0.1, 1.0)])


class Names(unittest.TestCase):
    def test_request_names_map_to_route_templates(self):
        self.assertEqual(rc.route_of_name("GET /notes/:id"), ("GET", "/notes/:id"))
        self.assertEqual(rc.route_of_name("GET /notes?tag="), ("GET", "/notes"))
        self.assertEqual(rc.route_of_name("POST /notes"), ("POST", "/notes"))
        self.assertEqual(rc.route_of_name("PUT /notes/:id"), ("PUT", "/notes/:id"))
        self.assertEqual(rc.route_of_name("GET /static/app.min.js"), ("GET", "/static"))
        self.assertEqual(rc.route_of_name("GET /"), ("GET", "/"))
        self.assertEqual(rc.route_of_name("GET /delay/50"), ("GET", "/delay/:ms"))
        self.assertEqual(rc.route_of_name("GET /nope"), ("GET", "other"))
        self.assertIsNone(rc.route_of_name("?"))


class Wrk(unittest.TestCase):
    def test_real_notesd_run_agrees_within_the_connections_in_flight(self):
        code, out, err, data = run("--tool", "wrk", "--summary", fx("native-read-wrk.txt"),
                                   "--before", fx("native-read-before.prom"), "--after", fx("native-read-after.prom"),
                                   "--tolerance", "8")
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("MISMATCH", out)
        self.assertIn("RESULT OK: client 24726, server 24733, difference +7 (allowed 0..8)", out)
        self.assertIn("tolerance 8: the load tool stops counting", out)
        self.assertTrue(data["ok"])
        self.assertEqual(data["difference"], 7)
        self.assertEqual(data["client"]["by_route_status"], {"GET /notes 200": 7350, "GET /notes/:id 200": 17376})
        self.assertEqual(data["server"]["by_route_status"]["GET /notes/:id 200"], 17383)
        self.assertEqual(data["client"]["sent"], {"GET /notes": 7351, "GET /notes/:id": 17383})
        # client minus server, per percentile, from the overall histogram
        self.assertAlmostEqual(data["client_minus_server_ms"]["p99"],
                               5.961 - data["server"]["latency_ms"]["all"]["p99"], places=3)
        self.assertEqual(data["server"]["latency_ms"]["all"]["count"], 24733)

    def test_without_tolerance_the_requests_in_flight_are_a_mismatch(self):
        code, out, _, data = run("--tool", "wrk", "--summary", fx("native-read-wrk.txt"),
                                 "--before", fx("native-read-before.prom"), "--after", fx("native-read-after.prom"))
        self.assertEqual(code, 1)
        self.assertIn("MISMATCH total: client 24726, server 24733, difference +7 (more than the allowed 0)", out)
        self.assertIn("tolerance 0: client and server must agree exactly.", out)
        self.assertFalse(data["ok"])

    def test_deliberate_mismatch_is_reported_loudly(self):
        # the file claims 100 answers of GET /notes?tag= that the server never counted
        code, out, _, data = run("--tool", "wrk", "--summary", fx("native-read-wrk-mismatch.txt"),
                                 "--before", fx("native-read-before.prom"), "--after", fx("native-read-after.prom"),
                                 "--tolerance", "1000")
        self.assertEqual(code, 1)
        lines = [l for l in out.splitlines() if l.startswith("MISMATCH")]
        self.assertIn("MISMATCH GET /notes: client 7450, server 7350, difference -100 "
                      "(the server counted fewer requests than the client received answers)", lines)
        self.assertTrue(any(l.startswith("MISMATCH total: client 24826, server 24733") for l in lines), lines)
        self.assertIn("RESULT MISMATCH", out)
        self.assertFalse(data["ok"])
        self.assertEqual(len(data["mismatches"]), len(lines))

    def test_server_counting_more_than_the_tool_sent_is_a_mismatch(self):
        with open(fx("native-read-wrk.txt")) as f:
            text = f.read().replace('"GET /notes?tag=":7351', '"GET /notes?tag=":7300')
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(text)
        try:
            code, out, _, _ = run("--tool", "wrk", "--summary", f.name, "--before", fx("native-read-before.prom"),
                                  "--after", fx("native-read-after.prom"), "--tolerance", "8")
        finally:
            os.unlink(f.name)
        self.assertEqual(code, 1)
        self.assertIn("MISMATCH GET /notes: the server counted 7350 but the client sent only 7300", out)

    def test_peer_counts_requests_the_client_left_as_status_0(self):
        code, out, err, data = run("--tool", "wrk", "--summary", fx("node-read-wrk.txt"),
                                   "--before", fx("node-read-before.prom"), "--after", fx("node-read-after.prom"),
                                   "--tolerance", "20")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(data["server"]["client_left"], 11)
        self.assertIn("11 with status 0 (client gone)", out)

    def test_unrouted_requests_in_flight_fit_in_what_was_sent(self):
        code, out, err, data = run("--tool", "wrk", "--summary", fx("deno-write-wrk.txt"),
                                   "--before", fx("deno-write-before.prom"), "--after", fx("deno-write-after.prom"),
                                   "--tolerance", "100")
        self.assertEqual(code, 0, out + err)
        self.assertIn("unrouted: fits in the 9 POST requests sent and not counted under their route", out)
        self.assertIn("unrouted: fits in the 5 PUT requests sent and not counted under their route", out)
        self.assertEqual(data["server"]["non2xx"], 13)
        self.assertEqual(data["server"]["client_left"], 56)
        self.assertIn("RESULT OK: client 39353, server 39453, difference +100 (allowed 0..100)", out)

    def test_unrouted_requests_beyond_what_was_sent_are_a_mismatch(self):
        with open(fx("deno-write-wrk.txt")) as f:
            text = f.read().replace('"POST /notes":19794', '"POST /notes":19789')
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(text)
        try:
            code, out, _, _ = run("--tool", "wrk", "--summary", f.name, "--before", fx("deno-write-before.prom"),
                                  "--after", fx("deno-write-after.prom"), "--tolerance", "100")
        finally:
            os.unlink(f.name)
        self.assertEqual(code, 1)
        self.assertIn("MISMATCH POST other: the server counted 8 but the client sent only 4 that were not "
                      "counted elsewhere", out)

    def test_a_route_the_client_never_sent_is_a_mismatch(self):
        # GET /json is a real route: requests to it in a read test came from someone else
        with open(fx("native-read-after.prom")) as f:
            text = f.read() + 'http_requests_total{method="GET",path="/json",status_code="200"} 3\n'
        with tempfile.NamedTemporaryFile("w", suffix=".prom", delete=False) as f:
            f.write(text)
        try:
            code, out, _, _ = run("--tool", "wrk", "--summary", fx("native-read-wrk.txt"),
                                  "--before", fx("native-read-before.prom"), "--after", f.name, "--tolerance", "100")
        finally:
            os.unlink(f.name)
        self.assertEqual(code, 1)
        self.assertIn("MISMATCH GET /json: the server counted 3 but the client sent only 0", out)

    def test_only_totals_without_a_breakdown(self):
        with open(fx("native-read-wrk.txt")) as f:
            line = [l for l in f.read().splitlines() if l.startswith("WRK_JSON ")][0]
        data = json.loads(line[len("WRK_JSON "):])
        for k in ("sent", "responses"):
            del data[k]
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("WRK_JSON " + json.dumps(data) + "\n")
        try:
            code, out, _, _ = run("--tool", "wrk", "--summary", f.name, "--before", fx("native-read-before.prom"),
                                  "--after", fx("native-read-after.prom"), "--tolerance", "8")
        finally:
            os.unlink(f.name)
        self.assertEqual(code, 0, out)
        self.assertIn("only totals are compared", out)

    def test_non_2xx_the_server_saw_must_match_the_tool(self):
        with open(fx("native-read-wrk.txt")) as f:
            text = f.read().replace('"non2xx":0', '"non2xx":4')
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(text)
        try:
            code, out, _, _ = run("--tool", "wrk", "--summary", f.name, "--before", fx("native-read-before.prom"),
                                  "--after", fx("native-read-after.prom"), "--tolerance", "8")
        finally:
            os.unlink(f.name)
        self.assertEqual(code, 1)
        self.assertIn("MISMATCH non-2xx responses: client 4, server 0", out)


class K6(unittest.TestCase):
    def check_exact(self, summary):
        code, out, err, data = run("--tool", "k6", "--summary", fx(summary),
                                   "--before", fx("small-before.prom"), "--after", fx("small-after.prom"))
        self.assertEqual(code, 0, out + err)
        self.assertIn("RESULT OK: client 1003, server 1003, difference 0 (allowed 0..0)", out)
        self.assertEqual(data["client"]["by_route_status"],
                         {"GET /notes 200": 300, "GET /notes/:id 200": 700, "GET /notes/:id !200": 3})
        self.assertEqual(data["client"]["failed"], 3)
        self.assertEqual(data["server"]["non2xx"], 3)
        # overall deltas: 103 <= 1 ms, 503 <= 3 ms, 653 <= 5 ms, 1003 <= 10 ms
        lat = data["server"]["latency_ms"]["all"]
        self.assertAlmostEqual(lat["p50"], 1.0 + 2.0 * (501.5 - 103) / 400, places=3)
        self.assertAlmostEqual(lat["p95"], 5.0 + 5.0 * (952.85 - 653) / 350, places=3)
        self.assertAlmostEqual(lat["p99"], 5.0 + 5.0 * (992.97 - 653) / 350, places=3)
        self.assertEqual(lat["p99_bucket"], [5.0, 10.0])
        self.assertAlmostEqual(data["client_minus_server_ms"]["p95"], 12.5 - lat["p95"], places=3)
        self.assertAlmostEqual(data["client_minus_server_ms"]["p50"], 4.0 - lat["p50"], places=3)
        by_route = data["server"]["latency_ms"]["GET /notes/:id"]
        self.assertEqual(by_route["count"], 703)
        self.assertAlmostEqual(by_route["p50"], 1.0 + 2.0 * (351.5 - 103) / 400, places=3)
        return out

    def test_handle_summary_data(self):
        out = self.check_exact("k6-handlesummary.json")
        self.assertIn("GET /notes/:id not 200", out)

    def test_mode_comes_from_the_notesd_test_tags(self):
        # handleSummary copies the script's options.tags under "notesd_test"; k6's
        # own summary data has no options.tags, and --summary-export has neither
        self.assertEqual(rc.load_k6(fx("k6-handlesummary.json")).mode, "read")
        self.assertIsNone(rc.load_k6(fx("k6-summary-export.json")).mode)
        code, out, _, data = run("--tool", "k6", "--summary", fx("k6-handlesummary.json"),
                                 "--before", fx("small-before.prom"), "--after", fx("small-after.prom"))
        self.assertIn("reconcile: k6, mode read:", out)
        self.assertEqual(data["mode"], "read")

    def test_summary_export_file(self):
        self.check_exact("k6-summary-export.json")

    def test_deliberate_mismatch(self):
        code, out, _, data = run("--tool", "k6", "--summary", fx("k6-mismatch.json"),
                                 "--before", fx("small-before.prom"), "--after", fx("small-after.prom"),
                                 "--tolerance", "100")
        self.assertEqual(code, 1)
        self.assertIn("MISMATCH GET /notes: client 310, server 300, difference -10", out)
        self.assertIn("MISMATCH total: client 1013, server 1003, difference -10", out)
        self.assertFalse(data["ok"])


class BadInput(unittest.TestCase):
    def test_server_restarted_between_the_scrapes(self):
        code, _, err, data = run("--tool", "wrk", "--summary", fx("node-read-wrk.txt"),
                                 "--before", fx("node-read-after.prom"), "--after", fx("node-read-before.prom"))
        self.assertEqual(code, 2)
        self.assertIn("the server restarted between the scrapes", err)
        self.assertIsNone(data)

    def test_no_wrk_json_line(self):
        code, _, err, _ = run("--tool", "wrk", "--summary", fx("small-before.prom"),
                              "--before", fx("small-before.prom"), "--after", fx("small-after.prom"))
        self.assertEqual(code, 2)
        self.assertIn("no WRK_JSON line", err)

    def test_not_a_k6_summary(self):
        code, _, err, _ = run("--tool", "k6", "--summary", fx("native-read-wrk.txt"),
                              "--before", fx("small-before.prom"), "--after", fx("small-after.prom"))
        self.assertEqual(code, 2)
        self.assertIn("not JSON", err)

    def test_missing_file(self):
        code, _, err, _ = run("--tool", "k6", "--summary", fx("k6-handlesummary.json"),
                              "--before", fx("nope.prom"), "--after", fx("small-after.prom"))
        self.assertEqual(code, 2)
        self.assertIn("cannot read", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
