"""Quantiles: PromQL's histogram_quantile() over cumulative buckets, and the
nearest-rank percentile and median of raw samples. One implementation of each,
used by every command."""
import math
import statistics

from .prom import InputError


class HistogramError(InputError):
    """Buckets that do not form a Prometheus histogram (no +Inf bucket)."""


def histogram_quantile(q, buckets):
    """q-quantile (0..1) of [(upper bound, cumulative count)], interpolated linearly
    inside the bucket holding the rank, as PromQL's histogram_quantile(): the first
    bucket's lower bound is 0, a rank in the +Inf bucket gives the highest finite
    bound. Returns (value, (lower, upper)) or (None, None) without observations."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][0] != math.inf:
        raise HistogramError("histogram without a +Inf bucket")
    total = buckets[-1][1]
    if total <= 0:
        return None, None
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank and count > prev_count:
            if bound == math.inf:
                finite = [b for b, _ in buckets if b != math.inf]
                top = finite[-1] if finite else 0.0
                return top, (top, math.inf)
            if bound <= 0:
                return bound, (bound, bound)
            lower = prev_bound if prev_bound < bound else 0.0
            value = lower + (bound - lower) * (rank - prev_count) / (count - prev_count)
            return value, (lower, bound)
        prev_bound, prev_count = bound, count
    top = buckets[-1][0]
    return top, (top, top)


def percentile(sorted_values, q):
    """Nearest-rank percentile (q in 0..100) of an ascending list (or numpy array); None
    when empty."""
    if len(sorted_values) == 0:
        return None
    k = math.ceil(len(sorted_values) * q / 100.0) - 1
    return sorted_values[max(0, min(len(sorted_values) - 1, k))]


def median(values):
    """Median of the values that are not None (or NaN); None when there are none."""
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return statistics.median(values) if values else None
