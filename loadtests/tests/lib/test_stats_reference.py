"""loadlib.stats, which bench --compare decides with, against scipy.stats (Debian's
python3-scipy) on several data sets. The run keeps its own code (the standard library
only); this test holds it to the reference.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_stats_reference

The signed-rank test:
  - without ties or zeros, scipy.stats.wilcoxon(method="exact") gives the same two-sided
    p-value; both are exact sums over the 2^n sign patterns, so they agree to rounding
    (1e-12 relative);
  - with tied absolute differences scipy's exact method does not apply (it assumes
    integer ranks), so the reference is scipy.stats.permutation_test over every sign
    pattern (permutation_type="samples", all 2^n pairs swapped or not) of the same
    statistic, the sum of the positive differences' average ranks: exact too, same
    tolerance. Zeros are dropped first on both sides (Wilcoxon's rule, which ours uses).
The bootstrap interval:
  - the same draws: the rounds each resample picks, drawn again from random.Random(seed)
    exactly as stats.bootstrap_ratio_interval draws them, and the ratio of medians and the
    interval's ends computed by numpy (np.median, np.quantile's default "linear"): equal to
    1e-12 relative. This holds the arithmetic, the pairing and the quantile rule.
  - scipy's own draws: scipy.stats.bootstrap(paired=True, method="percentile") with a
    numpy generator seeded alike draws other resamples, so its ends differ from ours by
    Monte Carlo error only. Each end of ours must sit at the same quantile of scipy's
    bootstrap distribution: the share of scipy's resamples below our lower end (strictly
    below, and at or below: the distribution has atoms with few pairs) within
    TOLERANCE of 2.5%, likewise 97.5% for the upper end. With B resamples on each side
    the rank of an estimated q-quantile has a standard error of sqrt(q(1-q)/B) in share;
    two independent estimates differ by sqrt(2) times that, and TOLERANCE is four of
    those: 0.014 at B = 4000 (a chance of about 6e-5 per end to exceed it by luck, and
    the seeds make every run the same run).
The verdict: compare_paired's, recomputed from scipy's interval and p-value, is the same.
"""
import math
import random
import unittest

import numpy as np
from scipy import stats as sp

from loadlib import stats

B = stats.DEFAULT_RESAMPLES
CONFIDENCE = stats.DEFAULT_CONFIDENCE
TAIL = (1 - CONFIDENCE) / 2
TOLERANCE = 4 * math.sqrt(2 * TAIL * (1 - TAIL) / B)


def lognormal_pairs(seed, n, ratio, noise, shared=0.05):
    """n paired rounds like bench --compare's: B around 3,500 req/s, a round's machine
    state shared by both sides (shared), A = ratio x B, each with its own noise."""
    rng = random.Random(seed)
    a, b = [], []
    for _ in range(n):
        machine = math.exp(rng.gauss(0, shared))
        b.append(3500 * machine * math.exp(rng.gauss(0, noise)))
        a.append(3500 * ratio * machine * math.exp(rng.gauss(0, noise)))
    return a, b


# (name, a, b): what bench --compare sees, and a few shapes that are hard on an interval
DATA_SETS = [
    ("10% slower, 8 pairs", *lognormal_pairs(1, 8, 0.90, 0.03)),
    ("same build, 8 pairs", *lognormal_pairs(2, 8, 1.00, 0.03)),
    ("3% faster, 12 pairs", *lognormal_pairs(3, 12, 1.03, 0.01)),
    ("noisy, 20 pairs", *lognormal_pairs(4, 20, 1.00, 0.10)),
    ("the fewest pairs that can decide, 6", *lognormal_pairs(5, 6, 0.80, 0.02)),
    ("an outlier round", [101, 99, 102, 100, 98, 103, 60, 101, 100, 102],
     [100, 100, 100, 100, 100, 100, 100, 100, 100, 100]),
    ("memory in KiB, ties", [3712, 3716, 3712, 3720, 3712, 3716, 3708, 3712],
     [3700, 3704, 3700, 3708, 3700, 3704, 3696, 3700]),
]


def log_ratios(a, b):
    return [math.log(x / y) for x, y in zip(a, b)]


def has_ties_or_zeros(d):
    magnitudes = [abs(x) for x in d]
    return 0 in magnitudes or len(set(magnitudes)) < len(magnitudes)


def signed_rank_by_permutation(d):
    """The exact two-sided p-value of the signed-rank statistic (average ranks) over every
    sign pattern, by scipy.stats.permutation_test; zeros dropped first."""
    d = np.array([x for x in d if x != 0], dtype=float)

    def positive_rank_sum(x, y):
        diff = x - y
        return sp.rankdata(np.abs(diff))[diff > 0].sum()

    res = sp.permutation_test((d, np.zeros_like(d)), positive_rank_sum, vectorized=False,
                              permutation_type="samples", n_resamples=2 ** len(d) + 1,
                              alternative="two-sided")
    return min(1.0, float(res.pvalue))


def our_draws(a, b, seed=stats.DEFAULT_SEED, resamples=B):
    """The resamples' rounds, drawn as bootstrap_ratio_interval draws them."""
    rng = random.Random(seed)
    return [rng.choices(range(len(a)), k=len(a)) for _ in range(resamples)]


class SignedRank(unittest.TestCase):
    def test_against_the_exact_wilcoxon_without_ties(self):
        cases = [("Hollander & Wolfe", [1.83 - 0.878, 0.50 - 0.647, 1.62 - 0.598, 2.48 - 2.05,
                                       1.68 - 1.06, 1.88 - 1.29, 1.55 - 1.06, 3.06 - 3.14,
                                       1.30 - 1.29]),
                 ("all positive, 7", [0.1 * (i + 1) for i in range(7)]),
                 ("alternating, 11", [(-1) ** i * (i + 1) / 10 for i in range(11)])]
        cases += [(name, log_ratios(a, b)) for name, a, b in DATA_SETS]
        checked = 0
        for name, d in cases:
            if has_ties_or_zeros(d):
                continue
            with self.subTest(data=name):
                ref = sp.wilcoxon(d, zero_method="wilcox", alternative="two-sided", method="exact")
                self.assertAlmostEqual(stats.signed_rank_p(d) / ref.pvalue, 1.0, delta=1e-12)
                checked += 1
        self.assertGreaterEqual(checked, 8)

    def test_against_every_sign_pattern_with_ties_and_zeros(self):
        cases = [("ties", [1, -1, 2, 2, -2, 3]),
                 ("ties and zeros", [0, 0.5, -0.5, 0.5, 1.5, 1.5, -2.5, 3.0, 0]),
                 ("all tied", [2, 2, 2, -2, 2, 2, 2, 2]),
                 ("one of each sign", [1, -1])]
        cases += [(name, log_ratios(a, b)) for name, a, b in DATA_SETS]
        checked = 0
        for name, d in cases:
            if not has_ties_or_zeros(d):
                continue
            with self.subTest(data=name):
                self.assertAlmostEqual(stats.signed_rank_p(d), signed_rank_by_permutation(d),
                                       delta=1e-12)
                checked += 1
        self.assertGreaterEqual(checked, 5)     # the four above and the KiB data set


class BootstrapInterval(unittest.TestCase):
    def test_the_same_draws_give_numpys_interval(self):
        for name, a, b in DATA_SETS:
            with self.subTest(data=name):
                xa, xb = np.array(a, dtype=float), np.array(b, dtype=float)
                ratios = [np.median(xa[pick]) / np.median(xb[pick]) for pick in our_draws(a, b)]
                low, high = np.quantile(ratios, [TAIL, 1 - TAIL])
                ours = stats.bootstrap_ratio_interval(a, b)
                self.assertAlmostEqual(ours[0] / low, 1.0, delta=1e-12)
                self.assertAlmostEqual(ours[1] / high, 1.0, delta=1e-12)

    def test_scipys_bootstrap_puts_our_ends_at_the_same_quantiles(self):
        for name, a, b in DATA_SETS:
            with self.subTest(data=name):
                low, high = stats.bootstrap_ratio_interval(a, b)
                res = sp.bootstrap((a, b), lambda x, y: np.median(x) / np.median(y), paired=True,
                                   vectorized=False, method="percentile", n_resamples=B,
                                   confidence_level=CONFIDENCE,
                                   random_state=np.random.default_rng(stats.DEFAULT_SEED))
                dist = np.asarray(res.bootstrap_distribution)
                for end, q in ((low, TAIL), (high, 1 - TAIL)):
                    below, at_or_below = np.mean(dist < end), np.mean(dist <= end)
                    self.assertLessEqual(below, q + TOLERANCE, f"{name}: {end} of {q}")
                    self.assertGreaterEqual(at_or_below, q - TOLERANCE, f"{name}: {end} of {q}")
                # and scipy's own interval, where the distribution is smooth enough to say so
                if len(a) >= 10:
                    ref_low, ref_high = res.confidence_interval
                    spread = np.quantile(dist, 0.75) - np.quantile(dist, 0.25)
                    self.assertLess(abs(low - ref_low), spread, name)
                    self.assertLess(abs(high - ref_high), spread, name)


class Verdicts(unittest.TestCase):
    def test_scipys_interval_and_p_value_give_the_same_verdict(self):
        verdicts = set()
        for name, a, b in DATA_SETS:
            with self.subTest(data=name):
                ours = stats.compare_paired(a, b, higher_is_better=True)
                d = log_ratios(a, b)
                if has_ties_or_zeros(d):
                    p = signed_rank_by_permutation(d)
                else:
                    p = sp.wilcoxon(d, method="exact").pvalue
                low, high = sp.bootstrap((a, b), lambda x, y: np.median(x) / np.median(y),
                                         paired=True, vectorized=False, method="percentile",
                                         n_resamples=B, confidence_level=CONFIDENCE,
                                         random_state=np.random.default_rng(1)).confidence_interval
                decided = (low > 1 or high < 1) and p < 1 - CONFIDENCE
                ratio = np.median(a) / np.median(b)
                want = ("faster" if ratio > 1 else "slower") if decided else "no difference"
                self.assertEqual(ours["verdict"], want,
                                 f"{name}: p {p:.3g}, [{low:.4f}, {high:.4f}]")
                verdicts.add(want)
        self.assertEqual(verdicts, {"faster", "slower", "no difference"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
