"""loadlib.journal against a real notesd with JOURNAL on and real load tools.

For k6 (constant and ramping arrival rate, an X-Request-Id per request), hey (-q,
-o csv), h2load (--log-file) and ab (-g): every request the server counted has a
journal record (records + lost = the growth of http_requests_total, nothing lost);
the tool's per-request log joins the journal one to one (by request id for k6, by
order for the others), with nothing on one side only; and the connections the
journal saw are the ones the tool claims (c keep-alive connections; one per request
for ab without -k). The schedule and ramp figures are printed, not judged: how well a
tool keeps its rate is the scorecard's verdict (calibrate --tools), on a quiet machine.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_journal_live
"""
import csv
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from loadlib import journal, paths, prom
from loadlib.server import Target
from loadlib.tools import k6 as k6tool

NOTESD = os.environ.get("NOTESD_BIN") or os.path.join(paths.REPO, "build", "notesd")

K6_SCRIPT = """
import http from 'k6/http';
export const options = { discardResponseBodies: true, scenarios: { s: %s } };
export default function () {
  const rid = `${__VU}-${__ITER}-${Math.random().toString(36).slice(2, 10)}`;
  http.get(__ENV.URL, { headers: { 'X-Request-Id': rid }, tags: { rid } });
}
"""
CONSTANT = ("{ executor: 'constant-arrival-rate', rate: 100, timeUnit: '1s', duration: '3s', "
            "preAllocatedVUs: 20, maxVUs: 50 }")
RAMP = [(0, 10), (2, 150), (1, 150)]       # k6's startRate, then its stages
RAMPING = ("{ executor: 'ramping-arrival-rate', startRate: 10, timeUnit: '1s', "
           "preAllocatedVUs: 20, maxVUs: 50, stages: [{ target: 150, duration: '2s' }, "
           "{ target: 150, duration: '1s' }] }")


def dropped_iterations(csv_path):
    """The iterations k6 itself counted as dropped (its dropped_iterations samples)."""
    with open(csv_path, newline="") as f:
        return int(sum(float(row["metric_value"]) for row in csv.DictReader(f)
                       if row["metric_name"] == "dropped_iterations"))


def requests_total(samples):
    return sum(v for k, v in prom.series(samples or [], "http_requests_total").items())


class JournalLive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(NOTESD, os.X_OK):
            raise unittest.SkipTest(f"{NOTESD} is not built")
        cls.target = Target(NOTESD, pin=False, journal=200000)
        # a few requests, so the ring's end is not its start
        for _ in range(3):
            cls.target.get("/json")
        cls.since = journal.read(cls.target.metrics_port)[2]
        cls.first = (dict(cls.since), journal.newest(cls.target.metrics_port))
        cls.tmp = tempfile.mkdtemp(prefix="journal-live-")

    @classmethod
    def tearDownClass(cls):
        cls.target.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_newest_is_where_reading_ends(self):
        # newest() finds, without reading the ring, the `since` read() ends at
        read_to, newest = self.first
        self.assertEqual(newest, read_to)
        self.assertGreaterEqual(newest[0], 3)
        self.assertEqual(journal.newest(self.target.metrics_port), type(self).since)

    def run_tool(self, name, argv):
        """Runs argv; returns (the run's journal records, its wall-clock start in µs)."""
        before = requests_total(self.target.scrape())
        t0_us = int(time.time() * 1e6)
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        self.assertEqual(res.returncode, 0, f"{name}: {res.stdout[-2000:]}{res.stderr[-2000:]}")
        time.sleep(0.2)
        grown = requests_total(self.target.scrape()) - before
        records, lost, type(self).since = journal.read(self.target.metrics_port, self.since)
        records = journal.of_kind(records)
        self.assertEqual(lost, 0, name)
        self.assertEqual(len(records), grown, f"{name}: journal records against "
                                              "http_requests_total's growth")
        return records, t0_us

    def joined(self, name, tool, records, by):
        j = journal.join(tool, records)
        print(f"  figure: {name}: {j['matched']} requests joined by {j['by']}, "
              f"{j['ambiguous']} ambiguous; client's share of latency p50 "
              f"{j['client_ms']['p50']:.3f} ms, p99 {j['client_ms']['p99']:.3f} ms, max "
              f"{j['client_ms']['max']:.3f} ms", flush=True)
        self.assertEqual(j["by"], by)
        self.assertEqual((j["tool_only"], j["server_only"]), (0, 0), j)
        self.assertEqual(j["matched"], len(records))
        self.assertGreater(j["matched"], 0)
        return j

    def k6(self, name, scenario):
        binary = k6tool.path()
        if binary is None:
            self.skipTest(k6tool.missing())
        script = os.path.join(self.tmp, f"{name}.js")
        with open(script, "w") as f:
            f.write(K6_SCRIPT % scenario)
        out = os.path.join(self.tmp, f"{name}.csv")
        records, t0 = self.run_tool(name, [binary, "run", "--quiet", "--out",
                                           f"csv={out}", "-e", f"URL={self.target.url('/json')}",
                                           script])
        self.joined(name, journal.k6_csv(out, "rid"), records, "request id")
        self.assertEqual({r["request_id"] is not None for r in records}, {True})
        return records, t0, dropped_iterations(out)

    def test_k6_constant_arrival_rate(self):
        records, _, dropped = self.k6("k6-constant", CONSTANT)
        s = journal.schedule([r["started_us"] for r in records], 100)
        print(f"  figure: k6 constant-arrival-rate 100/s: {s}; k6 dropped {dropped}", flush=True)
        # 100/s for 3 s, every one either seen by the server or counted by k6 as dropped (a
        # busy machine's pause leaves k6 without a free VU); k6 2.2 starts one more at the
        # very end, and on a busy machine another that came due while it caught up
        self.assertTrue(300 <= s["arrivals"] + dropped <= 302, (s, dropped))

    def test_k6_ramping_arrival_rate(self):
        records, _, _ = self.k6("k6-ramping", RAMPING)
        start = records[0]["started_us"]
        r = journal.ramp_error([x["started_us"] for x in records], RAMP, start)
        print(f"  figure: k6 ramping-arrival-rate 10 -> 150/s over 2 s, 1 s at 150/s: "
              f"{len(records)} requests, ramp error {r}", flush=True)
        self.assertGreater(r["windows"], 0)

    def test_hey_rate_and_connections(self):
        if not shutil.which("hey"):
            self.skipTest("hey is not installed (apt-get install hey)")
        out = os.path.join(self.tmp, "hey.csv")
        with open(out, "w") as f:
            records, t0 = self.run_tool("hey", ["sh", "-c", f"hey -z 2s -c 5 -q 20 -o csv "
                                                f"{self.target.url('/json')} > {out}"])
        del f
        self.joined("hey", journal.hey_csv(out, t0), records, "order")
        s = journal.schedule([r["started_us"] for r in records], 100)
        print(f"  figure: hey -q 20 -c 5 (100/s): {s}", flush=True)
        # hey's workers share Go's connection pool: at most its 5, fewer when a rate leaves
        # one idle while another's answer is read
        c = journal.connections(records)
        self.assertTrue(1 <= c["connections"] <= 5, c)
        self.assertEqual(c["requests"], len(records))

    def test_h2load_log_and_connections(self):
        if not shutil.which("h2load"):
            self.skipTest("h2load is not installed (apt-get install nghttp2-client)")
        out = os.path.join(self.tmp, "h2load.log")
        records, _ = self.run_tool("h2load", ["h2load", "--h1", "-n", "400", "-c", "4",
                                              "--log-file", out, self.target.url("/json")])
        self.joined("h2load", journal.h2load_log(out), records, "order")
        self.assertEqual(journal.connections(records)["connections"], 4)

    def test_ab_gnuplot_and_a_connection_per_request(self):
        if not shutil.which("ab"):
            self.skipTest("ab is not installed (apt-get install apache2-utils)")
        out = os.path.join(self.tmp, "ab.tsv")
        records, _ = self.run_tool("ab", ["ab", "-q", "-n", "200", "-c", "4", "-g", out,
                                          self.target.url("/json")])
        self.joined("ab", journal.ab_gnuplot(out), records, "order")
        c = journal.connections(records)
        self.assertEqual((c["connections"], c["per_connection_max"]), (200, 1), c)


if __name__ == "__main__":
    unittest.main(verbosity=2)
