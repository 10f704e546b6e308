"""Metric names: which ones notesd, the Express peer, postgres_exporter and k6's
remote-write output export, the names a PromQL expression selects (with the
extractor's own cases), and that every dashboard query names only exported ones."""
import re

from . import check
from .files import HERE, METRICS_DOC, ROOT, compose, dashboard_queries, dashboards, documented_metrics, rel

# Names postgres_exporter exports with its default settings, as used by the
# database dashboard. Source: prometheus-community/postgres_exporter (the image
# pinned in compose.yaml, v0.19.1): pg_up from the exporter itself;
# pg_stat_database_* from the stat_database collector, pg_database_size_bytes
# from the database collector and pg_locks_count from the locks collector (all
# three enabled by default); pg_stat_activity_count from the exporter's built-in
# pg_stat_activity query map (cmd/postgres_exporter/queries.go), on unless
# --disable-default-metrics. Add a name here only after checking it there.
POSTGRES_EXPORTER_TAG = "v0.19.1"  # the list below was checked against this release
POSTGRES_EXPORTER_METRICS = {
    "pg_up",
    "pg_stat_database_xact_commit",
    "pg_stat_database_xact_rollback",
    "pg_stat_database_tup_fetched",
    "pg_stat_database_tup_inserted",
    "pg_stat_database_tup_updated",
    "pg_stat_database_blks_hit",
    "pg_stat_database_blks_read",
    "pg_stat_activity_count",
    "pg_database_size_bytes",
    "pg_locks_count",
    # The stat_statements collector (--collector.stat_statements, collector/
    # pg_stat_statements.go), labels user, datname, queryid. The offline
    # overlay's query file for Debian's 0.11 exports the same names.
    "pg_stat_statements_calls_total",
    "pg_stat_statements_seconds_total",
    "pg_stat_statements_rows_total",
}
# Names only the Express peer exports (prom-client's names for V8's heap), each
# looked up in loadtests/peers/express/server.js by the check.
PEER_METRICS = {"nodejs_heap_size_used_bytes", "nodejs_heap_size_total_bytes"}
PEER_SERVER_JS = ROOT / "loadtests" / "peers" / "express" / "server.js"
# k6's built-in metrics by type, as its experimental-prometheus-rw output names
# them: counters k6_<name>_total, gauges k6_<name>, rates k6_<name>_rate, trends
# one gauge per configured stat, k6_<name>_<stat> ("p(99)" -> p99). Source:
# k6's metrics documentation (built-in metrics) and its remote-write output.
K6_COUNTERS = {"http_reqs", "iterations", "dropped_iterations", "data_sent", "data_received"}
K6_GAUGES = {"vus", "vus_max"}
K6_RATES = {"checks", "http_req_failed"}
K6_TRENDS = {"http_req_duration", "http_req_waiting", "http_req_blocked", "http_req_connecting",
             "http_req_sending", "http_req_receiving", "iteration_duration"}


def k6_trend_stats():
    """The trend stats k6 exports by remote write, from compose.yaml's k6 service
    (K6_PROMETHEUS_RW_TREND_STATS), as name suffixes: "p(99)" -> "p99"."""
    stats = compose(HERE / "compose.yaml")["services"]["k6"]["environment"]["K6_PROMETHEUS_RW_TREND_STATS"]
    return {re.sub(r"p\((\d+(?:\.\d+)?)\)", lambda m: "p" + m.group(1).replace(".", ""), st.strip())
            for st in stats.split(",")}


def k6_metric_names():
    names = {f"k6_{n}_total" for n in K6_COUNTERS} | {f"k6_{n}" for n in K6_GAUGES} | \
            {f"k6_{n}_rate" for n in K6_RATES}
    names |= {f"k6_{n}_{st}" for n in K6_TRENDS for st in k6_trend_stats()}
    return names


def allowed_metric_names():
    names = set(POSTGRES_EXPORTER_METRICS) | PEER_METRICS | k6_metric_names()
    for name, kind in documented_metrics().items():
        names.add(name)
        if kind == "histogram":
            names.update({name + "_bucket", name + "_sum", name + "_count"})
        elif kind == "summary":
            names.update({name + "_sum", name + "_count"})
    return names


PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                   "group_right", "bool", "offset", "atan2", "inf", "nan", "start", "end"}
_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\[\[[^\]]*\]\]|\$[A-Za-z_][A-Za-z0-9_]*")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.I)
_DURATION = re.compile(r"(?<![\w:.])\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*(?![\w:])")
_NUMBER = re.compile(r"(?<![\w:.])(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w:])")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"([^"]+)"')
LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?\s*,)?"
                           r"\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$")


def metric_names(expr):
    """Metric names an expression selects: identifiers that are neither functions,
    keywords, label names (in {...} or by/without/on/ignoring/group_* lists),
    numbers, durations nor Grafana variables."""
    lv = LABEL_VALUES.match(expr)
    if lv:  # Grafana's label_values(metric, label): only the first argument is a metric
        return {lv.group(1)} if lv.group(1) else set()
    names = set(_NAME_MATCHER.findall(expr))
    s = _STRING.sub('""', expr)
    s = _GRAFANA_VAR.sub(" 1m ", s)
    s = re.sub(r"\{[^{}]*\}", " ", s)          # label matchers
    s = re.sub(r"\[[^\[\]]*\]", " ", s)        # ranges and subqueries
    s = _GROUPING.sub(" ", s)
    s = _DURATION.sub(" ", s)
    s = _NUMBER.sub(" ", s)
    for m in _IDENT.finditer(s):
        tok = m.group(0)
        if s[m.end():].lstrip().startswith("("):
            continue  # function or aggregation
        if tok.lower() in PROMQL_KEYWORDS:
            continue
        names.add(tok)
    return names


EXTRACTOR_CASES = [
    ('sum by (job, path, status_code) (rate(http_requests_total{job=~"$job"}[$__rate_interval]))',
     {"http_requests_total"}),
    ('histogram_quantile(0.95, sum by (job, le) (rate(x_bucket{a="b", le!="1"}[5m])))', {"x_bucket"}),
    ("rate(a_sum[1m]) / rate(a_count[1m])", {"a_sum", "a_count"}),
    ("sum(rate(foo[5m])) by (le) > bool 0", {"foo"}),
    ("a_total offset 5m and on(job) b", {"a_total", "b"}),
    ("pg_up", {"pg_up"}),
    ("max_over_time(x[1h:1m])", {"x"}),
    ('label_replace(up, "dst", "$1", "src", "(.*)")', {"up"}),
    ('count_values("version", build_version)', {"build_version"}),
    ("sum without (instance) (c) * on(job) group_left(version) d_info", {"c", "d_info"}),
    ("1e-3 * x + 0x1F - .5", {"x"}),
    ('http_requests_total{status_code!~"2..", path="{odd}"}', {"http_requests_total"}),
    ("topk(5, rate(q[$__rate_interval]))", {"q"}),
    ("metric:recorded:rate5m", {"metric:recorded:rate5m"}),
    ("vector(1) + time() - process_start_time_seconds", {"process_start_time_seconds"}),
    ('{__name__="by_name", job="j"}', {"by_name"}),
    ("sum by(job)(rate(a[1m])) unless ignoring(le) -b @ start()", {"a", "b"}),
    ("abs(-x) ^ 2 % 3 == NaN or Inf", {"x"}),
    ('notes_eventloop_lag_p99_seconds{job=~"${job:regex}"}', {"notes_eventloop_lag_p99_seconds"}),
    ("label_values(notes_build_info, job)", {"notes_build_info"}),
    ('label_values(pg_stat_database_xact_commit{datname!=""}, datname)', {"pg_stat_database_xact_commit"}),
    ("label_values(job)", set()),
]


@check("metric-name extractor self-test")
def check_extractor():
    problems = []
    for expr, want in EXTRACTOR_CASES:
        got = metric_names(expr)
        if got != want:
            problems.append(f"metric_names({expr!r}) = {sorted(got)}, expected {sorted(want)}")
    return problems


@check("dashboard metric names exist in notesd, the peer, postgres_exporter or k6")
def check_metric_names():
    allowed = allowed_metric_names()
    if len(documented_metrics()) < 10:
        return [f"could not read the metrics table from {rel(METRICS_DOC)}"]
    problems, used = [], set()
    for name, dash in dashboards().items():
        for loc, expr in dashboard_queries(dash):
            names = metric_names(expr)
            if not names:
                problems.append(f"{name} {loc}: no metric name found in {expr!r}")
            for n in sorted(names - allowed):
                problems.append(f"{name} {loc}: {n!r} is neither in docs/metrics.md's table "
                                f"nor in the postgres_exporter list")
            used |= names
    for n in sorted(POSTGRES_EXPORTER_METRICS - used):
        problems.append(f"postgres_exporter name {n!r} is listed but no dashboard uses it")
    js = PEER_SERVER_JS.read_text(encoding="utf-8") if PEER_SERVER_JS.exists() else ""
    for n in sorted(PEER_METRICS):
        if f"'{n}'" not in js and f'"{n}"' not in js:
            problems.append(f"{n} is listed as a peer metric but {rel(PEER_SERVER_JS)} does not export it")
    for name, dash in dashboards().items():
        for loc, expr in dashboard_queries(dash):
            if any(n.startswith("k6_") for n in metric_names(expr)) and not loc.startswith("variable") \
               and 'testid=~"$testid"' not in expr:
                problems.append(f"{name} {loc}: a k6 query must select testid=~\"$testid\"")
    return problems
