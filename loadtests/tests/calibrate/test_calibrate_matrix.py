#!/usr/bin/python3
"""The conformance matrix's verdicts and model (commands/calibrate_matrix.py) on
hand-made runs, and its scorecard (commands/calibrate_scorecard.py) on the data
they make: every threshold on both sides, the open- and closed-model truth of the
stall check worked out by hand, SKIP and `not installed` rows.

    cd loadtests && /usr/bin/python3 -B -m tests.calibrate.test_calibrate_matrix
"""
import contextlib
import io
import os
import shutil
import tempfile
import unittest


from loadlib.commands.calibrate import calibrate_command
from loadlib.commands.calibrate import matrix as m
from loadlib.commands.calibrate import verdicts as v
from loadlib.commands.calibrate import scorecard as sc
from loadlib.tools import curl, hey
from tests import LOADTESTS


def run(requests=1000, server=None, connections=10, latency=None, errors=None, rate=None,
        cpu_s=0.5, duration_s=5.0, cores=None, failure=None):
    """A run as measure() returns it."""
    res = None if failure else {
        "requests": requests, "rps": requests / duration_s, "duration_s": duration_s,
        "cpu_s": cpu_s, "latency": dict({"mean": None, "p50": None, "p90": None, "p99": None,
                                         "max": None}, **(latency or {})),
        "errors": dict({"non2xx": 0, "connect": 0, "timeout": 0, "reset": 0, "other": 0},
                       **(errors or {}))}
    return {"spec": {"connections": connections, "rate": rate}, "result": res,
            "failure": failure, "server": dict({"requests": requests}, **(server or {})),
            "wall_s": duration_s, "cores": cores or {}}


class Counts(unittest.TestCase):
    def test_in_flight_difference_passes(self):
        self.assertEqual(v.judge_counts(run(1000, {"requests": 1010}))["verdict"], v.PASS)

    def test_more_than_in_flight_fails_and_names_the_server(self):
        rec = v.judge_counts(run(1000, {"requests": 1011}))
        self.assertEqual((rec["verdict"], rec["error"]), (v.FAIL, 11))
        self.assertIn("server's figure is right", rec["evidence"])

    def test_tool_counting_more_than_sent_fails(self):
        rec = v.judge_counts(run(1000, {"requests": 999}))
        self.assertEqual((rec["verdict"], rec["error"]), (v.FAIL, -1))

    def test_requests_failed_without_an_answer_fail(self):
        r = run(1, {"requests": 1}, errors={"other": 4499})
        r["result"]["notes"] = ["known curl 7.88 bug (curl issue 10634, fixed in 8.0): ..."]
        rec = v.judge_counts(r)
        self.assertEqual(rec["verdict"], v.FAIL)
        self.assertIn("4499 requests failed without an answer (4499 other)", rec["detail"])
        self.assertIn("curl issue 10634", rec["evidence"])

    def test_a_tool_that_did_not_run_fails(self):
        rec = v.judge_counts(run(failure="exited with 1"))
        self.assertEqual(rec["verdict"], v.FAIL)
        self.assertIn("exited with 1", rec["detail"])


class Latency(unittest.TestCase):
    def test_truth_is_uniform_on_40_60(self):
        self.assertEqual(v.LATENCY_TRUTH, {"p50": 50.0, "p90": 58.0, "p99": 59.8})

    def test_thresholds(self):
        lat = lambda e: {"p50": 50 + e, "p90": 58.0, "p99": 59.8, "mean": 50.0}
        self.assertEqual(v.judge_latency(run(latency=lat(2.0)))["verdict"], v.PASS)
        self.assertEqual(v.judge_latency(run(latency=lat(2.1)))["verdict"], v.WARN)
        self.assertEqual(v.judge_latency(run(latency=lat(-10.0)))["verdict"], v.WARN)
        rec = v.judge_latency(run(latency=lat(10.5), server={"mean_ms": 50.1},
                                  cores={"0": {"busy": 0.97}, "1": {"busy": 0.3}}))
        self.assertEqual((rec["verdict"], rec["error"]), (v.FAIL, 10.5))
        self.assertIn("50.10 ms against a true 50", rec["evidence"])
        self.assertIn("CPU 0, which was 97% busy", rec["evidence"])

    def test_the_other_run_is_named(self):
        r = run(latency={"p50": 50.5, "p90": 58.2, "p99": 60.1})
        r["other_run"] = run(server={"mean_ms": 53.2})
        self.assertIn("in the other its mean was 53.20 ms", v.judge_latency(r)["detail"])

    def test_missing_percentiles_are_not_reported(self):
        rec = v.judge_latency(run(latency={"mean": 51.0}))
        self.assertEqual(rec["verdict"], v.WARN)
        self.assertIn("p50, p90, p99 not reported", rec["detail"])
        rec = v.judge_latency(run(latency={"p50": 50.5, "mean": 50.4}))
        self.assertEqual(rec["verdict"], v.PASS)
        self.assertIn("p90, p99 not reported", rec["detail"])


class Errors(unittest.TestCase):
    def test_within_connections_passes(self):
        rec = v.judge_errors(run(1000, {"requests": 1000, "status_503": 250},
                                 errors={"non2xx": 245}))
        self.assertEqual((rec["verdict"], rec["error"]), (v.PASS, -5))
        self.assertEqual(rec["figures"]["server_share"], 0.25)

    def test_503s_counted_as_success_fail(self):
        rec = v.judge_errors(run(1000, {"requests": 1000, "status_503": 250}))
        self.assertEqual(rec["verdict"], v.FAIL)
        self.assertIn("counted them as successes", rec["evidence"])


class Connections(unittest.TestCase):
    def test_bounds(self):
        judge = lambda n: v.judge_connections(run(server={"connections_accepted": n}))["verdict"]
        self.assertEqual(judge(12), v.PASS)     # c + 2
        self.assertEqual(judge(13), v.WARN)
        self.assertEqual(judge(20), v.WARN)     # 2c
        self.assertEqual(judge(21), v.FAIL)


class Overhead(unittest.TestCase):
    def test_the_busier_process_is_the_bottleneck(self):
        # 10,000 requests in 1 s: tool 0.9 s CPU (90 µs each), server 0.5 s (50 µs)
        rec = v.judge_overhead(run(10000, {"requests": 10000, "cpu_s": 0.5}, cpu_s=0.9,
                                   duration_s=1.0))
        self.assertEqual((rec["verdict"], rec["figures"]["bottleneck"]), (v.WARN, "tool"))
        self.assertAlmostEqual(rec["figures"]["tool_cpu_us_per_request"], 90.0)
        self.assertAlmostEqual(rec["figures"]["server_cpu_us_per_request"], 50.0)
        rec = v.judge_overhead(run(10000, {"requests": 10000, "cpu_s": 0.95}, cpu_s=0.6,
                                   duration_s=1.0))
        self.assertEqual((rec["verdict"], rec["figures"]["bottleneck"]), (v.PASS, "notesd"))

    def test_full_cores_with_idle_processes_name_other_work(self):
        rec = v.judge_overhead(run(10000, {"requests": 10000, "cpu_s": 0.2}, cpu_s=0.3,
                                   duration_s=1.0, cores={"0": {"busy": 1.0}, "1": {"busy": 0.99}}))
        self.assertEqual(rec["figures"]["bottleneck"], "other work")


class Omission(unittest.TestCase):
    def test_truth_by_hand(self):
        # 5 stalls of 200 ms in 5 s: 20% of the time; open model: x_q = 200 - (1-q)*5000/5
        t = v.omission_truth(5, 1.0, 5.0, 10, 10000)
        self.assertEqual(t["stall_ms"], 200.0)
        self.assertEqual(t["share"], 0.2)
        self.assertEqual(t["open_p90_extra_ms"], 100.0)
        self.assertEqual(t["open_p99_extra_ms"], 190.0)
        self.assertEqual(t["open_mean_extra_ms"], 20.0)       # 5 * 200^2 / (2 * 5000)
        self.assertEqual(t["closed_delayed_share"], 0.005)    # 10 connections * 5 / 10000

    def omission(self, latency, rate=None, tool="h2load", requests=10000):
        r = run(requests, {"stalls": 5, "stall_s": 1.0}, latency=latency, rate=rate)
        return v.judge_omission(r, tool)

    def test_closed_tool_hiding_the_stalls_is_warned(self):
        rec = self.omission({"p50": 0.3, "p90": 1.0, "p99": 5.0, "max": 205.0})
        self.assertEqual(rec["verdict"], v.WARN)
        self.assertIn("0.50% of its 10000 requests", rec["evidence"])

    def test_closed_tool_missing_even_max_fails(self):
        rec = self.omission({"p50": 0.3, "p90": 1.0, "p99": 5.0, "max": 100.0})
        self.assertEqual(rec["verdict"], v.FAIL)

    def test_rate_driven_tool_must_show_p90_and_p99(self):
        shows = {"p50": 1.0, "p90": 90.0, "p99": 185.0, "max": 200.0}
        self.assertEqual(self.omission(shows, rate=200.0, tool="artillery")["verdict"], v.PASS)
        tail_only = {"p50": 1.0, "p90": 10.0, "p99": 185.0, "max": 200.0}
        rec = self.omission(tail_only, rate=200.0, tool="hey", requests=1000)
        self.assertEqual(rec["verdict"], v.FAIL)
        self.assertIn("coordinated omission", rec["evidence"])

    def test_mean_only_tools_are_judged_on_the_mean(self):
        # open mean extra is 20 ms: half of it is the bar
        self.assertEqual(self.omission({"mean": 12.0}, rate=200.0, tool="httperf")["verdict"],
                         v.PASS)
        self.assertEqual(self.omission({"mean": 3.0}, rate=200.0, tool="httperf")["verdict"],
                         v.FAIL)

    def test_no_stall_counted_fails(self):
        r = run(1000, {"stalls": 0, "stall_s": 0.0}, latency={"p99": 1.0})
        r["during"] = {"asked": None, "why": "the tool sent nothing"}
        rec = v.judge_omission(r, "ab")
        self.assertEqual(rec["verdict"], v.FAIL)
        self.assertIn("the tool sent nothing", rec["detail"])


def schedule_run(arrivals_us, rate=200.0, lost=0):
    """A schedule run as schedule_run() returns it, from arrival times in µs."""
    from loadlib import journal
    r = run(len(arrivals_us), rate=rate)
    r["journal"] = {"records": len(arrivals_us), "lost": lost,
                    "schedule": journal.schedule(arrivals_us, rate, poisson=True),
                    "connections": {"connections": 10, "per_connection_median": 100}}
    return r


class Schedule(unittest.TestCase):
    T0 = 1_800_000_000_000_000

    def test_a_staggered_constant_rate_passes(self):
        rec = v.judge_schedule(schedule_run([self.T0 + i * 5000 for i in range(1000)]))
        self.assertEqual((rec["verdict"], rec["error"]), (v.PASS, 0.0))

    def test_connections_in_lockstep_are_bursts(self):
        # 200/s as ten requests at once every 50 ms: every window on rate, CV about 3
        burst = [self.T0 + (i // 10) * 50_000 + i % 10 for i in range(1000)]
        rec = v.judge_schedule(schedule_run(burst))
        self.assertEqual(rec["verdict"], v.WARN)
        self.assertIn("CV", rec["detail"])

    def test_a_half_second_pause_fails_on_gap_and_windows(self):
        gap = [self.T0 + i * 5000 for i in range(1000) if not 200 <= i < 700]
        rec = v.judge_schedule(schedule_run(gap))
        self.assertEqual(rec["verdict"], v.FAIL)

    def test_a_slow_tool_is_judged_on_its_rate(self):
        slow = [self.T0 + i * 5800 for i in range(860)]          # 172/s of 200
        self.assertEqual(v.judge_schedule(schedule_run(slow))["verdict"], v.WARN)

    def test_a_record_the_counter_does_not_match_is_a_warning(self):
        r = schedule_run([self.T0 + i * 5000 for i in range(1000)])
        r["server"]["requests"] = 1001
        rec = v.judge_schedule(r)
        self.assertEqual(rec["verdict"], v.WARN)
        self.assertIn("http_requests_total grew by 1001", rec["detail"])

    def test_a_lost_record_is_a_warning_not_a_verdict(self):
        rec = v.judge_schedule(schedule_run([self.T0 + i * 5000 for i in range(1000)], lost=3))
        self.assertEqual(rec["verdict"], v.WARN)

    def test_the_scorecard_section(self):
        data = Scorecard().data()
        runs = schedule_run([self.T0 + i * 5000 for i in range(1000)])
        data["tools"][0]["checks"]["schedule"] = v.judge_schedule(runs)
        data["tools"][0]["runs"]["schedule"] = runs
        text = sc.markdown(data)
        self.assertIn("## 8. Schedule", text)
        self.assertIn("| hey | -q per worker | 200 | 200.0 (+0.0%) | 100% | 200–200 | 5.0 | 0.00 |",
                      text)


def ramp_arrivals(t0_us, drop=None):
    """Arrivals exactly on the matrix's ramp (50/s rising to 250/s in 3 s, then 2 s at
    250/s): the k-th where the ramp's integral reaches k; none in [drop) seconds."""
    out, k = [], 0
    while True:
        if k <= 450:        # 50 t + (100 / 3) t^2 = k
            t = (-50 + (2500 + 4 * (100 / 3) * k) ** 0.5) / (2 * 100 / 3)
        else:
            t = 3 + (k - 450) / 250
        if t >= 5:
            return out
        if not (drop and drop[0] <= t < drop[1]):
            out.append(t0_us + int(t * 1e6))
        k += 1


def ramp_run(arrivals_us, lost=0):
    """A ramp run as ramp_run() returns it."""
    from loadlib import journal
    r = run(len(arrivals_us), rate=m.RAMP_START)
    r["spec"]["ramp"] = [list(stage) for stage in m.RAMP_STAGES]
    r["journal"] = {"records": len(arrivals_us), "lost": lost, "ramp": journal.ramp_error(
        arrivals_us, ((0, m.RAMP_START),) + m.RAMP_STAGES, min(arrivals_us))}
    return r


class Ramp(unittest.TestCase):
    T0 = 1_800_000_000_000_000

    def test_arrivals_on_the_ramp_pass(self):
        rec = v.judge_ramp(ramp_run(ramp_arrivals(self.T0)))
        self.assertEqual(rec["verdict"], v.PASS, rec["detail"])
        self.assertLessEqual(rec["error"], 4.0)

    def test_a_stalled_window_fails_the_largest_error(self):
        # nothing sent for 300 ms at the top of the ramp: one window 60% short
        rec = v.judge_ramp(ramp_run(ramp_arrivals(self.T0, drop=(3.6, 3.9))))
        self.assertEqual(rec["verdict"], v.WARN, rec["detail"])
        self.assertIn("at most", rec["detail"])

    def test_a_constant_rate_is_not_a_ramp(self):
        flat = [self.T0 + i * 5000 for i in range(1000)]       # 200/s for 5 s
        self.assertEqual(v.judge_ramp(ramp_run(flat))["verdict"], v.FAIL)

    def test_a_record_the_counter_does_not_match_is_a_warning(self):
        r = ramp_run(ramp_arrivals(self.T0))
        r["server"]["requests"] = r["journal"]["records"] + 2
        self.assertIn("http_requests_total grew by", v.judge_ramp(r)["detail"])

    def test_the_scorecard_tables(self):
        data = Scorecard().data()
        rr = ramp_run(ramp_arrivals(self.T0))
        data["tools"][0]["checks"]["ramp"] = v.judge_ramp(rr)
        data["tools"][0]["runs"]["ramp"] = rr
        own = schedule_run([self.T0 + i * 5000 for i in range(1000)])
        data["own_schedule"] = {"tool": "openload.py", "check": v.judge_schedule(own), "run": own}
        text = sc.markdown(data)
        self.assertIn("| openload.py (ours) | --rate | 200 | 200.0 (+0.0%) | 100% |", text)
        self.assertIn("**Ramps.**", text)
        self.assertRegex(text, r"\| hey \|  \| 50 → 250 \(3 s\) → 250 \(2 s\) \| 950 \| "
                               r"\d\.\d% \| \d+\.\d% \| PASS \|")
        merged = sc.merge(Scorecard().data(), data)
        self.assertEqual(merged["own_schedule"], data["own_schedule"])
        self.assertIn("openload.py", merged["merged"][-1]["tools"])


class Specs(unittest.TestCase):
    def test_count_only_tools_get_a_count(self):
        spec = m.spec_for(curl, "http://127.0.0.1:1/json", 10, 3, count_rps=1500)
        self.assertEqual(spec.requests, 4500)
        spec = m.spec_for(hey, "http://127.0.0.1:1/json", 10, 3, count_rps=1500)
        self.assertIsNone(spec.requests)
        self.assertEqual(spec.duration_s, 3)

    def test_run_limit_leaves_room_for_start_up(self):
        spec = m.spec_for(hey, "http://127.0.0.1:1/json", 10, 6, count_rps=1500)
        self.assertEqual(m.run_limit(spec), 6 + 10 + m.TOOL_START_S)
        spec = m.spec_for(curl, "http://127.0.0.1:1/json", 10, 6, count_rps=1500)  # 9000 requests
        self.assertEqual(m.run_limit(spec), 9000 / 200 + 10 + m.TOOL_START_S)

    def test_selection(self):
        names = [n for n, _, _ in m.selected(["all"])]
        self.assertIn("k6", names)
        self.assertIn("wrk", names)
        self.assertEqual([n for n, _, _ in m.selected(["hey", "ab"])], ["ab", "hey"])
        with self.assertRaises(ValueError):
            m.selected(["jmeter"])


class Scorecard(unittest.TestCase):
    def data(self):
        counts = run(1000, {"requests": 1004})
        counts["result"]["notes"] = ["hey's CSV gives 0.1 ms resolution"]
        lat = run(latency={"p50": 50.4, "p90": 58.3, "p99": 61.0, "mean": 50.3, "max": 62.0},
                  server={"mean_ms": 50.1})
        lat["result"]["notes"] = ["hey's CSV gives 0.1 ms resolution", "hey dropped 3"]
        over = run(10000, {"requests": 10000, "cpu_s": 0.5}, cpu_s=0.9, duration_s=1.0)
        checks = {"counts": v.judge_counts(counts), "latency": v.judge_latency(lat),
                  "errors": v.skipped("errors", "server lacks the /fault route"),
                  "overhead": v.judge_overhead(over)}
        return {"started": "2026-11-30T22:00:00Z", "seconds_total": 12.0, "smoke": False,
                "machine": {"cores": 2}, "pinning": "notesd on CPU 1, tools on CPU 0",
                "features": {"fault": False, "stall": True}, "server_timing": [(50.6, 50.1)],
                "tools": [{"tool": "hey", "installed": True, "version": "0.1.4", "why": "",
                           "checks": checks, "runs": {"counts": counts, "latency": lat,
                                                      "overhead": over}},
                          {"tool": "k6", "installed": False, "version": None,
                           "why": "not installed: install it from its upstream package"}],
                "protocols": []}

    def test_markdown_json_and_charts(self):
        with tempfile.TemporaryDirectory() as d:
            text = sc.write(self.data(), os.path.join(d, "out"), os.path.join(d, "r.md"),
                            os.path.join(d, "r.json"))
            files = sorted(os.listdir(os.path.join(d, "out")))
            self.assertTrue(os.path.exists(os.path.join(d, "r.json")))
            self.assertTrue(os.path.exists(os.path.join(d, "r-latency-error.svg")))
            with open(os.path.join(d, "r.md")) as f:
                self.assertIn("[r-cpu-per-request.svg](r-cpu-per-request.svg)", f.read())
        self.assertEqual(files, ["cpu-per-request.svg", "latency-error.svg", "scorecard.json",
                                 "scorecard.md"])
        self.assertIn("| hey | 0.1.4 | PASS (+4) | PASS (+1.2) | SKIP |", text)
        self.assertIn("| k6 | — | not installed: install it from its upstream package |", text)
        self.assertIn("SKIP (server lacks the /fault route)", text)
        self.assertIn("lacking: fault", text)
        # a caveat of every run once; one of some runs with those runs named
        self.assertIn("- **hey**: hey's CSV gives 0.1 ms resolution (in counts, latency); "
                      "hey dropped 3 (in latency).", text)

    def test_the_report_names_its_data_and_is_written_again_from_it(self):
        data = self.data()
        data["websocket"] = {"started": "2026-11-30T22:05:00Z", "seconds_total": 3.0,
                             "loadavg_start": [0.1, 0.1, 0.1], "tools": []}
        with tempfile.TemporaryDirectory() as d:
            sc.write(data, os.path.join(d, "out"), os.path.join(d, "r.md"),
                     os.path.join(d, "r.json"))
            for folder, name, source in ((d, "r.md", "r.json"),
                                         (os.path.join(d, "out"), "scorecard.md",
                                          "scorecard.json")):
                with open(os.path.join(folder, name)) as f:
                    written = f.read()
                self.assertTrue(written.startswith(
                    f"<!-- generated by loadtests/calibrate from {source}; do not edit: "
                    f"calibrate --report-from {source} writes it again -->\n# Load-tool"))
                self.assertIn("## WebSocket column", written)
                os.remove(os.path.join(folder, name))
                with contextlib.redirect_stdout(io.StringIO()):
                    self.assertEqual(calibrate_command.main(["--report-from",
                                                   os.path.join(folder, source)]), 0)
                with open(os.path.join(folder, name)) as f:
                    self.assertEqual(f.read(), written, name)

    def test_the_committed_scorecards_are_what_their_data_makes(self):
        """calibration/latest-*.md and the charts are calibrate's report of the JSON beside
        them; a change of the writer or of the data without writing them again fails here."""
        committed = os.path.join(LOADTESTS, "calibration")
        with tempfile.TemporaryDirectory() as d:
            for name in ("latest-scorecard.json", "latest-ws-scorecard.json"):
                shutil.copy(os.path.join(committed, name), d)
                sc.rewrite(os.path.join(d, name))
            written = sorted(n for n in os.listdir(d) if not n.endswith(".json"))
            self.assertEqual(written, ["latest-scorecard-cpu-per-request.svg",
                                       "latest-scorecard-latency-error.svg",
                                       "latest-scorecard.md", "latest-ws-scorecard.md"])
            for name in written:
                with open(os.path.join(d, name)) as f, \
                        open(os.path.join(committed, name)) as g:
                    self.assertEqual(f.read(), g.read(),
                                     f"calibration/{name} is not what its JSON makes: "
                                     "loadtests/calibrate --report-from on that JSON writes it")


    def test_the_counts_section_shows_the_journal(self):
        data = self.data()
        self.assertIn("| hey | 10 | 1000 | 1004 | — | +4 | PASS |", sc.markdown(data))
        counts = run(1000, {"requests": 1004})
        counts["journal"] = {"records": 1004, "lost": 0}
        data["tools"][0]["checks"]["counts"] = v.judge_counts(counts)
        self.assertIn("| hey | 10 | 1000 | 1004 | 1004 | +4 | PASS |", sc.markdown(data))
        counts["journal"] = {"records": 990, "lost": 14}
        data["tools"][0]["checks"]["counts"] = v.judge_counts(counts)
        self.assertIn("| hey | 10 | 1000 | 1004 | 990 (14 lost) | +4 | PASS |", sc.markdown(data))

    def test_merge_replaces_the_rows_of_the_tools_run_again(self):
        base = self.data()
        base["loadavg_start"], base["loadavg_end"] = [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]
        base["protocols"] = [{"tool": "k6", "protocol": "tls", "installed": False,
                              "why": "not installed", "checks": {}}]
        counts = run(500, {"requests": 500})
        new = {"started": "2026-12-01T10:00:00Z", "seconds_total": 30.0, "smoke": False,
               "loadavg_start": [3.0, 3.0, 3.0], "loadavg_end": [4.0, 4.0, 4.0],
               "features": base["features"],
               "tools": [{"tool": "k6", "installed": True, "version": "2.2.0", "why": "",
                          "checks": {"counts": v.judge_counts(counts)},
                          "runs": {"counts": counts}}],
               "protocols": [{"tool": "k6", "protocol": "tls", "installed": True, "why": "",
                              "checks": {"counts": v.judge_counts(counts),
                                         "latency": v.skipped("latency", "x")}}]}
        merged = sc.merge(base, new)
        self.assertEqual([t["tool"] for t in merged["tools"]], ["hey", "k6"])
        self.assertEqual(merged["tools"][0], base["tools"][0])        # hey: the earlier run's
        self.assertTrue(merged["tools"][1]["installed"])               # k6: the new run's
        self.assertEqual(merged["protocols"], new["protocols"])
        self.assertEqual(merged["started"], base["started"])
        text = sc.markdown(merged)
        self.assertIn("| k6 | 2.2.0 | PASS (+0) |", text)
        self.assertIn("| hey | 0.1.4 | PASS (+4) |", text)
        self.assertIn("- rows of hey: the run started 2026-11-30T22:00:00Z (load average "
                      "1.00 1.00 1.00 at its start, 2.00 2.00 2.00 at its end)", text)
        self.assertIn("- rows of k6: the run started 2026-12-01T10:00:00Z", text)
        # merged again: the bookkeeping carries over
        again = sc.merge(merged, dict(new, started="2026-12-02T10:00:00Z"))
        self.assertEqual([r["started"] for r in again["merged"]],
                         ["2026-11-30T22:00:00Z", "2026-12-02T10:00:00Z"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
