"""OpenMetrics text with timestamps: the harness's once-a-second scrapes of one
test written as one file that `promtool tsdb create-blocks-from openmetrics`
turns into Prometheus blocks, so a run can be opened in Prometheus and Grafana
afterwards (docker/replay/backfill.sh).

Owns the conversion only, as pure functions over text: reading the scrapes
(the "# SCRAPE unix=<t> status=<code>" stream of metrics.prom.gz, see
sampler.py) and writing OpenMetrics. Parsing a page's samples is prom.py's.

The rules kept (OpenMetrics 1.0, as Prometheus's parser reads them):
  - a family's `# TYPE` and `# HELP` once, then all of its samples; families
    never interleave;
  - a counter family is named without `_total`, its samples keep it
    (`# TYPE http_requests counter`, `http_requests_total{...}`); a counter
    whose name lacks `_total` is written as `unknown`, keeping its name, since
    an OpenMetrics counter sample must end in `_total`;
  - histograms keep `_bucket`, `_count` and `_sum`, one point's samples
    together; summaries likewise with `quantile`, `_count` and `_sum`;
  - every sample carries the scrape's time in seconds, and the points of one
    series follow each other in increasing time;
  - the file ends with `# EOF`.
Every sample also gets the labels that name the test (`job`, `target`,
`mode`, `round`); a page label of the same name is kept as `exported_<name>`,
as Prometheus does when it scrapes with honor_labels off.
"""
import math
import re

from . import prom

_SCRAPE = re.compile(r"^# SCRAPE unix=([0-9.]+) status=(\S+)")
_META = re.compile(r"^#\s+(TYPE|HELP)\s+([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\s(.*))?$")
# a family's sample names, by type, when the page's TYPE line names the family (as an OpenMetrics
# page does for counters too: `# TYPE http_requests counter`, then `http_requests_total`)
_SUFFIXES = {"histogram": ("_bucket", "_count", "_sum", "_created"),
             "summary": ("", "_count", "_sum", "_created"), "counter": ("_total", "_created")}
_OM_TYPES = {"counter": "counter", "gauge": "gauge", "histogram": "histogram", "summary": "summary",
             "untyped": "unknown"}


class Scrape:
    """One successful scrape: its unix time, and the page's samples and metadata."""

    def __init__(self, t, samples, types, helps):
        self.t = t
        self.samples = samples      # [(name, {labels}, value)] in page order
        self.types = types          # {metric name in the page: "counter", "gauge", ...}
        self.helps = helps          # {metric name in the page: help text, unescaped}


def _unescape_help(text):
    """A 0.0.4 HELP text with its two escapes (\\\\ and \\n) undone."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "\\": "\\"}.get(m.group(1), "\\" + m.group(1)), text)


def parse_page(text, t):
    """A /metrics page in the Prometheus text format as a Scrape taken at `t`.
    Raises prom.InputError on a malformed sample line."""
    types, helps = {}, {}
    for line in text.splitlines():
        m = _META.match(line.strip())
        if m:
            kind, name, rest = m.group(1), m.group(2), (m.group(3) or "")
            if kind == "TYPE":
                types.setdefault(name, rest.strip())
            else:
                helps.setdefault(name, _unescape_help(rest))
    return Scrape(t, prom.parse_metrics(text), types, helps)


def scrape_pages(lines):
    """The pages of a metrics.prom.gz stream, from its lines (an open file will do):
    (unix time, status, [lines]) per "# SCRAPE unix=... status=..." marker, in the
    stream's order; lines before the first marker are not part of any page. The one
    reader of the stream's layout, for this module and the harness's analysis."""
    t, status, body = None, None, []
    for line in lines:
        m = _SCRAPE.match(line)
        if m:
            if t is not None:
                yield t, status, body
            t, status, body = float(m.group(1)), m.group(2), []
        elif t is not None:
            body.append(line)
    if t is not None:
        yield t, status, body


def read_scrapes(text):
    """The successful scrapes of a metrics.prom.gz stream (its text), in time order.
    A scrape that failed, answered other than 200 or does not parse is left out, as
    is one not later than the scrape before it. Returns (scrapes, how many were left out)."""
    pages = [(t, status, "\n".join(lines)) for t, status, lines in scrape_pages(text.splitlines())]
    scrapes, skipped = [], 0
    for t, status, body in sorted(pages, key=lambda p: p[0]):
        if status != "200" or (scrapes and t <= scrapes[-1].t):
            skipped += 1
            continue
        try:
            scrapes.append(parse_page(body, t))
        except prom.InputError:
            skipped += 1
    return scrapes, skipped


def family_of(name, types):
    """(family name, OpenMetrics type) of a sample name, from the page's TYPE lines (a text
    page's, which name a counter with its `_total`, or an OpenMetrics page's)."""
    for kind, suffixes in _SUFFIXES.items():
        for suffix in suffixes:
            base = name[:len(name) - len(suffix)]
            if name.endswith(suffix) and types.get(base) == kind:
                return base, kind
    kind = types.get(name, "untyped")
    if kind == "counter":
        return (name[:-len("_total")], "counter") if name.endswith("_total") else (name, "unknown")
    return name, _OM_TYPES.get(kind, "unknown")


def escape_label(value):
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text):
    """OpenMetrics escapes a HELP text like a label value (a bare `"` is not allowed)."""
    return escape_label(text)


def format_value(v):
    """A sample value as OpenMetrics spells it: +Inf, -Inf, NaN, integers without `.0`."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def format_time(t):
    """Seconds since the epoch with millisecond precision (what Prometheus stores)."""
    return f"{t:.3f}"


def with_extra(labels, extra):
    """The test's labels first, then the page's; a page label that clashes with one of
    the test's is renamed exported_<name>."""
    out = dict(extra)
    for k, v in labels.items():
        out[f"exported_{k}" if k in extra else k] = v
    return out


def _labels_text(labels):
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items()) + "}" if labels else ""


def test_labels(target, mode, rnd):
    """The labels every sample of one harness test gets: job (the target's name, which
    the dashboards select on, like the live stack's scrape job), target, mode and round."""
    return {"job": str(target), "target": str(target), "mode": str(mode), "round": str(rnd)}


def render(scrapes, extra):
    """OpenMetrics text of `scrapes` (in increasing time), every sample labelled with
    `extra`, ending with "# EOF\\n". Families appear in the order of their first sample;
    within one, each series (its labels without `le` or `quantile`) lists its points in
    time order, one point's samples together."""
    families = {}       # family -> {"type", "help", "series": {series key: {t: [(name, labels, value)]}}}
    for s in scrapes:
        for name, labels, value in s.samples:
            family, kind = family_of(name, s.types)
            fam = families.setdefault(family, {"type": kind, "help": None, "series": {}})
            if fam["help"] is None:
                fam["help"] = s.helps.get(name, s.helps.get(family))
            key = tuple(sorted((k, v) for k, v in labels.items() if k not in ("le", "quantile")))
            points = fam["series"].setdefault(key, {})
            points.setdefault(s.t, []).append((name, labels, value))
    out = []
    for family, fam in families.items():
        out.append(f"# TYPE {family} {fam['type']}\n")
        if fam["help"] is not None:
            out.append(f"# HELP {family} {escape_help(fam['help'])}\n")
        for points in fam["series"].values():
            for t in sorted(points):
                stamp = format_time(t)
                for name, labels, value in _point_order(points[t], fam["type"]):
                    out.append(f"{name}{_labels_text(with_extra(labels, extra))} {format_value(value)} {stamp}\n")
    out.append("# EOF\n")
    return "".join(out)


def _point_order(samples, kind):
    """One point's samples in the order of the OpenMetrics specification's examples:
    buckets (or quantiles) by bound, then _count, then _sum."""
    if kind not in ("histogram", "summary"):
        return samples
    bound = "le" if kind == "histogram" else "quantile"

    def key(sample):
        name, labels, _ = sample
        if bound in labels:
            try:
                return (0, prom.parse_value(labels[bound]))
            except ValueError:
                return (0, math.inf)
        return (1 if name.endswith("_count") else 2, 0.0)
    return sorted(samples, key=key)


def convert(stream_text, target, mode, rnd):
    """metrics.prom.gz's text -> (OpenMetrics text, scrapes written, scrapes left out)."""
    scrapes, skipped = read_scrapes(stream_text)
    return render(scrapes, test_labels(target, mode, rnd)), len(scrapes), skipped
