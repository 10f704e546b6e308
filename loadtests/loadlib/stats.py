"""Comparing two things measured in paired rounds: the ratio of their medians with
a bootstrap confidence interval, an exact signed-rank test of the paired ratios,
and the verdict both together allow. Standard library only; every random draw
comes from a seeded generator, so the same figures give the same interval.

Why two methods: the percentile bootstrap gives the interval of the figure a
reader wants (median A / median B, with the rounds resampled as pairs, so what
the two had in common in a round stays together), but with a handful of pairs it
is too narrow. Wilcoxon's signed-rank test of the paired log-ratios is exact for
any number of pairs (it only assumes that, with no difference, a pair's log-ratio
is as likely to be positive as negative, which alternating the order within the
pairs makes true). A verdict needs both: the interval excludes 1 and the test
rejects "no difference" at the same level. With fewer pairs than
min_pairs(confidence) the test cannot reject at all (6 at 95%, 8 at 99%), and
no verdict is given whatever the interval says.
"""
import math
import random

from .quantile import median

DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 4000
DEFAULT_SEED = 20261201


def ratio_of_medians(a, b):
    """median(a) / median(b); None when either is empty or b's median is 0."""
    ma, mb = median(a), median(b)
    if ma is None or mb is None or mb == 0:
        return None
    return ma / mb


def quantile_sorted(values, q):
    """The q-quantile (0..1) of an ascending list, interpolated between the two
    nearest ranks (numpy's default, 'linear'); None when empty."""
    if not values:
        return None
    pos = q * (len(values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def bootstrap_ratio_interval(a, b, confidence=DEFAULT_CONFIDENCE, resamples=DEFAULT_RESAMPLES,
                             seed=DEFAULT_SEED):
    """Percentile bootstrap interval of median(a) / median(b) for paired rounds
    (a[i] and b[i] measured together): the rounds are drawn with replacement as
    pairs, `resamples` times, from random.Random(seed). (low, high), or None with
    fewer than 2 pairs."""
    if len(a) != len(b):
        raise ValueError("paired rounds: a and b need the same length")
    n = len(a)
    if n < 2:
        return None
    rng = random.Random(seed)
    idx = range(n)
    ratios = []
    for _ in range(resamples):
        pick = rng.choices(idx, k=n)
        r = ratio_of_medians([a[i] for i in pick], [b[i] for i in pick])
        if r is not None:
            ratios.append(r)
    if not ratios:
        return None
    ratios.sort()
    tail = (1 - confidence) / 2
    return quantile_sorted(ratios, tail), quantile_sorted(ratios, 1 - tail)


def average_ranks(values):
    """Ranks 1..n of the values, ties sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def signed_rank_p(differences):
    """Two-sided p-value of Wilcoxon's signed-rank test that the differences are
    centred on 0, exact: the null distribution of the positive ranks' sum is counted
    over all 2^n sign patterns (ties keep their average ranks, which are counted in
    half-ranks). Zero differences are dropped (Wilcoxon's rule). 1.0 when nothing is
    left."""
    d = [x for x in differences if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    ranks = [round(2 * r) for r in average_ranks([abs(x) for x in d])]   # half-ranks, exact
    total = sum(ranks)
    counts = [0] * (total + 1)          # counts[s]: sign patterns whose positive ranks sum to s
    counts[0] = 1
    for r in ranks:
        for s in range(total, r - 1, -1):
            counts[s] += counts[s - r]
    w = sum(r for r, x in zip(ranks, d) if x > 0)
    patterns = 2 ** n
    below = sum(counts[:w + 1]) / patterns
    above = sum(counts[w:]) / patterns
    return min(1.0, 2 * min(below, above))


def min_pairs(confidence=DEFAULT_CONFIDENCE):
    """The fewest pairs with which the exact signed-rank test can reject at all at
    this confidence: all n signs alike has p = 2 / 2^n."""
    n = 1
    while 2 / 2 ** n >= 1 - confidence:
        n += 1
    return n


def compare_paired(a, b, higher_is_better, confidence=DEFAULT_CONFIDENCE,
                   resamples=DEFAULT_RESAMPLES, seed=DEFAULT_SEED):
    """A against B over paired rounds (a[i], b[i]; pairs with a None or a
    non-positive value are left out). Returns a dict:

      n              pairs used
      ratio          median(a) / median(b)
      low, high      the bootstrap interval of that ratio (None with < 2 pairs)
      p              the exact signed-rank p-value of the pairs' log-ratios
      verdict        "slower", "faster" (A against B; `higher_is_better` says which
                     way is better), "no difference", or "too few rounds"
      plus_minus     for "no difference": the largest difference the interval
                     leaves possible, as a fraction (0.04 for ±4%)
      decisive       False when the interval excludes 1 but the rank test does not
                     confirm it (too few pairs, or pairs that disagree)
      min_pairs      the fewest pairs with which the rank test can reject at all
    """
    pairs = [(x, y) for x, y in zip(a, b)
             if x is not None and y is not None and x > 0 and y > 0]
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    out = {"n": len(pairs), "ratio": ratio_of_medians(xs, ys), "low": None, "high": None,
           "p": None, "verdict": "too few rounds", "plus_minus": None, "decisive": True,
           "confidence": confidence, "min_pairs": min_pairs(confidence)}
    interval = bootstrap_ratio_interval(xs, ys, confidence, resamples, seed)
    if interval is None or out["ratio"] is None:
        return out
    out["low"], out["high"] = interval
    out["p"] = signed_rank_p([math.log(x / y) for x, y in pairs])
    excludes_one = out["low"] > 1 or out["high"] < 1
    confirmed = out["p"] < 1 - confidence
    if excludes_one and confirmed:
        better = (out["ratio"] > 1) == higher_is_better
        out["verdict"] = "faster" if better else "slower"
    else:
        out["verdict"] = "no difference"
        out["decisive"] = not excludes_one
        out["plus_minus"] = max(abs(out["high"] - 1), abs(1 - out["low"]))
    return out


def describe_verdict(c):
    """A comparison's verdict as the report words it."""
    if c["verdict"] == "no difference":
        text = f"no difference detected (±{100 * c['plus_minus']:.1f}%)"
        if c["n"] < c["min_pairs"]:
            text += (f"; {c['n']} pairs cannot show one at {100 * c['confidence']:g}% "
                     f"(the rank test needs {c['min_pairs']})")
        elif not c["decisive"]:
            text += (f"; the interval excludes 1 but the rank test does not confirm it "
                     f"(p = {c['p']:.2g}, {c['n']} pairs)")
        return text
    if c["verdict"] == "too few rounds":
        return f"too few rounds ({c['n']} valid pairs)"
    return c["verdict"]


def dispersion(values):
    """{"median", "min", "max", "rel"} of the values that are not None, rel being
    (max - min) / median: how far one thing's rounds spread."""
    v = [x for x in values if x is not None]
    m = median(v)
    if m is None:
        return {"median": None, "min": None, "max": None, "rel": None, "n": 0}
    return {"median": m, "min": min(v), "max": max(v), "rel": (max(v) - min(v)) / m if m else None,
            "n": len(v)}
