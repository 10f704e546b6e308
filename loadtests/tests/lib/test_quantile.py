"""loadlib.quantile against values computed by hand.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_quantile
"""
import math
import unittest


from loadlib import prom
from loadlib.quantile import HistogramError, histogram_quantile, median, percentile

# 100 observations up to 1 ms, 400 in (1, 3] ms, 150 in (3, 5] ms, 50 in (5, 10] ms
BUCKETS = [(0.001, 100.0), (0.003, 500.0), (0.005, 650.0), (0.01, 700.0), (math.inf, 700.0)]


class HistogramQuantile(unittest.TestCase):
    def test_median_interpolates_inside_its_bucket(self):
        # rank 0.5 * 700 = 350: 250 of the 400 observations into (1, 3] ms -> 1 + 2 * 250/400 = 2.25 ms
        v, rng = histogram_quantile(0.5, BUCKETS)
        self.assertAlmostEqual(v, 0.00225)
        self.assertEqual(rng, (0.001, 0.003))

    def test_first_bucket_starts_at_zero(self):
        # rank 70 of the first 100, from 0 -> 0.7 ms
        v, rng = histogram_quantile(0.1, BUCKETS)
        self.assertAlmostEqual(v, 0.0007)
        self.assertEqual(rng, (0.0, 0.001))

    def test_p99_in_the_last_finite_bucket(self):
        # rank 693: 43 of the 50 in (5, 10] ms -> 5 + 5 * 43/50 = 9.3 ms
        v, rng = histogram_quantile(0.99, BUCKETS)
        self.assertAlmostEqual(v, 0.0093)
        self.assertEqual(rng, (0.005, 0.01))

    def test_rank_on_a_bucket_boundary(self):
        # rank 500 is exactly the count up to 3 ms -> 3 ms
        v, _ = histogram_quantile(500 / 700, BUCKETS)
        self.assertAlmostEqual(v, 0.003)

    def test_empty_buckets_are_skipped(self):
        # nothing in (0.1, 1]: the rank 15 of 20 lands in (1, 10] at 5/10 -> 5.5
        v, rng = histogram_quantile(0.75, [(0.1, 10.0), (1.0, 10.0), (10.0, 20.0), (math.inf, 20.0)])
        self.assertAlmostEqual(v, 5.5)
        self.assertEqual(rng, (1.0, 10.0))

    def test_rank_in_the_inf_bucket_gives_the_highest_finite_bound(self):
        v, rng = histogram_quantile(0.99, [(0.01, 10.0), (0.1, 10.0), (math.inf, 20.0)])
        self.assertEqual(v, 0.1)
        self.assertEqual(rng, (0.1, math.inf))

    def test_no_observations(self):
        self.assertEqual(histogram_quantile(0.5, [(0.1, 0.0), (math.inf, 0.0)]), (None, None))

    def test_a_histogram_needs_inf(self):
        with self.assertRaises(HistogramError):
            histogram_quantile(0.5, [(0.1, 1.0)])
        self.assertTrue(issubclass(HistogramError, prom.InputError))

    def test_unsorted_buckets_are_sorted_first(self):
        self.assertEqual(histogram_quantile(0.5, list(reversed(BUCKETS))), histogram_quantile(0.5, BUCKETS))


class Samples(unittest.TestCase):
    def test_nearest_rank(self):
        v = list(range(1, 101))
        self.assertEqual(percentile(v, 50), 50)
        self.assertEqual(percentile(v, 99), 99)
        self.assertEqual(percentile(v, 99.5), 100)
        self.assertEqual(percentile(v, 100), 100)
        self.assertEqual(percentile(v, 0), 1)
        self.assertEqual(percentile([7], 99), 7)
        self.assertIsNone(percentile([], 50))

    def test_median_ignores_missing_values(self):
        self.assertEqual(median([3, None, 1, 2]), 2)
        self.assertEqual(median([1, 2, 3, 4]), 2.5)
        self.assertEqual(median([float("nan"), 5]), 5)
        self.assertIsNone(median([None]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
