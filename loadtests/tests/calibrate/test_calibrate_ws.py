#!/usr/bin/python3
"""calibrate's WebSocket column (commands/calibrate_ws.py): its verdicts on
hand-made runs, on both sides of every threshold, and the three WebSocket
adapters (tools/ws_k6.py, ws_artillery.py, ws_tsung.py): the command lines they
build and their parsers on output captured from real runs against notesd's
/ws/echo?max_messages=5 (fixtures/ws-*).

    cd loadtests && /usr/bin/python3 -B -m tests.calibrate.test_calibrate_ws
"""
import os
import shutil
import tempfile
import unittest

from loadlib.commands.calibrate import ws as w
from loadlib.tools import ws_artillery, ws_k6, ws_run, ws_tsung
from loadlib.tools.ws_base import Unsupported, WsSpec
from tests import FIXTURES

LATENCY = {"mean": None, "p50": None, "p90": None, "p99": None, "max": None}


def run(result=None, server=None, failure=None, unsupported=None, wall_s=2.0):
    """A run as measure_ws() returns it; `result` fields over a tool that got everything."""
    res = None
    if failure is None and unsupported is None:
        res = dict({"connections": 10, "sent": 2000, "received": 2000, "latency": dict(LATENCY),
                    "closes": None, "errors": {}}, **(result or {}))
    srv = dict({"accepted": 10, "opened": 10, "received": 2000, "sent": 2000, "skipped": 0,
                "closes": {"client": 10}}, **(server or {}))
    return {"spec": {}, "result": res, "failure": failure, "unsupported": unsupported,
            "server": srv, "wall_s": wall_s}


class Verdicts(unittest.TestCase):
    def test_connections_must_be_the_servers(self):
        self.assertEqual(w.judge_ws_connections(run())["verdict"], w.PASS)
        rec = w.judge_ws_connections(run({"connections": 11}))
        self.assertEqual((rec["verdict"], rec["error"]), (w.FAIL, 1))

    def test_messages_exact_pass_and_close_frames_counted_as_sent_warn(self):
        self.assertEqual(w.judge_ws_messages(run())["verdict"], w.PASS)
        rec = w.judge_ws_messages(run({"sent": 2010}))
        self.assertEqual((rec["verdict"], rec["error"]), (w.WARN, 10))
        self.assertIn("close frames", rec["detail"])
        # one more than the closes, or a message short on the way back: FAIL
        self.assertEqual(w.judge_ws_messages(run({"sent": 2011}))["verdict"], w.FAIL)
        self.assertEqual(w.judge_ws_messages(run({"received": 1999}))["verdict"], w.FAIL)

    def test_round_trip_thresholds(self):
        for p50, verdict in ((2.0, w.PASS), (2.01, w.WARN), (10.0, w.WARN), (10.5, w.FAIL)):
            lat = dict(LATENCY, p50=p50, p99=20.0)
            self.assertEqual(w.judge_ws_rtt(run({"latency": lat}))["verdict"], verdict, p50)
        # a mean stands in for p50 where the tool keeps no percentiles (tsung)
        rec = w.judge_ws_rtt(run({"latency": dict(LATENCY, mean=7.8, max=91.0)}))
        self.assertEqual(rec["verdict"], w.WARN)
        self.assertIn("mean 7.80 ms", rec["detail"])
        self.assertEqual(w.judge_ws_rtt(run())["verdict"], w.SKIP)

    def test_feed_needs_every_message_then_judges_latency(self):
        srv = {"sent": 4000, "closes": {"done": 10}}
        self.assertEqual(w.judge_ws_feed(run({"received": 4000}, srv))["verdict"], w.PASS)
        rec = w.judge_ws_feed(run({"received": 3990}, srv))
        self.assertEqual((rec["verdict"], rec["error"]), (w.FAIL, -10))
        lat = dict(LATENCY, p50=0.3, p99=1.5)
        self.assertEqual(w.judge_ws_feed(run({"received": 4000, "latency": lat}, srv))["verdict"],
                         w.PASS)
        lat = dict(LATENCY, p50=30.0, p99=170.0)
        rec = w.judge_ws_feed(run({"received": 4000, "latency": lat}, srv))
        self.assertEqual(rec["verdict"], w.FAIL)
        self.assertIn("p99 170.00 ms", rec["detail"])
        self.assertEqual(w.judge_ws_feed(run(unsupported="cannot read a feed"))["verdict"], w.SKIP)

    def test_close_seen_by_its_code_passes_and_as_a_timeout_warns(self):
        srv = {"received": 60, "sent": 50, "closes": {"message_limit": 10}}
        rec = w.judge_ws_close(run({"sent": 60, "received": 50, "closes": {"1008": 10}}, srv), 10)
        self.assertEqual(rec["verdict"], w.PASS)
        rec = w.judge_ws_close(run({"sent": 60, "received": 50, "errors": {
            "response timeout": 10}}, srv), 10)
        self.assertEqual(rec["verdict"], w.WARN)
        self.assertIn("response timeout x10", rec["detail"])
        # a code other than the server's, on some connections only: not PASS
        rec = w.judge_ws_close(run({"sent": 60, "received": 50, "closes": {"1008": 9,
                                                                          "1006": 1}}, srv), 10)
        self.assertEqual(rec["verdict"], w.WARN)

    def test_close_counted_as_answered_fails_and_names_the_raw_connections(self):
        srv = {"accepted": 60, "received": 60, "sent": 50, "closes": {"message_limit": 10}}
        rec = w.judge_ws_close(run({"connections": 60, "sent": 100, "received": 100}, srv), 10)
        self.assertEqual((rec["verdict"], rec["error"]), (w.FAIL, 50))
        self.assertIn("50 more TCP connections", rec["detail"])

    def test_a_tool_that_did_not_run_fails_every_check(self):
        broken = run(failure="k6 exited with 107")
        for judge in (w.judge_ws_connections, w.judge_ws_messages, w.judge_ws_rtt,
                      w.judge_ws_feed):
            self.assertEqual(judge(broken)["verdict"], w.FAIL)
        self.assertEqual(w.judge_ws_close(broken, 10)["verdict"], w.FAIL)

    def test_the_scorecard_has_a_row_per_tool_and_a_line_per_check(self):
        column = {"started": "2026-12-01T00:00:00Z", "seconds_total": 9.5,
                  "loadavg_start": [0.5, 0.4, 0.3], "tools": [
                      {"tool": "k6", "installed": True, "version": "2.2.0", "checks": [
                          w.judge_ws_connections(run()), w.judge_ws_messages(run({"sent": 2010})),
                          w.judge_ws_rtt(run()), w.judge_ws_feed(run()),
                          w.judge_ws_close(run(), 10)]},
                      {"tool": "tsung", "installed": False, "why": "not installed: apt-get",
                       "checks": []}]}
        text = w.ws_markdown(column)
        self.assertIn("| k6 | 2.2.0 | PASS | WARN | SKIP | PASS | WARN |", text)
        self.assertIn("| tsung | not installed: apt-get |", text)
        self.assertEqual(text.count("- **k6, "), 5)
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, "data"))
            out = w.write_ws(column, os.path.join(tmp, "run"), os.path.join(tmp, "ws.md"),
                             os.path.join(tmp, "data", "ws.json"))
            self.assertEqual(out, text)
            self.assertTrue(os.path.exists(os.path.join(tmp, "run", "ws-scorecard.json")))
            with open(os.path.join(tmp, "run", "ws-scorecard.md")) as f:
                self.assertEqual(f.read(), "<!-- generated by loadtests/calibrate from "
                                 "ws-scorecard.json; do not edit: calibrate --report-from "
                                 "ws-scorecard.json writes it again -->\n" + text)
            with open(os.path.join(tmp, "ws.md")) as f:
                first = f.readline()
            self.assertIn("from data/ws.json;", first)          # the copy names its own JSON

    def test_a_merge_keeps_the_rows_it_did_not_run_again(self):
        def column(started, tools, load):
            return {"started": started, "seconds_total": 10.0, "loadavg_start": [load] * 3,
                    "tools": [{"tool": t, "installed": True, "version": started[:10],
                               "checks": [w.judge_ws_connections(run())]} for t in tools]}
        base = column("2026-12-01T00:00:00Z", ["artillery", "k6", "tsung"], 3.0)
        new = column("2026-12-04T00:00:00Z", ["k6"], 0.5)
        merged = w.merge_column(base, new)
        self.assertEqual([(t["tool"], t["version"]) for t in merged["tools"]],
                         [("artillery", "2026-12-01"), ("k6", "2026-12-04"),
                          ("tsung", "2026-12-01")])
        text = w.ws_markdown(merged)
        self.assertIn("rows of artillery, tsung: 2026-12-01T00:00:00Z, 10.0 s, load average "
                      "3.00 3.00 3.00 at the start; rows of k6: 2026-12-04T00:00:00Z", text)
        # merged again: the bookkeeping carries over; a run of no WebSocket tool changes nothing
        again = w.merge_column(merged, column("2026-12-05T00:00:00Z", ["tsung"], 1.0))
        self.assertEqual([r["tools"] for r in again["merged"]], [["artillery"], ["k6"], ["tsung"]])
        self.assertIs(w.merge_column(again, column("2026-12-06T00:00:00Z", [], 1.0)), again)


class Adapters(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test-ws-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def fixture(self, name, dest):
        shutil.copy(os.path.join(FIXTURES, name), os.path.join(self.tmp, dest))

    def test_the_listing_and_the_http_listing_keep_apart(self):
        from loadlib.tools import run as toolrun
        ws = {n for n, _, _ in ws_run.ws_adapters()}
        http = {n for n, _, _ in toolrun.adapters()}
        self.assertEqual(ws, {"k6", "artillery", "tsung"})
        self.assertNotIn("tsung", http)
        self.assertEqual(w.split(["tsung", "k6", "all"]), (["tsung"], ["k6", "all"]))

    def test_k6_runs_the_repositorys_scripts(self):
        spec = WsSpec(url="ws://127.0.0.1:9000/ws/echo?max_messages=5", connections=3,
                      messages=10, size=64)
        argv = ws_k6.command(spec, self.tmp)
        self.assertTrue(argv[-1].endswith("loadtests/k6/ws-echo.js"))
        self.assertIn("BASE_URL=http://127.0.0.1:9000", argv)
        self.assertIn("QUERY=max_messages=5", argv)
        feed = WsSpec(url="ws://127.0.0.1:9000/ws/feed?rate=200&count=400&size=128", mode="feed")
        argv = ws_k6.command(feed, self.tmp)
        self.assertTrue(argv[-1].endswith("loadtests/k6/ws-feed.js"))
        self.assertTrue({"RATE=200", "COUNT=400", "SIZE=128"} <= set(argv))
        with self.assertRaises(Unsupported):
            ws_k6.command(WsSpec(url="ws://127.0.0.1:9000/ws/feed"), self.tmp)

    def test_k6_summary(self):
        self.fixture("ws-k6-summary.json", ws_k6.SUMMARY)
        res = ws_k6.parse("", "", self.tmp, WsSpec(url="ws://127.0.0.1:1/ws/echo"))
        self.assertEqual((res.connections, res.sent, res.received), (3, 18, 15))
        self.assertEqual(res.closes, {"1008": 3})
        self.assertIsNotNone(res.latency.p50)
        self.assertEqual(res.errors, {})

    def test_artillery_script_and_report(self):
        spec = WsSpec(url="ws://127.0.0.1:9000/ws/echo", connections=4, messages=7, size=5)
        argv = ws_artillery.command(spec, self.tmp)
        self.assertIn("ARTILLERY_DISABLE_TELEMETRY=true", argv)
        import json
        with open(os.path.join(self.tmp, ws_artillery.SCRIPT)) as f:
            script = json.load(f)
        self.assertEqual(script["config"]["phases"], [{"duration": 1, "arrivalCount": 4}])
        self.assertEqual(script["scenarios"][0]["flow"][0]["count"], 7)
        self.assertEqual(script["scenarios"][0]["flow"][0]["loop"][0]["send"]["payload"], "xxxxx")
        self.fixture("ws-artillery-report.json", ws_artillery.REPORT)
        res = ws_artillery.parse("", "", self.tmp, spec)
        self.assertEqual((res.connections, res.sent, res.received), (3, 18, 15))
        self.assertIsNone(res.closes)
        self.assertEqual(res.errors, {"response timeout": 3, "undefined": 3, "vusers.failed": 3})

    def test_tsung_config_and_log(self):
        spec = WsSpec(url="ws://127.0.0.1:9000/ws/echo?max_messages=5", connections=2,
                      messages=10, size=5, timeout_s=2)
        ws_tsung.command(spec, self.tmp)
        with open(os.path.join(self.tmp, ws_tsung.CONFIG)) as f:
            xml = f.read()
        self.assertIn('path="/ws/echo?max_messages=5"', xml)
        self.assertIn('<users maxnumber="2" arrivalrate="1000" unit="second"/>', xml)
        self.assertIn('value="2000"', xml)
        with self.assertRaises(Unsupported):
            ws_tsung.command(WsSpec(url="ws://127.0.0.1:9000/ws/feed", mode="feed"), self.tmp)
        os.makedirs(os.path.join(self.tmp, "log", "20261201-1748"))
        self.fixture("ws-tsung.log", os.path.join("log", "20261201-1748", "tsung.log"))
        res = ws_tsung.parse("", "", self.tmp, spec)
        # the fixture: 2 connections closed by the server after 5 echoes each
        self.assertEqual((res.connections, res.sent, res.received), (10, 19, 18))
        self.assertEqual(res.errors, {"error_timeout": 1})
        self.assertAlmostEqual(res.latency.mean, 106.52, places=2)
        self.assertIsNone(res.latency.p50)


if __name__ == "__main__":
    unittest.main(verbosity=2)
