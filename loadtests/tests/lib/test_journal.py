"""loadlib.journal on synthetic records: schedules, ramps, connections, joins and the
tools' per-request logs.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_journal
"""
import os
import random
import tempfile
import unittest

from loadlib import journal

T0 = 1_800_000_000_000_000           # a wall-clock start, µs


def rec(started_us, conn=1, dur_us=500, request_id=None, conn_at=None, loop=0, kind="http"):
    return {"kind": kind, "loop": loop, "conn": conn, "conn_at_us": conn_at or T0,
            "started_us": started_us, "ended_us": started_us + dur_us, "request_id": request_id,
            "route": "/json", "seq": 0}


class Schedule(unittest.TestCase):
    def test_a_perfect_constant_rate(self):
        arrivals = [T0 + i * 5000 for i in range(1000)]           # 200/s for 5 s
        s = journal.schedule(arrivals, 200)
        self.assertEqual(s["arrivals"], 1000)
        self.assertAlmostEqual(s["achieved_rate"], 200, places=6)
        self.assertEqual(s["windows_on_rate"], 1.0)
        self.assertEqual(s["gap_cv"], 0)
        self.assertAlmostEqual(s["longest_gap_ms"], 5.0)
        self.assertEqual(s["window_rate_p5"], 200)

    def test_a_stall_shows_as_the_longest_gap_and_empty_windows(self):
        arrivals = [T0 + i * 5000 for i in range(1000) if not 400 <= i < 500]   # 0.5 s silent
        s = journal.schedule(arrivals, 200)
        self.assertAlmostEqual(s["longest_gap_ms"], 505.0)
        self.assertLess(s["windows_on_rate"], 0.92)
        self.assertEqual(s["window_rate_p5"], 0)

    def test_bursts_at_the_right_mean_rate_are_not_on_rate(self):
        # 200/s on average, but as 100 requests at once every half second
        arrivals = [T0 + (i // 100) * 500_000 + i % 100 for i in range(1000)]
        s = journal.schedule(arrivals, 200, trim_ms=0)
        self.assertLess(s["windows_on_rate"], 0.3)
        self.assertGreater(s["gap_cv"], 5)

    def test_poisson_arrivals_fit_the_exponential_and_periodic_ones_do_not(self):
        rng = random.Random(7)
        t, arrivals = T0, []
        for _ in range(2000):
            t += int(rng.expovariate(200) * 1e6)
            arrivals.append(t)
        s = journal.schedule(arrivals, 200, poisson=True)
        self.assertGreater(s["ks_p"], 0.01)
        self.assertAlmostEqual(s["gap_cv"], 1.0, delta=0.1)
        periodic = journal.schedule([T0 + i * 5000 for i in range(2000)], 200, poisson=True)
        self.assertLess(periodic["ks_p"], 1e-6)

    def test_the_kolmogorov_p_value_agrees_with_scipy(self):
        try:
            from scipy import stats
        except ImportError:
            self.skipTest("python3-scipy is not installed")
        rng = random.Random(3)
        for rate, n in ((200, 50), (50, 400), (1000, 3000)):
            gaps = [rng.expovariate(rate * 1.1) for _ in range(n)]
            d, p = journal.ks_exponential(gaps, rate)
            ref = stats.kstest(gaps, "expon", args=(0, 1 / rate), method="asymp")
            self.assertAlmostEqual(d, ref.statistic, places=9)
            self.assertAlmostEqual(p, ref.pvalue, delta=0.02)

    def test_too_few_arrivals(self):
        self.assertEqual(journal.schedule([T0], 10), {"arrivals": 1, "rate": 10})


class Ramp(unittest.TestCase):
    def ramp(self, stages, step_s=0.0005):
        """Arrivals that follow the ramp exactly: the integral of the rate, one request
        each time it passes a whole number."""
        out, t, done, total = [], 0.0, 0, 0.0
        end = sum(s for s, _ in stages)
        rate_at = lambda x: journal_rate(stages, x)
        while t < end:
            total += rate_at(t) * step_s
            while total >= done + 1:
                done += 1
                out.append(T0 + int(t * 1e6))
            t += step_s
        return out

    def test_an_exact_ramp_has_no_error_and_a_flat_rate_has_much(self):
        stages = [(0, 10), (2, 200), (2, 200)]
        exact = journal.ramp_error(self.ramp(stages), stages, T0)
        self.assertLess(exact["max_error"], 0.15)
        flat = journal.ramp_error([T0 + i * 5000 for i in range(800)], stages, T0)
        self.assertGreater(flat["max_error"], 1.0)


def journal_rate(stages, at):
    t, prev = 0.0, stages[0][1]
    for seconds, target in stages:
        if seconds and at <= t + seconds:
            return prev + (target - prev) * (at - t) / seconds
        t += seconds
        prev = target
    return prev


class Connections(unittest.TestCase):
    def test_requests_per_connection_and_lifetimes(self):
        records = ([rec(T0 + i * 1000, conn=1) for i in range(10)]
                   + [rec(T0 + 2_000_000, conn=2, conn_at=T0 + 1_000_000)]
                   + [rec(T0, conn=1, loop=1)]
                   + [rec(T0 + 5, conn=9, kind="ws_in")])
        c = journal.connections(records)
        self.assertEqual((c["connections"], c["requests"]), (3, 12))
        self.assertEqual((c["per_connection_min"], c["per_connection_max"]), (1, 10))
        self.assertAlmostEqual(c["lifetime_max_s"], 1.0005, places=3)


class Join(unittest.TestCase):
    def test_by_request_id_with_one_request_missing_on_each_side(self):
        records = [rec(T0 + i * 1000, request_id=f"r{i}", dur_us=2000) for i in range(10)]
        tool = [{"start_us": T0 + i * 1000, "latency_ms": 3.5, "request_id": f"r{i}"}
                for i in range(1, 11)]
        j = journal.join(tool, records)
        self.assertEqual((j["by"], j["matched"], j["tool_only"], j["server_only"]),
                         ("request id", 9, 1, 1))
        self.assertAlmostEqual(j["client_ms"]["p50"], 1.5)

    def test_by_order_counts_the_pairs_it_cannot_tell_apart(self):
        records = [rec(T0 + i * 5000) for i in range(10)]
        records[4]["started_us"] = records[3]["started_us"] + 200   # 0.2 ms after its neighbour
        tool = [{"start_us": T0 + i * 5000, "latency_ms": 1.0, "request_id": None}
                for i in range(10)]
        j = journal.join(tool, records)
        self.assertEqual((j["by"], j["matched"], j["tool_only"], j["server_only"]), ("order", 10, 0, 0))
        self.assertEqual(j["ambiguous"], 1)
        self.assertAlmostEqual(j["client_ms"]["max"], 0.5)


class ToolLogs(unittest.TestCase):
    def write(self, text):
        fd, path = tempfile.mkstemp()
        with os.fdopen(fd, "w") as f:
            f.write(text)
        self.addCleanup(os.unlink, path)
        return path

    def test_hey_csv(self):
        path = self.write("response-time,DNS+dialup,DNS,Request-write,Response-delay,"
                          "Response-read,status-code,offset\n0.0021,0.0001,0,0,0.002,0,200,0.5\n")
        self.assertEqual(journal.hey_csv(path, T0),
                         [{"start_us": T0 + 500_000, "latency_ms": 2.1, "request_id": None}])

    def test_h2load_log(self):
        path = self.write(f"{T0}\t200\t1500\n{T0 + 10}\t200\t700\n")
        got = journal.h2load_log(path)
        self.assertEqual([(g["start_us"], g["latency_ms"]) for g in got],
                         [(T0, 1.5), (T0 + 10, 0.7)])

    def test_ab_gnuplot(self):
        path = self.write("starttime\tseconds\tctime\tdtime\tttime\twait\n"
                          "Thu Dec  3 10:00:00 2026\t1800000000\t0\t2\t3\t2\n")
        self.assertEqual(journal.ab_gnuplot(path),
                         [{"start_us": 1800000000 * 1_000_000, "latency_ms": 3.0,
                           "request_id": None}])

    def test_k6_csv_takes_durations_and_the_request_id_tag(self):
        path = self.write("metric_name,timestamp,metric_value,check,error,extra_tags\n"
                          "http_reqs,1800000000,1,,,rid=a1\n"
                          "http_req_duration,1800000000,2.5,,,rid=a1&x=y\n")
        got = journal.k6_csv(path, "rid")
        self.assertEqual(len(got), 1)
        self.assertEqual((got[0]["latency_ms"], got[0]["request_id"]), (2.5, "a1"))


if __name__ == "__main__":
    unittest.main()
