"""loadlib.stats: the paired comparison bench --compare decides with.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_stats

- the signed-rank test's exact p-values against published ones (R's wilcox.test),
  with ties and zeros;
- the bootstrap interval: reproducible from its seed, paired, degenerate inputs;
- the verdicts: a clear difference is found either way, identical or symmetric noise
  is not, too few pairs never give one, and the rank test vetoes an interval that
  the pairs do not support;
- how often the rule cries wolf on pure noise (at most the confidence promises).
"""
import math
import random
import unittest

from loadlib import stats


class SignedRank(unittest.TestCase):
    def test_published_example(self):
        # Hollander & Wolfe's depression scores, R: wilcox.test(x, y, paired = TRUE)
        # gives V = 40, p-value = 0.03906
        x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
        y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
        self.assertAlmostEqual(stats.signed_rank_p([a - b for a, b in zip(x, y)]), 0.0390625)

    def test_all_one_sign(self):
        for n in range(1, 10):
            with self.subTest(n=n):
                self.assertAlmostEqual(stats.signed_rank_p([1.0 + i for i in range(n)]),
                                       min(1.0, 2 / 2 ** n))
                self.assertAlmostEqual(stats.signed_rank_p([-1.0 - i for i in range(n)]),
                                       min(1.0, 2 / 2 ** n))

    def test_symmetric_differences_are_not_significant(self):
        self.assertEqual(stats.signed_rank_p([1, -1, 2, -2, 3, -3]), 1.0)

    def test_zeros_dropped_and_ties_share_ranks(self):
        # zeros leave: the same as without them
        self.assertEqual(stats.signed_rank_p([0, 0, 1, 2, 3, 4, 5, 6]),
                         stats.signed_rank_p([1, 2, 3, 4, 5, 6]))
        self.assertEqual(stats.signed_rank_p([0, 0]), 1.0)
        self.assertEqual(stats.average_ranks([5, 1, 5, 3]), [3.5, 1, 3.5, 2])
        # ties: |d| = 1, 1, 2, 2, 2, 3 -> ranks 1.5, 1.5, 4, 4, 4, 6; negatives 1.5 and 4:
        # W+ = 15.5 of 21; counted over the 64 sign patterns in half-ranks
        p = stats.signed_rank_p([1, -1, 2, 2, -2, 3])
        patterns = 0
        ranks = [1.5, 1.5, 4, 4, 4, 6]
        for mask in range(64):
            w = sum(r for i, r in enumerate(ranks) if mask >> i & 1)
            patterns += w >= 15.5
        self.assertAlmostEqual(p, 2 * patterns / 64)

    def test_min_pairs(self):
        self.assertEqual(stats.min_pairs(0.95), 6)      # 2/32 = 0.0625, 2/64 = 0.031
        self.assertEqual(stats.min_pairs(0.99), 8)      # 2/128 = 0.0156, 2/256 = 0.0078


class Bootstrap(unittest.TestCase):
    a = [100, 104, 98, 101, 97, 103, 99, 102]
    b = [90, 95, 88, 92, 89, 94, 91, 93]

    def test_reproducible_from_the_seed(self):
        rng = random.Random(1)
        a = [rng.uniform(90, 110) for _ in range(10)]
        b = [rng.uniform(90, 110) for _ in range(10)]
        one = stats.bootstrap_ratio_interval(a, b, seed=7)
        self.assertEqual(one, stats.bootstrap_ratio_interval(a, b, seed=7))
        self.assertNotEqual(one, stats.bootstrap_ratio_interval(a, b, seed=8))

    def test_interval_holds_the_ratio(self):
        lo, hi = stats.bootstrap_ratio_interval(self.a, self.b)
        r = stats.ratio_of_medians(self.a, self.b)
        self.assertLess(lo, r)
        self.assertGreater(hi, r)
        self.assertGreater(lo, 1.05)                    # ~10% apart, a narrow spread

    def test_pairs_stay_together(self):
        # B moves with A round by round (the machine), 10% below: every resample keeps
        # the pairs, and the medians' ratio barely moves
        a = [100, 200, 300, 400, 500, 600]
        b = [90, 180, 270, 360, 450, 540]
        lo, hi = stats.bootstrap_ratio_interval(a, b)
        self.assertGreater(lo, 1.0)

    def test_degenerate(self):
        self.assertIsNone(stats.bootstrap_ratio_interval([1], [1]))
        self.assertEqual(stats.bootstrap_ratio_interval([5, 5, 5], [5, 5, 5]), (1.0, 1.0))
        with self.assertRaises(ValueError):
            stats.bootstrap_ratio_interval([1, 2], [1])

    def test_quantile(self):
        self.assertEqual(stats.quantile_sorted([1, 2, 3, 4], 0.5), 2.5)
        self.assertEqual(stats.quantile_sorted([1, 2, 3, 4], 0), 1)
        self.assertEqual(stats.quantile_sorted([1, 2, 3, 4], 1), 4)
        self.assertIsNone(stats.quantile_sorted([], 0.5))


class Verdicts(unittest.TestCase):
    def test_slower_and_faster_by_direction(self):
        fast = [100, 104, 98, 101, 97, 103, 99, 102]
        slow = [90, 95, 88, 92, 89, 94, 91, 93]
        c = stats.compare_paired(slow, fast, higher_is_better=True)     # req/s, A lower
        self.assertEqual(c["verdict"], "slower")
        self.assertLess(c["high"], 1)
        self.assertEqual(stats.describe_verdict(c), "slower")
        c = stats.compare_paired(slow, fast, higher_is_better=False)    # CPU/request, A lower
        self.assertEqual(c["verdict"], "faster")

    def test_identical_is_no_difference(self):
        a = [100, 104, 98, 101, 97, 103, 99, 102]
        c = stats.compare_paired(a, list(a), True)
        self.assertEqual(c["verdict"], "no difference")
        self.assertEqual(c["plus_minus"], 0)
        self.assertEqual(c["p"], 1.0)
        self.assertEqual(stats.describe_verdict(c), "no difference detected (±0.0%)")

    def test_too_few_pairs_never_decide(self):
        c = stats.compare_paired([90, 91, 89, 92, 90], [100, 101, 99, 102, 100], True)
        self.assertEqual(c["n"], 5)
        self.assertLess(c["high"], 1)                 # the interval alone would say slower
        self.assertEqual(c["verdict"], "no difference")
        self.assertIn("5 pairs cannot show one at 95%", stats.describe_verdict(c))
        self.assertEqual(stats.compare_paired([1], [2], True)["verdict"], "too few rounds")

    def test_rank_test_vetoes_an_interval_the_pairs_do_not_support(self):
        # twelve pairs: ten with A 1% ahead, two with A 30% behind. The medians' interval
        # leaves 1 out (a resample's median falls below 1 only with six draws of the
        # two), but the two largest differences are against A: the ranks do not agree
        a = [101] * 10 + [70, 70]
        b = [100] * 12
        c = stats.compare_paired(a, b, True)
        self.assertGreater(c["low"], 1)
        self.assertGreater(c["p"], 0.05)
        self.assertEqual(c["verdict"], "no difference")
        self.assertFalse(c["decisive"])
        self.assertIn("the interval excludes 1 but the rank test does not confirm it",
                      stats.describe_verdict(c))

    def test_pairs_with_a_missing_side_are_left_out(self):
        c = stats.compare_paired([1, None, 3, 0], [1, 2, None, 4], True)
        self.assertEqual(c["n"], 1)

    def test_false_alarms_stay_within_the_confidence(self):
        # pure noise, identical on both sides (log-normal, 10%): the rule may call a
        # difference at most 5% of the time; it is conservative (both methods must agree)
        rng = random.Random(3)
        alarms = 0
        trials = 400
        for k in range(trials):
            a = [100 * math.exp(rng.gauss(0, 0.1)) for _ in range(8)]
            b = [100 * math.exp(rng.gauss(0, 0.1)) for _ in range(8)]
            alarms += stats.compare_paired(a, b, True, resamples=500, seed=k)["verdict"] != \
                "no difference"
        self.assertLessEqual(alarms / trials, 0.05)

    def test_a_real_difference_is_found(self):
        # 10% apart, 4% noise per pair, 8 pairs: found nearly always
        rng = random.Random(5)
        found = 0
        for k in range(100):
            b = [100 * math.exp(rng.gauss(0, 0.04)) for _ in range(8)]
            a = [0.9 * x * math.exp(rng.gauss(0, 0.04)) for x in b]
            found += stats.compare_paired(a, b, True, resamples=500, seed=k)["verdict"] == "slower"
        self.assertGreaterEqual(found, 90)


class Dispersion(unittest.TestCase):
    def test_dispersion(self):
        d = stats.dispersion([90, None, 110, 100])
        self.assertEqual((d["median"], d["min"], d["max"], d["n"]), (100, 90, 110, 3))
        self.assertAlmostEqual(d["rel"], 0.2)
        self.assertEqual(stats.dispersion([])["median"], None)


if __name__ == "__main__":
    unittest.main(verbosity=2)
