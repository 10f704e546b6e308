"""Prometheus text format: parsing a /metrics page into samples, picking series,
and the deltas of counters and histograms between two scrapes.

Owns the format only; fetching a page is scrape_text() here, through httpc (loadlib's
one HTTP client), and quantiles of a histogram are in quantile.py. One parser reads
both the text format and OpenMetrics: exemplars (`# {...} value`) and timestamps after
a sample are read past, never kept.

Why not prometheus_client's parsers (Debian's python3-prometheus-client 0.16): its text
parser is no faster on notesd's pages and reads an OpenMetrics exemplar as labels
without an error, its OpenMetrics parser takes twice the time and refuses a page
without `# EOF`, and neither skips one bad line. tests/lib/test_prom_reference.py holds
this parser to both of theirs on real pages; loadtests/README.md ("Prometheus parsing")
has the measurements.
"""
import math
import re

from . import httpc


class InputError(Exception):
    """A page, file or series that cannot be used (bad syntax, a counter that went down)."""


# name, {label set}, value, then a timestamp, read past: the text format's integer
# milliseconds or OpenMetrics' seconds with a fraction
_TIME = r'(?:\s+-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)?'
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)' + _TIME + r'\s*$')
# The same for a line with a `#`, which may end in an OpenMetrics exemplar (` # {...} value
# [time]`, read past): quoted label values are taken whole, so a `}` or ` # {` inside one
# stays in it. Slower, so only for those lines.
_SAMPLE_EXEMPLAR = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[^"}]++|"(?:[^"\\]++|\\.)*+")*+)\})?'
                              r'\s+(\S+)' + _TIME + r'(?:\s+#\s+\{.*)?\s*$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _unescape(value):
    """A label value with the format's three escapes (\\n, \\\\, \\") undone."""
    out = []
    i = 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            n = value[i + 1]
            out.append({"n": "\n", "\\": "\\", '"': '"'}.get(n, "\\" + n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_labels(text):
    """'a="1",b="x\\"y"' -> {"a": "1", "b": 'x"y'}."""
    labels = {}
    pos = 0
    text = text or ""
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if not m:
            if text[pos:].strip() in ("", ","):
                break
            raise InputError(f"bad label set {{{text}}}")
        labels[m.group(1)] = _unescape(m.group(2))
        pos = m.end()
    return labels


def parse_value(text):
    """A sample value or an `le` bound: floats, +Inf, -Inf and NaN as Go writes them."""
    low = text.lower()
    if low in ("+inf", "inf"):
        return math.inf
    if low == "-inf":
        return -math.inf
    if low == "nan":
        return math.nan
    return float(text)


def parse_metrics(text):
    """Every sample of a Prometheus text page as (name, {labels}, value), in page order.
    Raises InputError on a line that is not a sample, a comment or blank."""
    samples = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = (_SAMPLE_EXEMPLAR if "#" in line else _SAMPLE).match(line)
        if not m:
            raise InputError(f"line {number}: not a sample: {line[:120]!r}")
        try:
            samples.append((m.group(1), parse_labels(m.group(2)), parse_value(m.group(3))))
        except ValueError as e:
            raise InputError(f"line {number}: {e}") from None
    return samples


def parse_lenient(text):
    """Like parse_metrics, but a line that does not parse is skipped (for live pages that
    only feed figures, never verdicts)."""
    samples = []
    for line in text.splitlines():
        try:
            samples += parse_metrics(line)
        except InputError:
            pass
    return samples


def series(samples, name):
    """{frozenset(labels.items()): value} of one metric name."""
    return {frozenset(labels.items()): v for n, labels, v in samples if n == name}


def value(samples, name, **labels):
    """The value of the one series of `name` whose labels include `labels`; None if absent."""
    for n, lab, v in samples:
        if n == name and all(lab.get(k) == want for k, want in labels.items()):
            return v
    return None


def flat(samples):
    """{'name{a="1",b="2"}': value}: one key per series, labels in page order."""
    out = {}
    for n, labels, v in samples:
        key = n + ("{" + ",".join(f'{k}="{x}"' for k, x in labels.items()) + "}" if labels else "")
        out[key] = v
    return out


def deltas(before, after, name):
    """after - before per series of a counter; a series new in `after` starts at 0.
    A counter that went down or a series that disappeared means the server restarted
    between the scrapes (a counter reset): InputError, since no delta is honest then."""
    b, a = series(before, name), series(after, name)
    out = {}
    for key, v in a.items():
        d = v - b.get(key, 0.0)
        if d < 0:
            raise InputError(f"{name}{dict(key)} went down from {b[key]} to {v}: "
                             "the server restarted between the scrapes")
        out[key] = d
    for key in b:
        if key not in a:
            raise InputError(f"{name}{dict(key)} disappeared: the server restarted between the scrapes")
    return out


def histogram_deltas(before, after, name, group_by):
    """{group: [(le, cumulative delta)]}: bucket deltas summed over every series
    whose labels give the same `group_by(labels)`; None groups are skipped."""
    d = deltas(before, after, name + "_bucket")
    groups = {}
    for key, v in d.items():
        labels = dict(key)
        group = group_by(labels)
        if group is None or "le" not in labels:
            continue
        le = parse_value(labels["le"])
        per = groups.setdefault(group, {})
        per[le] = per.get(le, 0.0) + v
    return {g: sorted(per.items()) for g, per in groups.items()}


def histogram_summary(before, after, name, match):
    """count, mean_ms and cumulative buckets of one histogram between two scrapes,
    summed over the series whose labels satisfy match(labels); None without scrapes."""
    if before is None or after is None:
        return None
    old = {(n, frozenset(l.items())): v for n, l, v in before}
    buckets, count, total = {}, 0.0, 0.0
    for n, labels, v in after:
        if not n.startswith(name) or not match(labels):
            continue
        d = v - old.get((n, frozenset(labels.items())), 0.0)
        if n == name + "_bucket":
            le = parse_value(labels["le"])
            buckets[le] = buckets.get(le, 0.0) + d
        elif n == name + "_count":
            count += d
        elif n == name + "_sum":
            total += d
    if not count:
        return {"count": 0}
    return {"count": int(count), "mean_ms": total / count * 1000, "buckets": sorted(buckets.items())}


def read_metrics(path):
    """The samples of a saved page; InputError when unreadable, malformed or empty."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    try:
        samples = parse_metrics(text)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    if not samples:
        raise InputError(f"{path}: no samples (not a /metrics page?)")
    return samples


def scrape_text(url, timeout=10.0):
    """(status, text) of GET url through httpc, chunked or not; raises OSError when
    nothing answers or the answer is not HTTP."""
    res = httpc.get(url, timeout=timeout)
    return res.status, res.body.decode("utf-8", "replace")


def scrape(url, timeout=10.0):
    """The samples of a live /metrics page, or None when it cannot be had (no URL,
    no answer, not 200). Malformed lines are skipped."""
    if not url:
        return None
    try:
        status, text = scrape_text(url, timeout)
    except OSError:
        return None
    return parse_lenient(text) if status == 200 else None
