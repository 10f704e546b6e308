"""loadlib.judgement on synthetic arrivals: what an open model allows (Poisson arrivals and
randomly phased paced connections pass, a metronome too; connections in lockstep and
each second's share in one burst do not, with the reason named), a claim of Poisson
arrivals held to a Kolmogorov-Smirnov test, ramps, a closed model, and the claims and
per-request logs held against the server. calibrate's check 8 gives the same verdicts
(one implementation). The arrivals are drawn from seeded generators, so every run
judges the same ones.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_judgement
"""
import unittest

import numpy as np

from loadlib import journal, judgement as j
from loadlib.commands.calibrate import verdicts

T0 = 1_800_000_000_000_000           # a wall-clock start, µs


def poisson(rate, seconds, seed):
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1e6 / rate, int(rate * seconds * 1.5)))
    return (T0 + t[t < seconds * 1e6]).astype(np.int64)


def phased(rate, seconds, connections, seed, same_phase=False):
    """`connections` each sending every connections/rate s, from random phases (or one)."""
    rng = np.random.default_rng(seed)
    period = connections / rate * 1e6
    out = []
    for _ in range(connections):
        start = 0.0 if same_phase else rng.uniform(0, period)
        out.append(np.arange(start, seconds * 1e6, period))
    return (T0 + np.sort(np.concatenate(out))).astype(np.int64)


def metronome(rate, seconds):
    return (T0 + np.arange(0, seconds * 1e6, 1e6 / rate)).astype(np.int64)


def per_second_bursts(rate, seconds):
    return (T0 + np.repeat(np.arange(seconds) * 1_000_000, int(rate))
            + np.tile(np.arange(int(rate)) * 20, seconds)).astype(np.int64)


def judged(arrivals, rate, poisson_claimed=False, duration=None, server_lag_ms=None):
    return j.schedule_check(j.schedule_figures(arrivals, rate, poisson=poisson_claimed,
                                               duration_s=duration), poisson=poisson_claimed,
                            server_lag_ms=server_lag_ms)


class OpenModel(unittest.TestCase):
    def test_poisson_arrivals_pass_at_every_rate(self):
        # at 10/s a gap of 300 ms is ordinary: the bound follows the rate
        for rate, seconds in ((10, 60), (50, 10), (200, 5), (2000, 3)):
            for seed in range(5):
                with self.subTest(rate=rate, seed=seed):
                    c = judged(poisson(rate, seconds, seed), rate, poisson_claimed=True,
                               duration=seconds)
                    self.assertEqual(c["verdict"], j.PASS, c)
                    self.assertAlmostEqual(c["figures"]["gap_cv"], 1.0, delta=0.25)

    def test_ten_connections_from_random_phases_pass_with_a_cv_near_one(self):
        cvs = []
        for seed in range(20):
            c = judged(phased(200, 5, 10, seed), 200, duration=5)
            self.assertEqual(c["verdict"], j.PASS, c)
            cvs.append(c["figures"]["gap_cv"])
        # the CV of ten random spacings: 0.88 on average, above 1 for one phase draw in four
        self.assertAlmostEqual(float(np.mean(cvs)), 0.9, delta=0.15)
        self.assertGreater(max(cvs), j.SCHEDULE_CV_PASS)

    def test_a_metronome_passes_but_is_no_poisson_process(self):
        self.assertEqual(judged(metronome(200, 5), 200)["verdict"], j.PASS)
        c = judged(metronome(200, 5), 200, poisson_claimed=True)
        self.assertEqual(c["verdict"], j.FAIL)
        self.assertIn("not Poisson arrivals", c["reason"])
        self.assertEqual(judged(phased(200, 5, 10, 1), 200, poisson_claimed=True)["verdict"],
                         j.FAIL)

    def test_connections_in_lockstep_warn_and_say_so(self):
        c = judged(phased(200, 5, 10, 0, same_phase=True), 200)
        self.assertEqual(c["verdict"], j.WARN, c)
        self.assertIn("bunched: about 10 arrivals at once, one every 50 ms", c["reason"])
        self.assertIn("lockstep", c["reason"])
        # three in lockstep are caught too, where their CV (1.41) alone would pass
        three = judged(phased(200, 5, 3, 0, same_phase=True), 200)
        self.assertEqual(three["verdict"], j.WARN, three)
        self.assertLess(three["figures"]["gap_cv"], j.RANDOM_PHASES_CV)

    def test_each_seconds_share_at_once_fails_as_bursts(self):
        c = judged(per_second_bursts(200, 5), 200)
        self.assertEqual(c["verdict"], j.FAIL, c)
        self.assertIn("bursts, about 200 arrivals each, one every 1000 ms", c["reason"])

    def test_a_stall_fails_on_its_gap_and_windows(self):
        t = metronome(200, 5)
        c = judged(t[(t < T0 + 1_000_000) | (t >= T0 + 3_500_000)], 200)
        self.assertEqual(c["verdict"], j.FAIL, c)
        self.assertIn("stalls", c["reason"])
        short = judged(t[(t < T0 + 2_000_000) | (t >= T0 + 2_600_000)], 200)
        self.assertEqual(short["verdict"], j.WARN, short)
        self.assertTrue(short["reason"].startswith("stalls: a longest gap of 605 ms"), short)

    def test_one_pause_is_the_gaps_to_judge_and_the_servers_own_is_not_the_tools(self):
        t = poisson(200, 5, 3)
        late = np.where(t > T0 + 2_000_000, np.maximum(t, T0 + 2_300_000), t)   # 300 ms
        c = judged(late, 200)
        self.assertEqual(c["verdict"], j.WARN, c)
        self.assertEqual(c["reason"].split(":")[0], "stalls")       # not "bunched": the CV
        self.assertLess(c["figures"]["gap_cv_clipped"], c["figures"]["gap_cv"])
        # the same arrivals where the server's loop was itself late by 300 ms
        self.assertEqual(judged(late, 200, server_lag_ms=300)["verdict"], j.PASS)

    def test_a_server_late_by_a_mean_gap_blurs_the_ks_test(self):
        c = judged(metronome(200, 5), 200, poisson_claimed=True, server_lag_ms=10)
        self.assertEqual(c["verdict"], j.WARN, c)
        self.assertIn("but the server itself was late by up to 10 ms", c["reason"])

    def test_a_short_count_over_the_declared_duration(self):
        # a metronome at the rate that stopped after 3 of the 5 s asked for
        c = judged(metronome(200, 3), 200, duration=5)
        self.assertEqual(c["verdict"], j.FAIL, c)
        self.assertIn("fewer arrivals than declared", c["reason"])
        self.assertEqual(judged(metronome(200, 3), 200)["verdict"], j.PASS)

    def test_too_few_arrivals(self):
        self.assertEqual(judged(metronome(200, 0.005), 200)["verdict"], j.FAIL)

    def test_the_bounds_are_the_fixed_ones_where_poisson_arrivals_stray_less(self):
        b = j.open_bounds(10_000, 200, poisson=True)
        self.assertEqual((b["rate"], b["gap_ms"]), (j.SCHEDULE_RATE_PASS, j.SCHEDULE_GAP_PASS_MS))
        self.assertAlmostEqual(b["cv"], j.SCHEDULE_CV_PASS + j.CV_FLOOR)
        self.assertEqual(j.open_bounds(10_000, 200)["cv"], j.RANDOM_PHASES_CV)
        small = j.open_bounds(100, 10)
        self.assertGreater(small["rate"], j.SCHEDULE_RATE_PASS)
        self.assertGreater(small["gap_ms"], 1000)


class CheckEight(unittest.TestCase):
    def run_of(self, arrivals):
        """A schedule run as calibrate's matrix records it."""
        return {"result": {"requests": len(arrivals)}, "spec": {"rate": 200.0},
                "server": {"requests": len(arrivals)},
                "journal": {"records": len(arrivals), "lost": 0,
                            "schedule": j.schedule_figures(arrivals, 200.0, poisson=True),
                            "connections": {}}}

    def test_calibrate_gives_judges_verdicts(self):
        for arrivals in (poisson(200, 5, 1), phased(200, 5, 10, 2),
                         phased(200, 5, 10, 0, same_phase=True), per_second_bursts(200, 5)):
            mine = judged(arrivals, 200)
            theirs = verdicts.judge_schedule(self.run_of(arrivals))
            self.assertEqual(theirs["verdict"], mine["verdict"])
            self.assertTrue(theirs["detail"].startswith(mine["figure"]), theirs["detail"])


class Ramp(unittest.TestCase):
    STAGES = [(0, 50), (3, 250), (2, 250)]

    def arrivals(self, seed=None):
        """On the ramp: exact (the k-th where its integral reaches k) or Poisson."""
        grid = np.arange(0, 5, 1e-4)
        rate = np.interp(grid, [0, 3, 5], [50, 250, 250])
        if seed is None:
            integral = np.cumsum(rate) * 1e-4
            return (T0 + grid[np.searchsorted(integral, np.arange(1, integral[-1]))] * 1e6
                    ).astype(np.int64)
        rng = np.random.default_rng(seed)
        return (T0 + grid[rng.random(len(grid)) < rate * 1e-4] * 1e6).astype(np.int64)

    def judged(self, t):
        return j.ramp_check(journal.ramp_error(t, self.STAGES, T0), len(t))

    def test_exact_and_poisson_ramps_pass(self):
        self.assertEqual(self.judged(self.arrivals())["verdict"], j.PASS)
        for seed in range(5):
            self.assertEqual(self.judged(self.arrivals(seed))["verdict"], j.PASS, seed)

    def test_a_pause_at_the_top_is_named(self):
        t = self.arrivals()
        c = self.judged(t[(t < T0 + 3_600_000) | (t >= T0 + 3_900_000)])
        self.assertEqual(c["verdict"], j.WARN, c)
        self.assertIn("a stall or a burst", c["reason"])

    def test_a_flat_rate_is_no_ramp(self):
        self.assertEqual(self.judged(metronome(150, 5))["verdict"], j.FAIL)

    def test_the_model_gives_the_stages(self):
        m = j.Model(kind="ramp", ramp=(50, 250, 3), duration_s=5)
        self.assertEqual(m.stages(), self.STAGES)
        self.assertEqual((m.rate_at(1.5), m.rate_at(4)), (150, 250))
        self.assertIn("ramp from 50/s to 250/s in 3 s", m.describe())


class Closed(unittest.TestCase):
    def figures(self, at_once, connections=None, idle_ms=0.5):
        return {"rate": 1000.0, "most_at_once": at_once, "connections": connections or at_once,
                "idle_ms": idle_ms}

    def test_connections_against_the_declared_ones(self):
        m = j.Model(kind="closed", connections=10)
        self.assertEqual(j.closed_check(self.figures(10), m)["verdict"], j.PASS)
        self.assertEqual(j.closed_check(self.figures(10 + j.CONN_SPARE + 1), m)["verdict"],
                         j.FAIL)
        c = j.closed_check(self.figures(6), m)
        self.assertEqual(c["verdict"], j.WARN)
        self.assertIn("only 6 of the 10", c["reason"])

    def test_the_tools_own_pause(self):
        c = j.closed_check(self.figures(10, idle_ms=250), j.Model(kind="closed"))
        self.assertEqual(c["verdict"], j.WARN)
        self.assertIn("the tool paused", c["reason"])


class Claims(unittest.TestCase):
    def test_a_count_may_miss_the_requests_in_flight(self):
        self.assertEqual(j.claimed_count_check(995, 1000, 10)["verdict"], j.PASS)
        c = j.claimed_count_check(1100, 1000, 10)
        self.assertEqual(c["verdict"], j.FAIL)
        self.assertIn("100 requests claimed that never reached the server", c["reason"])
        self.assertEqual(j.claimed_count_check(900, 1000, 10)["verdict"], j.FAIL)

    def test_a_percentile_below_the_servers_is_impossible(self):
        self.assertEqual(j.claimed_latency_check("p99", 20.0, 20.5)["verdict"], j.PASS)
        c = j.claimed_latency_check("p99", 12.0, 20.5)
        self.assertEqual(c["verdict"], j.FAIL)
        self.assertIn("impossible", c["reason"])

    def test_a_rate_the_journal_does_not_show(self):
        self.assertEqual(j.claimed_rate_check(190.0, 200.0, 1000)["verdict"], j.PASS)
        self.assertEqual(j.claimed_rate_check(250.0, 200.0, 1000)["verdict"], j.FAIL)

    def test_a_log_against_the_server(self):
        base = {"by": "request id", "matched": 100, "tool_only": 0, "server_only": 0,
                "ambiguous": 0, "client_ms": {"p50": 0.2, "p99": 0.5, "max": 1.0}}
        self.assertEqual(j.join_check(base, 2, 1.0)["verdict"], j.PASS)
        self.assertEqual(j.join_check(dict(base, server_only=20), 2, 1.0)["verdict"], j.FAIL)
        self.assertEqual(j.join_check(dict(base, impossible=3), 2, 1.0)["verdict"], j.FAIL)
        c = j.join_check(dict(base, by="order", ambiguous=40), 2, 1.0)
        self.assertEqual(c["verdict"], j.WARN)
        self.assertIn("X-Request-Id", c["reason"])


class ServerSide(unittest.TestCase):
    def test_requests_against_what_was_asked(self):
        self.assertEqual(j.requests_check(0, {})["verdict"], j.FAIL)
        self.assertEqual(j.requests_check(1000, {"200": 1000}, asked=1000)["verdict"], j.PASS)
        c = j.requests_check(900, {"200": 900}, asked=1000, allowance=10)
        self.assertEqual(c["verdict"], j.FAIL)
        self.assertIn("100 missing", c["reason"])

    def test_journal_errors_protocol_connections(self):
        self.assertEqual(j.journal_check(10, 0, 10)["verdict"], j.PASS)
        self.assertEqual(j.journal_check(10, 2, 12)["verdict"], j.WARN)
        self.assertEqual(j.journal_check(10, 0, 11)["verdict"], j.WARN)
        self.assertEqual(j.errors_check({"200": 5, "503": 1})["verdict"], j.WARN)
        self.assertEqual(j.protocol_check({"h1": 5, "h2": 5, "tls": 0})["verdict"], j.WARN)
        c = {"connections": 100, "most_at_once": 3, "requests": 100,
             "per_connection_median": 1, "opened_late": 99}
        self.assertEqual(j.connections_check(c, 10)["verdict"], j.WARN)
        self.assertEqual(j.connections_check(dict(c, most_at_once=20), 10, closed=True)
                         ["verdict"], j.FAIL)
        # an open model's tool may add connections while answers are slow
        self.assertEqual(j.connections_check(dict(c, connections=20, most_at_once=20), 10)
                         ["verdict"], j.PASS)
        self.assertEqual(j.connections_check(dict(c, connections=10), 10)["verdict"], j.PASS)

    def test_the_worst_verdict_is_the_runs(self):
        checks = [j.judged("a", j.PASS, ""), j.judged("b", j.WARN, ""), j.judged("c", j.PASS, "")]
        self.assertEqual(j.worst(checks), j.WARN)
        self.assertEqual(j.worst(checks + [j.judged("d", j.FAIL, "")]), j.FAIL)
        self.assertEqual(j.worst([]), j.PASS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
