"""judge's figures, checks and outputs on synthetic runs (no server): the columns a
Collector keeps, judged under each model (an open rate, a ramp, a closed model, none),
the claims an adapter's ToolResult gives, the per-request logs judge reads (its own CSV,
k6's, hey's, h2load's, ab's: each told from its first line), the pictures bounded in
size whatever the run, the summary and the page.

    cd loadtests && /usr/bin/python3 -B -m tests.judge.test_report
"""
import argparse
import os
import tempfile
import unittest

import numpy as np

from loadlib import journal, journal_pages
from loadlib.commands.judge import judge_command, judge_figures, page
from loadlib.judgement import Model
from loadlib.tools.base import Latency, ToolResult

T0 = 1_800_000_000_000_000
HEADER = ",".join(journal_pages.FIELDS) + "\n"


def columns(arrivals, conns=10, held_us=80, status=200, answered_us=None):
    """A run's columns as Collector keeps them: arrivals (µs) spread over `conns`
    keep-alive connections, each request held `held_us` and answered after
    `answered_us` (default: at its end)."""
    answered_us = held_us if answered_us is None else answered_us
    lines = [f"{i},0,http,{i % conns + 1},h1,0,0,GET,/json,{status},{T0 - 1000},{t},{t},"
             f"{t + held_us},0,0,{answered_us},0,253,,\"r{i}\"\n" for i, t in enumerate(arrivals)]
    c = journal_pages.Collector({0: 0}, want_ids=True)
    c.add(journal_pages.Source.parse(_Answer(HEADER + "".join(lines)), 0, want_ids=True))
    return c.columns()


class _Answer:
    def __init__(self, text):
        self.body, self.status = text.encode(), 200
        self.headers = {"content-type": "text/csv", "journal-next": "0"}


def names(result):
    return {c["name"]: c for c in result["checks"]}


class Models(unittest.TestCase):
    def test_an_open_rate_kept(self):
        cols = columns(T0 + np.arange(1000) * 5000)               # 200/s for 5 s
        result = judge_figures.judge(cols, Model(kind="open", rate=200, connections=10,
                                           duration_s=5), counted=1000)
        checks = names(result)
        self.assertEqual((result["verdict"], result["requests"]), ("PASS", 1000))
        self.assertEqual(checks["connections"]["figures"]["connections"], 10)
        self.assertEqual(checks["journal"]["verdict"], "PASS")
        self.assertAlmostEqual(result["figures"]["server_latency_ms"]["p50"], 0.08)
        self.assertEqual(result["figures"]["by_route"], {"GET /json": 1000})

    def test_a_ramp(self):
        m = Model(kind="ramp", ramp=(50, 250, 3), duration_s=5)
        grid = np.arange(0, 5, 1e-4)
        integral = np.cumsum(np.interp(grid, [0, 3, 5], [50, 250, 250])) * 1e-4
        arrivals = T0 + (grid[np.searchsorted(integral, np.arange(1, integral[-1]))] * 1e6)
        result = judge_figures.judge(columns(arrivals.astype(np.int64)), m)
        self.assertEqual(names(result)["schedule"]["verdict"], "PASS", names(result)["schedule"])
        flat = names(judge_figures.judge(columns(T0 + np.arange(900) * 5500), m))["schedule"]
        self.assertEqual(flat["verdict"], "FAIL", flat)
        self.assertIn("off the ramp", flat["reason"])

    def test_a_closed_model_and_none(self):
        cols = columns(T0 + np.arange(5000) * 100, conns=4, held_us=90)
        closed = judge_figures.judge(cols, Model(kind="closed", connections=4, requests=5000))
        self.assertEqual(closed["verdict"], "PASS", closed["checks"])
        self.assertEqual(names(closed)["schedule"]["figures"]["most_at_once"], 4)
        undeclared = judge_figures.judge(cols, Model())
        self.assertEqual(undeclared["verdict"], "WARN")
        self.assertIn("no model declared", names(undeclared)["schedule"]["reason"])

    def test_nothing_reached_the_server(self):
        result = judge_figures.judge(columns([]), Model(kind="open", rate=10))
        self.assertEqual((result["verdict"], result["requests"]), ("FAIL", 0))


class Claims(unittest.TestCase):
    def test_an_adapters_figures_are_its_claims_unless_given(self):
        args = argparse.Namespace(claimed_requests=None, claimed_p50=None, claimed_p99=2.0,
                                  claimed_rate=None)
        tool = ToolResult(tool="x", requests=990, rps=198.0, latency=Latency(p50=0.5, p99=9.0))
        self.assertEqual(judge_command.claims_of(args, tool),
                         {"requests": 990, "p50": 0.5, "p99": 2.0, "rate": 198.0})

    def test_claims_judged_in_the_run(self):
        cols = columns(T0 + np.arange(1000) * 5000, held_us=20_000)      # held 20 ms each
        result = judge_figures.judge(cols, Model(kind="open", rate=200),
                               claims={"requests": 1100, "p50": 5.0, "p99": 25.0, "rate": 260})
        checks = names(result)
        self.assertEqual(checks["claimed_requests"]["verdict"], "FAIL")
        self.assertEqual(checks["claimed_p50"]["verdict"], "FAIL")      # below the answers' 20
        self.assertEqual(checks["claimed_p99"]["verdict"], "PASS")
        self.assertEqual(checks["claimed_rate"]["verdict"], "FAIL")
        self.assertEqual(judge_command.EXIT[result["verdict"]], 1)


class Logs(unittest.TestCase):
    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="judge-logs-")
        self.addCleanup(lambda: [os.unlink(os.path.join(self.tmp, f)) for f in
                                 os.listdir(self.tmp)] and os.rmdir(self.tmp))

    def test_each_format_told_from_its_first_line(self):
        files = {
            "generic": "start_us,request_id,latency_us,status\n1800000000000000,r1,900,200\n",
            "k6": "metric_name,timestamp,metric_value,check,error,extra_tags\n"
                  "http_req_duration,1800000000,0.9,,,rid=r1\n",
            "hey": "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,"
                   "status-code,offset\n0.0009,0,0,0,0,0,200,0\n",
            "h2load": f"{T0}\t200\t900\n",
            "ab": "starttime\tseconds\tctime\tdtime\tttime\twait\nx\t1800000000\t0\t1\t1\t1\n"}
        for fmt, text in files.items():
            with self.subTest(fmt=fmt):
                path = self.write(fmt + ".log", text)
                self.assertEqual(journal.log_format(path), fmt)
                got, entries = journal.read_log(path, t0_us=T0, id_tag="rid")
                self.assertEqual((got, len(entries)), (fmt, 1))
        self.assertEqual(journal.read_log(self.write("g.csv", files["generic"]))[1][0],
                         {"start_us": T0, "latency_ms": 0.9, "request_id": "r1", "status": 200})
        with self.assertRaises(ValueError):
            journal.log_format(self.write("x.txt", "what is this\n"))

    def test_a_log_joined_by_request_id(self):
        arrivals = T0 + np.arange(200) * 5000
        log = journal.log_columns([{"start_us": int(t) - 50, "latency_ms": 0.3,
                                    "request_id": f"r{i}"} for i, t in enumerate(arrivals)
                                   if i != 7])
        result = judge_figures.judge(columns(arrivals), Model(kind="open", rate=200), log=log)
        j = names(result)["join"]
        self.assertEqual((j["figures"]["by"], j["figures"]["matched"],
                          j["figures"]["server_only"]), ("request id", 199, 1))
        self.assertAlmostEqual(j["figures"]["client_ms"]["p50"], 0.22)
        self.assertEqual(j["verdict"], "PASS")          # one missing: at most the in flight

    def test_a_late_end_at_the_server_is_not_the_clients_and_an_early_answer_is(self):
        # Answered after 0.5 ms, but the server read its clock for the end 4 ms later (a
        # pause after the last write): a client that logged 0.6 ms is honest.
        arrivals = T0 + np.arange(200) * 5000
        log = journal.log_columns([{"start_us": int(t) - 50, "latency_ms": 0.6,
                                    "request_id": f"r{i}"} for i, t in enumerate(arrivals)])
        late_end = columns(arrivals, held_us=4_500, answered_us=500)
        j = names(judge_figures.judge(late_end, Model(kind="open", rate=200), log=log))["join"]
        self.assertEqual((j["verdict"], j["figures"]["impossible"]), ("PASS", 0))
        # Answered only after 3 ms: 0.6 ms is below what every client waited.
        slow = columns(arrivals, held_us=4_500, answered_us=3_000)
        j = names(judge_figures.judge(slow, Model(kind="open", rate=200), log=log))["join"]
        self.assertEqual((j["verdict"], j["figures"]["impossible"]), ("FAIL", 200))
        self.assertIn("below the server's time to answer", j["reason"])


class Outputs(unittest.TestCase):
    def test_the_pictures_stay_small_and_the_page_is_written(self):
        rng = np.random.default_rng(1)
        arrivals = T0 + np.cumsum(rng.exponential(100, 200_000)).astype(np.int64)  # 10,000/s
        cols = columns(arrivals)
        m = Model(kind="open", rate=10_000, duration_s=20)
        result = judge_figures.judge(cols, m)
        result.update(model=m.to_dict(), server="http://127.0.0.1:1",
                      series=judge_figures.pictures(cols, m))
        s = result["series"]
        points = len(s["arrivals"]["t_s"])          # not a wall-clock limit: a chart's points
        self.assertLessEqual(points, judge_figures.CHART_POINTS + 1)
        self.assertEqual(len(s["gaps"]["seen"]), 40)
        self.assertEqual(sum(s["gaps"]["seen"]), len(arrivals) - 1)
        text = page.summary_text(result)
        self.assertTrue(text.startswith(f"judge: {result['verdict']}: 200,000 requests"), text)
        self.assertIn("schedule", text)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "run.html")
            page.write_page(result, path)
            with open(path) as f:
                html = f.read()
        self.assertEqual(html.count("<svg"), 4)
        self.assertIn("default-src 'none'", html)
        self.assertLess(len(html), 200_000)


if __name__ == "__main__":
    unittest.main(verbosity=2)
