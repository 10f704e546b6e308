#!/usr/bin/python3
"""Static checks of docker/ (no Docker engine needed).

    /usr/bin/python3 docker/check.py

Needs Debian's python3 with python3-yaml, and promtool (Debian package
`prometheus`). Uses docker-compose (Debian package `docker-compose`, v1) to
validate the compose files when it is installed, and skips that step otherwise.

What it checks:
  promtool     every Prometheus config passes `promtool check config`; scrape
               timeouts are not above their intervals; the live configs scrape
               every second
  grafana      the data source is the one the dashboards name (uid, URL,
               timeInterval = scrape interval); the provider's path is where
               compose mounts the dashboard files
  dashboards   every dashboard parses, is what make_dashboards.py generates, and
               every panel, query and variable uses the provisioned data source;
               every expression is valid PromQL (`promtool check rules`)
  metrics      every metric name in a dashboard expression is exported by notesd
               (docs/metrics.md's table; histograms with _bucket/_sum/_count),
               by the Express peer only (PEER_METRICS, found in server.js), by
               postgres_exporter (the list below) or by k6's remote-write output
               (K6_METRICS, with the trend stats compose.yaml and the TestRun
               configure); k6 queries select the `testid` variable
  offline      compose.offline.yaml: host networking everywhere, stand-ins built
               from docker/offline/Dockerfile targets, ports below the ephemeral
               range; its Prometheus template renders to a valid config
  compose      the compose files parse; every image has a pinned tag; the server
               waits for a healthy database; the database's health check goes
               over TCP; `docker-compose config -q` accepts them
  dockerfiles  the notesd build stage runs server/build.sh; the runtime stage is
               non-root (UID 10001), exposes 8080 and 9091, has a health check;
               the peer image follows the one-node_modules pattern, and its
               bases have the runtime versions loadtests/peers/runtimes pins
  defaults     ports and paths in compose, Dockerfiles and Prometheus agree with
               notesd's defaults in docs/configuration.md; every mounted or copied
               path exists
  libraries    (when a built notesd is at hand) the runtime packages provide every
               shared library the binary links against

A check that cannot run on this machine prints `skip` and counts neither way.
The last line is `N passed, M failed`; the exit status is 1 when anything failed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # importing make_dashboards must not leave __pycache__ behind

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

try:
    import yaml
except ImportError:  # pragma: no cover - environment problem, reported plainly
    print("FAIL setup: the yaml module is missing; install Debian's python3-yaml "
          "(apt-get install python3-yaml) and run with /usr/bin/python3")
    print("0 passed, 1 failed")
    sys.exit(1)

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
TESTRUN = HERE / "kubernetes" / "overlays" / "k6" / "testrun.yaml"
OFFLINE_COMPOSE = HERE / "compose.offline.yaml"
OFFLINE_PROMETHEUS = HERE / "prometheus" / "prometheus.offline.yml"
OFFLINE_DOCKERFILE = HERE / "offline" / "Dockerfile"

PROMETHEUS_CONFIGS = [
    HERE / "prometheus" / "prometheus.yml",
    HERE / "prometheus" / "prometheus.three-machines.yml",
    HERE / "replay" / "prometheus.yml",
]
LIVE_CONFIGS = PROMETHEUS_CONFIGS[:2]  # scraping ones: 1 s, as the comparison
COMPOSE_FILES = [HERE / "compose.yaml", HERE / "compose.load.yaml", HERE / "replay" / "compose.yaml",
                 HERE / "compose.offline.yaml"]
OVERLAYS = {"compose.load.yaml", "compose.offline.yaml"}  # services there may add to compose.yaml's
# Variables compose.load.yaml requires (${VAR:?...}); any address will do here.
COMPOSE_TEST_ENV = {"APP_HOST": "192.0.2.10", "DB_HOST": "192.0.2.11"}
DATASOURCES = HERE / "grafana" / "provisioning" / "datasources" / "prometheus.yaml"
PROVIDERS = HERE / "grafana" / "provisioning" / "dashboards" / "dashboards.yaml"
DEFINITIONS = HERE / "grafana" / "provisioning" / "dashboards" / "definitions"
DOCKERFILE = HERE / "Dockerfile"
PEERS_DOCKERFILE = HERE / "Dockerfile.peers"
# notesd's documented settings and metrics, which the files here must agree with.
CONFIG_DOC = ROOT / "docs" / "configuration.md"
METRICS_DOC = ROOT / "docs" / "metrics.md"
# The three runtime images and start commands. Their versions are the harness's
# (PEER_RUNTIMES, from npm), which check_peer_versions holds them to.
PEER_BASES = {
    "node": ("node:26.10.0-bookworm-slim", "node server.js"),
    "bun": ("oven/bun:1.4.4-debian", "bun server.js"),
    "deno": ("denoland/deno:debian-2.9.6", "deno run -A server.js"),
}
PEER_RUNTIMES = ROOT / "loadtests" / "peers" / "runtimes"
# The image test's stand-ins for those bases, one target per runtime.
RUNTIMES_DOCKERFILE = HERE / "tests" / "Dockerfile.runtimes"
RUNTIME_PACKAGES = {"libh2o-evloop0.13", "libpq5", "libcjson1", "libbrotli1", "ca-certificates"}


# ---------------------------------------------------------------- reporting

class Skip(Exception):
    """A check that cannot run here: printed, counted neither way."""


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, fn):
        try:
            problems = fn() or []
        except Skip as s:
            print(f"skip {name}: {s}")
            return
        except Exception as e:  # a check that crashes is a failed check
            problems = [f"{type(e).__name__}: {e}"]
        if problems:
            self.failed += 1
            for p in problems:
                print(f"FAIL {name}: {p}")
        else:
            self.passed += 1
            print(f"ok   {name}")


# ---------------------------------------------------------------- helpers

def one_line(text):
    return " | ".join(l.strip() for l in text.strip().splitlines() if l.strip())


def rel(p):
    try:
        return str(Path(p).resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


_INTERP = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def interpolate(value, env=None):
    """Compose-style ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?err}, $$."""
    env = env or {}

    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(4)
        op, arg = m.group(2), m.group(3)
        val = env.get(name)
        if op in (":-", "-"):
            if val is None or (op == ":-" and val == ""):
                return arg
            return val
        if op in (":?", "?"):
            if val is None or (op == ":?" and val == ""):
                raise ValueError(f"${{{name}}} required: {arg}")
            return val
        return val or ""

    if isinstance(value, str):
        return _INTERP.sub(sub, value)
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def duration_seconds(text):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    parts = re.findall(r"(\d+)(ms|[smhdwy])", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * units[u] for n, u in parts)


def image_pinned(ref):
    """A reference with an explicit tag other than latest (or a digest)."""
    if "@sha256:" in ref:
        return True
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last:
        return False
    tag = last.split(":", 1)[1]
    return bool(tag) and tag != "latest" and "$" not in tag


def dockerfile_lines(path):
    """Instructions with continuation lines joined and comments dropped."""
    text = Path(path).read_text(encoding="utf-8")
    out, cur = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        out.append(cur.strip())
        cur = ""
    if cur:
        out.append(cur.strip())
    return out


def dockerfile_stages(path):
    """[(from_line, [instructions])]; global instructions before FROM under None."""
    stages = [(None, [])]
    for ins in dockerfile_lines(path):
        if ins.upper().startswith("FROM "):
            stages.append((ins, []))
        else:
            stages[-1][1].append(ins)
    return stages


def documented_metrics():
    """name -> type, from docs/metrics.md's metrics table rows: | `name` | type | ..."""
    rows = re.findall(r"^\|\s*`([A-Za-z_:][A-Za-z0-9_:]*)`\s*\|\s*(counter|gauge|histogram|summary|untyped)\s*\|",
                      METRICS_DOC.read_text(encoding="utf-8"), re.M)
    return dict(rows)


def documented_defaults():
    """VARIABLE -> default, from docs/configuration.md's settings table."""
    rows = re.findall(r"^\|\s*`--[a-z-]+`\s*\|\s*`([A-Z_]+)`\s*\|\s*`?([^`|]*?)`?\s*\|",
                      CONFIG_DOC.read_text(encoding="utf-8"), re.M)
    return dict(rows)


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


# ---------------------------------------------------------------- PromQL names

PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                   "group_right", "bool", "offset", "atan2", "inf", "nan", "start", "end"}
_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\[\[[^\]]*\]\]|\$[A-Za-z_][A-Za-z0-9_]*")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.I)
_DURATION = re.compile(r"(?<![\w:.])\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*(?![\w:])")
_NUMBER = re.compile(r"(?<![\w:.])(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w:])")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"([^"]+)"')
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?\s*,)?"
                           r"\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$")


def metric_names(expr):
    """Metric names an expression selects: identifiers that are neither functions,
    keywords, label names (in {...} or by/without/on/ignoring/group_* lists),
    numbers, durations nor Grafana variables."""
    lv = _LABEL_VALUES.match(expr)
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


def dashboards():
    out = {}
    for path in sorted(DEFINITIONS.glob("*.json")):
        out[path.name] = json.loads(path.read_text(encoding="utf-8"))
    return out


def dashboard_queries(dash):
    """(where, expr) for every panel target and every query variable."""
    out = []
    for panel in all_panels(dash):
        for t in panel.get("targets", []):
            if t.get("expr"):
                out.append((f"panel {panel.get('title')!r} {t.get('refId')}", t["expr"]))
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            q = var.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            if q:
                out.append((f"variable {var.get('name')!r}", q))
    for ann in dash.get("annotations", {}).get("list", []):
        if ann.get("expr"):
            out.append((f"annotation {ann.get('name')!r}", ann["expr"]))
    return out


def all_panels(dash):
    for panel in dash.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # panels inside collapsed rows


# ---------------------------------------------------------------- checks: Prometheus

def check_promtool(path):
    def fn():
        promtool = shutil.which("promtool")
        if not promtool:
            return ["promtool not found (Debian package `prometheus`)"]
        r = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
        if r.returncode != 0:
            return [f"promtool check config {rel(path)}: {one_line(r.stdout + r.stderr)}"]
        return []
    return fn


def check_scrape_timing():
    problems = []
    for path in PROMETHEUS_CONFIGS:
        cfg = load_yaml(path) or {}
        g = cfg.get("global", {}) or {}
        g_int = duration_seconds(g.get("scrape_interval", "1m"))
        g_to = duration_seconds(g.get("scrape_timeout", "10s"))
        if path in LIVE_CONFIGS and (g_int != 1 or "scrape_timeout" not in g):
            problems.append(f"{rel(path)}: global scrape_interval must be 1s with an explicit scrape_timeout")
        if g_to > g_int:
            problems.append(f"{rel(path)}: global scrape_timeout {g_to}s > scrape_interval {g_int}s")
        for job in cfg.get("scrape_configs", []) or []:
            i = duration_seconds(job.get("scrape_interval", g.get("scrape_interval", "1m")))
            t = duration_seconds(job.get("scrape_timeout", g.get("scrape_timeout", "10s")))
            if t > i:
                problems.append(f"{rel(path)} job {job.get('job_name')}: scrape_timeout {t}s > scrape_interval {i}s")
    return problems


# ---------------------------------------------------------------- checks: Grafana

def provisioned_datasource():
    ds = load_yaml(DATASOURCES)["datasources"]
    if len(ds) != 1:
        raise ValueError(f"{rel(DATASOURCES)}: expected one data source, found {len(ds)}")
    return ds[0]


def check_datasource():
    problems = []
    cfg = load_yaml(DATASOURCES)
    if cfg.get("apiVersion") != 1:
        problems.append("datasources: apiVersion must be 1")
    ds = provisioned_datasource()
    want = {"type": "prometheus", "uid": "prometheus", "url": "http://prometheus:9090", "isDefault": True}
    for k, v in want.items():
        if ds.get(k) != v:
            problems.append(f"datasource {k} is {ds.get(k)!r}, expected {v!r}")
    interval = load_yaml(PROMETHEUS_CONFIGS[0])["global"]["scrape_interval"]
    if (ds.get("jsonData") or {}).get("timeInterval") != interval:
        problems.append(f"datasource jsonData.timeInterval must equal the scrape interval {interval!r}")
    return problems


def check_provider():
    problems = []
    cfg = load_yaml(PROVIDERS)
    if cfg.get("apiVersion") != 1:
        problems.append("dashboards provider: apiVersion must be 1")
    providers = cfg.get("providers") or []
    if len(providers) != 1 or providers[0].get("type") != "file":
        return problems + ["dashboards provider: expected one provider of type file"]
    path = (providers[0].get("options") or {}).get("path", "")
    # Both compose files mount grafana/provisioning at /etc/grafana/provisioning.
    prefix = "/etc/grafana/provisioning/"
    if not path.startswith(prefix):
        return problems + [f"provider path {path} is not under {prefix}"]
    local = HERE / "grafana" / "provisioning" / path[len(prefix):]
    if local.resolve() != DEFINITIONS.resolve():
        problems.append(f"provider path {path} is not {rel(DEFINITIONS)}")
    if not list(DEFINITIONS.glob("*.json")):
        problems.append(f"no dashboard JSON in {rel(DEFINITIONS)}")
    for compose in (HERE / "compose.yaml", HERE / "replay" / "compose.yaml"):
        vols = load_yaml(compose)["services"]["grafana"].get("volumes", [])
        mounts = {(compose.parent / v.split(":")[0]).resolve(): v.split(":")[1] for v in vols}
        if mounts.get((HERE / "grafana" / "provisioning").resolve()) != "/etc/grafana/provisioning":
            problems.append(f"{rel(compose)}: grafana/provisioning is not mounted at /etc/grafana/provisioning")
    return problems


def check_dashboards_parse():
    problems = []
    ds_uid = provisioned_datasource()["uid"]
    uids = {}
    boards = dashboards()
    if set(boards) != {"notesd-app.json", "postgres.json"}:
        problems.append(f"expected notesd-app.json and postgres.json, found {sorted(boards)}")
    for name, dash in boards.items():
        uid = dash.get("uid")
        if not uid or uid in uids:
            problems.append(f"{name}: missing or duplicate dashboard uid {uid!r}")
        uids[uid] = name
        ids = [p.get("id") for p in all_panels(dash)]
        if len(ids) != len(set(ids)):
            problems.append(f"{name}: duplicate panel ids")
        for panel in all_panels(dash):
            if panel.get("type") == "row":
                continue  # rows hold no queries
            if (panel.get("datasource") or {}).get("uid") != ds_uid:
                problems.append(f"{name}: panel {panel.get('title')!r} datasource is {panel.get('datasource')!r}")
            if not panel.get("targets"):
                problems.append(f"{name}: panel {panel.get('title')!r} has no query")
            for t in panel.get("targets", []):
                if (t.get("datasource") or {}).get("uid") != ds_uid:
                    problems.append(f"{name}: panel {panel.get('title')!r} query {t.get('refId')} "
                                    f"datasource is {t.get('datasource')!r}")
        for var in dash.get("templating", {}).get("list", []):
            if var.get("type") == "query" and (var.get("datasource") or {}).get("uid") != ds_uid:
                problems.append(f"{name}: variable {var.get('name')!r} datasource is {var.get('datasource')!r}")
        for ann in dash.get("annotations", {}).get("list", []):
            if (ann.get("datasource") or {}).get("uid") != ds_uid:
                problems.append(f"{name}: annotation {ann.get('name')!r} datasource is {ann.get('datasource')!r}")
    return problems


def check_dashboards_generated():
    sys.path.insert(0, str(HERE / "grafana"))
    try:
        import make_dashboards
    finally:
        sys.path.pop(0)
    problems = []
    if make_dashboards.DATASOURCE["uid"] != provisioned_datasource()["uid"]:
        problems.append("make_dashboards.DATASOURCE uid differs from the provisioned data source")
    for name, obj in make_dashboards.build().items():
        path = DEFINITIONS / name
        if not path.exists() or path.read_text(encoding="utf-8") != make_dashboards.render(obj):
            problems.append(f"{rel(path)} is not make_dashboards.py's output; rerun "
                            f"/usr/bin/python3 docker/grafana/make_dashboards.py")
    return problems


def check_promql_syntax():
    promtool = shutil.which("promtool")
    if not promtool:
        return ["promtool not found (Debian package `prometheus`)"]
    rules, where = [], []
    for name, dash in dashboards().items():
        for loc, expr in dashboard_queries(dash):
            if _LABEL_VALUES.match(expr):
                continue  # Grafana's label_values(), not PromQL
            # Grafana variables become what Grafana would send: a duration, a regex.
            e = expr.replace("$__rate_interval", "1m").replace("$__interval", "1m")
            e = re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(?::[a-z]+)?\}?", ".*", e)
            rules.append({"record": f"dashboard:query_{len(rules)}", "expr": e})
            where.append(f"{name} {loc}")
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}, f)
        tmp = f.name
    try:
        r = subprocess.run([promtool, "check", "rules", tmp], capture_output=True, text=True)
    finally:
        os.unlink(tmp)
    if r.returncode != 0:
        out = one_line(r.stdout + r.stderr)
        bad = sorted({int(n) for n in re.findall(r"dashboard:query_(\d+)", out)})
        return [f"not valid PromQL: {where[n]}: {rules[n]['expr']!r}" for n in bad] + \
               [f"promtool check rules: {out}"]
    if f"SUCCESS: {len(rules)} rules found" not in r.stdout:
        return [f"promtool did not see all {len(rules)} queries: {r.stdout.strip()}"]
    return []


def check_extractor():
    problems = []
    for expr, want in EXTRACTOR_CASES:
        got = metric_names(expr)
        if got != want:
            problems.append(f"metric_names({expr!r}) = {sorted(got)}, expected {sorted(want)}")
    return problems


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


def k6_pinned():
    """The k6 version the tests run, as loadtests/loadlib/tools/k6.py pins it."""
    text = (ROOT / "loadtests" / "loadlib" / "tools" / "k6.py").read_text()
    return re.search(r'^PINNED = "([^"]+)"', text, re.M).group(1)


def check_k6_trend_stats():
    """The TestRun runs k6 as compose.yaml does: the same trend stats and push
    interval (so the dashboards' k6_*_pNN names exist in both setups), the same
    image at the pinned version (loadtests/loadlib/tools/k6.py PINNED, the
    release the tests run), testid from TESTID and no --tag on the command line
    (a --tag replaces the script's tags: runtime, mode, round)."""
    k6 = compose(HERE / "compose.yaml")["services"]["k6"]
    cenv = k6["environment"]
    spec = load_yaml(TESTRUN)["spec"]
    runner = spec.get("runner") or {}
    env = {e["name"]: e.get("value") for e in runner.get("env", [])}
    problems = []
    for var in ("K6_PROMETHEUS_RW_TREND_STATS", "K6_PROMETHEUS_RW_PUSH_INTERVAL"):
        if env.get(var) != cenv.get(var):
            problems.append(f"{rel(TESTRUN)} {var} is {env.get(var)!r}, compose.yaml's k6 has "
                            f"{cenv.get(var)!r}")
    want = f"grafana/k6:{k6_pinned()}"
    if k6.get("image") != want:
        problems.append(f"compose.yaml's k6 image is {k6.get('image')!r}, the pinned k6 is {want}")
    for part in ("initializer", "runner", "starter"):
        image = (spec.get(part) or {}).get("image")
        if image is not None and image != want:
            problems.append(f"{rel(TESTRUN)} {part} image is {image!r}, the pinned k6 is {want}")
    if not env.get("TESTID"):
        problems.append(f"{rel(TESTRUN)}: the runners need TESTID (the testid tag of every sample)")
    if re.search(r"(^|\s)--tag(\s|=)", spec.get("arguments", "")):
        problems.append(f"{rel(TESTRUN)}: no --tag in arguments, it replaces the script's tags")
    return problems


# ---------------------------------------------------------------- checks: compose

def compose(path):
    """A compose file with variables at their defaults (compose.load.yaml's
    required ones set to test addresses)."""
    env = COMPOSE_TEST_ENV if Path(path).name == "compose.load.yaml" else {}
    return interpolate(load_yaml(path), env)


def check_compose_parse():
    problems = []
    for path in COMPOSE_FILES:
        data = load_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
            problems.append(f"{rel(path)}: no services mapping")
    return problems


def check_images_pinned():
    problems = []
    for path in COMPOSE_FILES:
        for name, svc in (compose(path).get("services") or {}).items():
            if "image" in svc and not image_pinned(svc["image"]):
                problems.append(f"{rel(path)} service {name}: image {svc['image']!r} has no pinned tag")
            if "image" not in svc and "build" not in svc and path.name not in OVERLAYS:
                problems.append(f"{rel(path)} service {name}: neither image nor build")
            args = ((svc.get("build") or {}) if isinstance(svc.get("build"), dict) else {}).get("args") or {}
            if "BASE" in args and not image_pinned(args["BASE"]):
                problems.append(f"{rel(path)} service {name}: build arg BASE {args['BASE']!r} is not pinned")
    exporter = compose(HERE / "compose.yaml")["services"]["postgres_exporter"]["image"]
    if exporter.rsplit(":", 1)[-1] != POSTGRES_EXPORTER_TAG:
        problems.append(f"postgres_exporter is now {exporter}: check POSTGRES_EXPORTER_METRICS against "
                        f"that release, then update POSTGRES_EXPORTER_TAG")
    for df in (DOCKERFILE, PEERS_DOCKERFILE):
        args = {}
        for ins in dockerfile_lines(df):
            m = re.match(r"ARG\s+([A-Za-z_]+)=(\S+)", ins)
            if m:
                args[m.group(1)] = m.group(2)
            m = re.match(r"FROM\s+(?:--platform=\S+\s+)?(\S+)", ins, re.I)
            if m:
                ref = re.sub(r"\$\{?([A-Za-z_]+)\}?", lambda a: args.get(a.group(1), "$" + a.group(1)), m.group(1))
                if not image_pinned(ref):
                    problems.append(f"{rel(df)}: {ins!r} is not a pinned image")
    for path in sorted(HERE.rglob("*")):
        if path.is_file() and path.suffix in {".yaml", ".yml", ".md", ""} and path.name != "check.py":
            for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if re.search(r"[\w/.-]+:latest\b", line):
                    problems.append(f"{rel(path)}:{i}: refers to a :latest image")
    return problems


def check_depends_healthy():
    problems = []
    services = compose(HERE / "compose.yaml")["services"]
    for name in ("notesd", "node", "bun", "deno", "postgres_exporter"):
        dep = (services.get(name) or {}).get("depends_on")
        if not isinstance(dep, dict) or (dep.get("db") or {}).get("condition") != "service_healthy":
            problems.append(f"compose.yaml service {name}: depends_on db must have condition: service_healthy")
    return problems


def check_db_healthcheck():
    problems = []
    db = compose(HERE / "compose.yaml")["services"]["db"]
    test = (db.get("healthcheck") or {}).get("test") or []
    words = test if isinstance(test, list) else test.split()
    if "pg_isready" not in words:
        problems.append("db healthcheck does not run pg_isready")
    if not any(words[i] == "-h" and words[i + 1] == "127.0.0.1" for i in range(len(words) - 1)):
        problems.append("db healthcheck must connect over TCP: pg_isready -h 127.0.0.1")
    if db.get("image", "").split(":")[0] != "postgres":
        problems.append("db image is not the official postgres image")
    env = db.get("environment") or {}
    if env.get("POSTGRES_DB") != "notes" or not env.get("POSTGRES_PASSWORD"):
        problems.append("db needs POSTGRES_DB=notes and a POSTGRES_PASSWORD")
    cmd = " ".join(db.get("command") or [])
    for want in ("shared_preload_libraries=pg_stat_statements", "max_connections=200"):
        if want not in cmd:
            problems.append(f"db command lacks {want}")
    mounts = {v.split(":")[1]: v.split(":")[0] for v in db.get("volumes", []) if ":" in v}
    for target, source in (("/docker-entrypoint-initdb.d/01-schema.sql", "../sql/schema.sql"),
                           ("/docker-entrypoint-initdb.d/02-seed.sql", "../sql/seed.sql"),
                           ("/docker-entrypoint-initdb.d/03-pg_stat_statements.sql", "../sql/pg_stat_statements.sql")):
        if mounts.get(target) != source:
            problems.append(f"db: {source} must be mounted at {target}")
    if not db.get("shm_size"):
        problems.append("db: set shm_size")
    return problems


def check_prometheus_service():
    problems = []
    svc = compose(HERE / "compose.yaml")["services"]["prometheus"]
    cmd = svc.get("command") or []
    for flag in ("--web.enable-remote-write-receiver", "--web.enable-admin-api"):
        if flag not in cmd:
            problems.append(f"prometheus lacks {flag}")
    replay = compose(HERE / "replay" / "compose.yaml")["services"]["prometheus"].get("command") or []
    if "--storage.tsdb.retention.time=100y" not in replay:
        problems.append("replay prometheus must keep old data: --storage.tsdb.retention.time=100y")
    k6 = compose(HERE / "compose.yaml")["services"]["k6"]
    kcmd = k6.get("command") or []
    if "experimental-prometheus-rw" not in kcmd or "-o" not in kcmd:
        problems.append("k6 must run with -o experimental-prometheus-rw")
    if (k6.get("environment") or {}).get("K6_PROMETHEUS_RW_SERVER_URL") != "http://prometheus:9090/api/v1/write":
        problems.append("k6 K6_PROMETHEUS_RW_SERVER_URL must be http://prometheus:9090/api/v1/write")
    for var in ("MODE", "VUS", "DURATION", "RT", "ROUND", "TESTID", "BASE_URL"):
        if var not in (k6.get("environment") or {}):
            problems.append(f"k6 environment lacks {var}")
    if any(a == "--tag" or str(a).startswith("--tag=") for a in kcmd):
        problems.append("k6 must not run with --tag: it replaces the script's tags (runtime, mode, "
                        "round), which every dashboard panel selects; TESTID adds testid to them")
    return problems


def check_docker_compose_config():
    exe = shutil.which("docker-compose")
    if not exe:
        raise Skip("docker-compose not installed (Debian package docker-compose); "
                   "the compose files are checked by this script only")
    problems = []
    runs = [([HERE / "compose.yaml"], {}),
            ([HERE / "compose.yaml", HERE / "compose.load.yaml"], COMPOSE_TEST_ENV),
            ([HERE / "replay" / "compose.yaml"], {}),
            ([HERE / "compose.yaml", HERE / "compose.offline.yaml"], {})]
    for files, extra in runs:
        cmd = [exe]
        for f in files:
            cmd += ["-f", str(f)]
        cmd += ["--profile", "peers", "--profile", "k6", "config", "-q"]
        env = dict(os.environ, **extra)
        for k in ("APP_HOST", "DB_HOST"):
            if k not in extra:
                env.pop(k, None)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT))
        if r.returncode != 0:
            problems.append(f"docker-compose {' '.join(rel(f) for f in files)} config -q: "
                            f"{one_line(r.stdout + r.stderr)}")
    return problems


# ---------------------------------------------------------------- checks: Dockerfiles

def runtime_packages():
    """Packages the notesd runtime stage installs, or None when it does not
    install them in exactly one apt-get install."""
    run = dockerfile_stages(DOCKERFILE)[-1][1]
    installs = [i for i in run if "apt-get install" in i]
    if len(installs) != 1:
        return None, []
    words = installs[0].split("apt-get install", 1)[1].split("&&")[0].split()
    return {w for w in words if not w.startswith("-")}, words


def check_dockerfile():
    problems = []
    stages = dockerfile_stages(DOCKERFILE)[1:]
    if len(stages) != 2:
        return [f"expected two stages (build, runtime), found {len(stages)}"]
    (build_from, build), (run_from, run) = stages
    if "debian:bookworm" not in build_from or "debian:bookworm" not in run_from:
        problems.append("both stages must be debian:bookworm-*-slim")
    if build_from.split()[1] != run_from.split()[1]:
        problems.append("build and runtime stages must use the same base image tag")
    runs = [i for i in build if i.startswith("RUN ")]
    if not any(re.search(r"(^|[\s;&|])server/build\.sh(\s|$)", r[4:]) and "--deps-only" not in r for r in runs):
        problems.append("build stage does not build with server/build.sh")
    if any("apt-get install" in r for r in runs):
        problems.append("build stage installs packages itself; server/build.sh holds the list")
    build_sh = (ROOT / "server" / "build.sh").read_text(encoding="utf-8")
    m = re.search(r"^PACKAGES=\(([^)]*)\)", build_sh, re.M)
    if m:
        dup = [p for p in m.group(1).split() if p not in RUNTIME_PACKAGES and
               re.search(rf"(?<![\w.-]){re.escape(p)}(?![\w.-])", "\n".join(run + build))]
        if dup:
            problems.append(f"Dockerfile repeats build.sh's packages: {dup}")
    text_run = "\n".join(run)
    if "USER 10001" not in run:
        problems.append("runtime stage must have USER 10001")
    if not any(re.fullmatch(r"EXPOSE\s+8080\s+9091", i) for i in run):
        problems.append("runtime stage must EXPOSE 8080 9091")
    hc = [i for i in run if i.startswith("HEALTHCHECK")]
    if len(hc) != 1 or "/readyz" not in hc[0] or "127.0.0.1" not in hc[0]:
        problems.append("runtime stage needs one HEALTHCHECK on 127.0.0.1 .../readyz")
    else:
        cmd = json.loads(hc[0].split(" CMD ", 1)[1])
        if cmd[0] != "bash":
            problems.append("HEALTHCHECK uses bash's /dev/tcp (curl is not in the image)")
    if 'ENTRYPOINT ["/usr/local/bin/notesd"]' not in run:
        problems.append('ENTRYPOINT must be ["/usr/local/bin/notesd"]')
    if not re.search(r"groupadd\b[^\n]*--gid 10001", text_run) or \
       not re.search(r"useradd\b[^\n]*--no-log-init[^\n]*--uid 10001", text_run):
        problems.append("runtime stage must create group and user 10001 (useradd --no-log-init)")
    pkgs, words = runtime_packages()
    if pkgs is None:
        problems.append("runtime stage must install its libraries in one apt-get install")
    else:
        if pkgs != RUNTIME_PACKAGES:
            problems.append(f"runtime packages are {sorted(pkgs)}, expected {sorted(RUNTIME_PACKAGES)}")
        if "--no-install-recommends" not in words:
            problems.append("runtime apt-get install needs --no-install-recommends")
    for want in ("COPY --from=build", "COPY sql/", "COPY loadtests/static/"):
        if not any(i.startswith(want) for i in run):
            problems.append(f"runtime stage lacks {want}")
    return problems


def check_peers_dockerfile():
    problems = []
    lines = dockerfile_lines(PEERS_DOCKERFILE)
    stages = dockerfile_stages(PEERS_DOCKERFILE)
    glob_args = [i for i in stages[0][1] if i.startswith("ARG BASE")]
    if not glob_args:
        problems.append("ARG BASE must come before the first FROM")
    if len(stages) != 3:
        return problems + [f"expected two stages (deps, runtime), found {len(stages) - 1}"]
    (deps_from, deps), (run_from, run) = stages[1], stages[2]
    if not deps_from.startswith(f"FROM {PEER_BASES['node'][0]} AS"):
        problems.append(f"dependencies must be installed in {PEER_BASES['node'][0]}")
    if "RUN npm ci --omit=dev" not in deps:
        problems.append("dependency stage must run npm ci --omit=dev")
    if not any("package-lock.json" in i and i.startswith("COPY") for i in deps):
        problems.append("dependency stage must copy package-lock.json")
    if run_from.split()[1] not in ("${BASE}", "$BASE"):
        problems.append("runtime stage must be FROM ${BASE}")
    if not any(i.startswith("ARG RUNTIME") for i in run):
        problems.append("runtime stage needs ARG RUNTIME")
    if not any(i.startswith("COPY --from=deps") and "node_modules" in i for i in run):
        problems.append("runtime stage must copy node_modules from the dependency stage")
    if not any(re.fullmatch(r"EXPOSE\s+8080\s+9091", i) for i in run):
        problems.append("runtime stage must EXPOSE 8080 9091")
    if not any(re.match(r"USER\s+10001", i) for i in run):
        problems.append("runtime stage must run as UID 10001")
    ep = [i for i in lines if i.startswith("ENTRYPOINT")]
    script = " ".join(json.loads(ep[0].split(None, 1)[1])) if ep else ""
    for rt, (_, start) in PEER_BASES.items():
        if f"{rt}) exec {start} ;;" not in script:
            problems.append(f"ENTRYPOINT does not start {rt} with `{start}`")
    services = compose(HERE / "compose.yaml")["services"]
    for rt, (base, _) in PEER_BASES.items():
        svc = services.get(rt) or {}
        build = svc.get("build") or {}
        if build.get("dockerfile") != "docker/Dockerfile.peers" or \
           (build.get("args") or {}) != {"BASE": base, "RUNTIME": rt}:
            problems.append(f"compose service {rt} must build docker/Dockerfile.peers with BASE={base} RUNTIME={rt}")
        if svc.get("profiles") != ["peers"]:
            problems.append(f"compose service {rt} must be in profile peers")
    return problems


def image_version(ref):
    """The x.y.z in an image's tag: node:26.10.0-bookworm-slim, oven/bun:1.4.4-debian,
    denoland/deno:debian-2.9.6."""
    m = re.search(r"(?<![\d.])(\d+\.\d+\.\d+)(?![\d.])", ref.rsplit(":", 1)[-1])
    return m.group(1) if m else None


def check_peer_versions():
    """The peer images run the runtimes the harness runs: every base's tag has
    the version loadtests/peers/runtimes pins (package.json and its lockfile),
    and the files that name the bases name these."""
    problems = []
    pins = json.loads((PEER_RUNTIMES / "package.json").read_text(encoding="utf-8"))["dependencies"]
    lock = json.loads((PEER_RUNTIMES / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    for rt, (base, _) in PEER_BASES.items():
        version = image_version(base)
        locked = (lock.get(f"node_modules/{rt}") or {}).get("version")
        if version is None:
            problems.append(f"{base}: no x.y.z version in the tag")
        elif version != pins.get(rt) or version != locked:
            problems.append(f"{base} runs {rt} {version}, the harness pins {pins.get(rt)} "
                            f"(package.json) and locks {locked}: bump them together")
    for path in (PEERS_DOCKERFILE, RUNTIMES_DOCKERFILE, HERE / "README.md"):
        text = path.read_text(encoding="utf-8")
        for rt, (base, _) in PEER_BASES.items():
            if base not in text:
                problems.append(f"{rel(path)} does not name {rt}'s base {base}")
    targets = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", RUNTIMES_DOCKERFILE.read_text(), re.M | re.I))
    if targets != set(PEER_BASES):
        problems.append(f"{rel(RUNTIMES_DOCKERFILE)} targets {sorted(targets)}, expected {sorted(PEER_BASES)}")
    return problems


def ignore_entries(path):
    return {l.strip() for l in path.read_text(encoding="utf-8").splitlines()
            if l.strip() and not l.startswith("#")}


def check_dockerignore():
    problems = []
    root = ROOT / ".dockerignore"
    if not root.exists():
        problems.append(".dockerignore missing at the root (Engine 20.10 and the classic builder read only it)")
    for df in (DOCKERFILE, PEERS_DOCKERFILE):
        ign = df.with_name(df.name + ".dockerignore")
        if root.exists() and ign.exists() and ignore_entries(ign) != ignore_entries(root):
            problems.append(f"{rel(ign)} and .dockerignore list different paths")
    for df in (DOCKERFILE, PEERS_DOCKERFILE):
        ign = df.with_name(df.name + ".dockerignore")
        if not ign.exists():
            problems.append(f"{rel(ign)} missing (BuildKit reads <Dockerfile>.dockerignore)")
            continue
        entries = {l.strip() for l in ign.read_text(encoding="utf-8").splitlines()
                   if l.strip() and not l.startswith("#")}
        for want in (".git", ".localdb", "build", "build-*", "**/node_modules"):
            if want not in entries:
                problems.append(f"{rel(ign)} does not exclude {want}")
    return problems


# ---------------------------------------------------------------- checks: defaults and paths

def check_defaults():
    problems = []
    d = documented_defaults()
    port, mport, host = d.get("PORT"), d.get("METRICS_PORT"), d.get("HOST")
    if not (port and mport and host):
        return [f"could not read PORT, METRICS_PORT, HOST defaults from {rel(CONFIG_DOC)}"]
    env_line = " ".join(i for i in dockerfile_stages(DOCKERFILE)[-1][1] if i.startswith("ENV "))
    env = dict(re.findall(r"([A-Z_]+)=(\S+)", env_line))
    if env.get("PORT") != port or env.get("METRICS_PORT") != mport or env.get("HOST") != host:
        problems.append(f"Dockerfile ENV HOST/PORT/METRICS_PORT {env} differ from {rel(CONFIG_DOC)} ({host}, {port}, {mport})")
    static = env.get("STATIC_DIR", "")
    copies = [i for i in dockerfile_stages(DOCKERFILE)[-1][1] if i.startswith("COPY loadtests/static/")]
    if not static or not copies or copies[0].split()[-1].rstrip("/") != static.rstrip("/"):
        problems.append(f"STATIC_DIR {static!r} is not where loadtests/static/ is copied")
    hc = [i for i in dockerfile_lines(DOCKERFILE) if i.startswith("HEALTHCHECK")]
    if hc and f"${{METRICS_PORT:-{mport}}}" not in hc[0]:
        problems.append(f"HEALTHCHECK does not default to METRICS_PORT {mport}")

    svc = compose(HERE / "compose.yaml")["services"]
    inner = {p.rsplit(":", 1)[1].split("/")[0] for p in svc["notesd"].get("ports", [])}
    if inner != {port, mport}:
        problems.append(f"compose notesd publishes container ports {sorted(inner)}, "
                        f"the documented defaults are {port}, {mport}")
    for rt in PEER_BASES:
        inner = {p.rsplit(":", 1)[1].split("/")[0] for p in svc[rt].get("ports", [])}
        if inner != {"8080", "9091"}:
            problems.append(f"compose {rt} publishes container ports {sorted(inner)}, the peer listens on 8080, 9091")
    peer_js = ROOT / "loadtests" / "peers" / "express" / "server.js"
    if peer_js.exists():
        js = peer_js.read_text(encoding="utf-8")
        for var, want in (("PORT", "8080"), ("METRICS_PORT", "9091")):
            m = re.search(rf"process\.env\.{var}\s*\|\|\s*(\d+)", js)
            if m and m.group(1) != want:
                problems.append(f"server.js default {var} is {m.group(1)}, compose assumes {want}")
    else:
        print("note loadtests/peers/express/server.js not present: peer port defaults not compared")
    k6_url = svc["k6"]["environment"]["BASE_URL"]
    if k6_url != f"http://notesd:{port}":
        problems.append(f"k6 default target {k6_url} is not http://notesd:{port}")
    if not svc["notesd"]["environment"]["DB_URL"].endswith("@db:5432/notes"):
        problems.append("notesd DB_URL does not default to the db service's notes database")

    prom = load_yaml(PROMETHEUS_CONFIGS[0])
    jobs = {j["job_name"]: [t for sc in j.get("static_configs", []) for t in sc.get("targets", [])]
            for j in prom["scrape_configs"]}
    if jobs.get("notesd") != [f"notesd:{mport}"]:
        problems.append(f"prometheus job notesd scrapes {jobs.get('notesd')}, expected notesd:{mport}")
    for rt in PEER_BASES:
        if jobs.get(rt) != [f"{rt}:9091"]:
            problems.append(f"prometheus job {rt} scrapes {jobs.get(rt)}, expected {rt}:9091")
    if not any(t == "postgres_exporter:9187" for ts in jobs.values() for t in ts):
        problems.append("prometheus does not scrape postgres_exporter:9187")
    three = load_yaml(PROMETHEUS_CONFIGS[1])
    tjobs = {j["job_name"]: [t for sc in j.get("static_configs", []) for t in sc.get("targets", [])]
             for j in three["scrape_configs"]}
    published = {"notesd": mport}
    for rt in PEER_BASES:
        for p in svc[rt].get("ports", []):
            if p.endswith(":9091"):
                published[rt] = p.rsplit(":", 2)[-2]
    for job, hp in published.items():
        if tjobs.get(job) != [f"app-host:{hp}"]:
            problems.append(f"three-machine job {job} scrapes {tjobs.get(job)}, "
                            f"but compose publishes its metrics on app-host:{hp}")
    return problems


def check_paths():
    problems = []
    for path in COMPOSE_FILES:
        for name, svc in (compose(path).get("services") or {}).items():
            for v in svc.get("volumes", []) or []:
                src = v.split(":")[0]
                if not src.startswith((".", "/")):
                    continue  # named volume
                p = (path.parent / src).resolve()
                if not p.exists() and p != (HERE / "replay" / "data").resolve():
                    problems.append(f"{rel(path)} {name}: mount source {src} does not exist")
            b = svc.get("build")
            if isinstance(b, dict):
                ctx = (path.parent / b.get("context", ".")).resolve()
                if not (ctx / b.get("dockerfile", "Dockerfile")).exists():
                    problems.append(f"{rel(path)} {name}: {b.get('dockerfile')} not found in context {rel(ctx)}")
    svc = compose(HERE / "compose.yaml")["services"]
    script = svc["k6"]["command"][-1]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["k6"]["volumes"]}
    for target, src in mounts.items():
        if script.startswith(target + "/"):
            if not (HERE / src / script[len(target) + 1:]).exists():
                problems.append(f"k6 script {script} does not exist in {src}")
            break
    else:
        problems.append(f"k6 script {script} is not inside a mounted directory")
    home = svc["grafana"]["environment"].get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH", "")
    if home and not (HERE / "grafana" / "provisioning" / home.split("/etc/grafana/provisioning/", 1)[-1]).exists():
        problems.append(f"Grafana home dashboard {home} does not exist")
    for df in (DOCKERFILE, PEERS_DOCKERFILE):
        for ins in dockerfile_lines(df):
            if ins.startswith("COPY ") and "--from=" not in ins:
                for src in ins.split()[1:-1]:
                    if src.startswith("--"):
                        continue
                    if src != "." and not (ROOT / src).exists():
                        problems.append(f"{rel(df)}: COPY source {src} does not exist")
    return problems


# ---------------------------------------------------------------- checks: runtime libraries

def check_runtime_libraries():
    binary = next((p for p in (ROOT / "build" / "notesd",) if p.exists()), None)
    tools = all(shutil.which(t) for t in ("ldd", "dpkg", "apt-cache"))
    if not binary or not tools:
        raise Skip("needs a built build/notesd and ldd, dpkg, apt-cache")
    packages, _ = runtime_packages()
    if not packages:
        return ["cannot read the runtime stage's apt-get install"]
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = re.findall(r"=>\s+(/\S+)", out)
    owners = set()
    problems = []
    for lib in libs:
        real = os.path.realpath(lib)
        r = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True)
        if r.returncode != 0:
            r = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"{lib}: no Debian package owns it")
            continue
        owners.add(r.stdout.split(":", 1)[0].split(",")[0].strip())
    r = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                        "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"]
                       + sorted(packages), capture_output=True, text=True)
    closure = {l.strip() for l in r.stdout.splitlines() if l and not l.startswith(" ")}
    closure = {c.split(":")[0] for c in closure}
    for pkg in sorted(owners - closure):
        problems.append(f"the binary needs {pkg}, which the runtime packages do not bring in")
    return problems


# ---------------------------------------------------------------- checks: offline overlay

def check_offline_overlay():
    problems = []
    overlay = compose(OFFLINE_COMPOSE)["services"]
    base = compose(HERE / "compose.yaml")["services"]
    if set(overlay) != set(base):
        problems.append(f"compose.offline.yaml must name every service of compose.yaml "
                        f"(host networking for all): {sorted(set(base) ^ set(overlay))}")
    for name, svc in overlay.items():
        if svc.get("network_mode") != "host":
            problems.append(f"compose.offline.yaml {name}: network_mode must be host")
    targets = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", OFFLINE_DOCKERFILE.read_text(), re.M | re.I))
    for name, svc in overlay.items():
        b = svc.get("build")
        if b:
            if b.get("dockerfile") != "docker/offline/Dockerfile" or b.get("target") not in targets:
                problems.append(f"compose.offline.yaml {name}: build must name a target of docker/offline/Dockerfile")
            if b.get("network") != "host":
                problems.append(f"compose.offline.yaml {name}: build.network must be host (apt-get in RUN)")
            if not svc.get("image", "").startswith("notesd-offline/"):
                problems.append(f"compose.offline.yaml {name}: stand-in images are named notesd-offline/*")
    for m in re.finditer(r"\$\{(OFFLINE_[A-Z_]+_PORT):-(\d+)\}", OFFLINE_COMPOSE.read_text()):
        if not 1024 < int(m.group(2)) < 32768:
            problems.append(f"{m.group(1)} defaults to {m.group(2)}, not below the ephemeral range (32768)")
    exporter = overlay["postgres_exporter"]
    query = next((a.split("=", 1)[1] for a in exporter.get("command", []) if a.startswith("--extend.query-path=")), "")
    mounts = {v.split(":")[1]: v.split(":")[0] for v in exporter.get("volumes", [])}
    if query not in mounts or not (HERE / mounts[query]).exists():
        problems.append("postgres_exporter's --extend.query-path must be a mounted file of docker/offline")
    if "--collector.stat_statements" not in (base["postgres_exporter"].get("command") or []):
        problems.append("compose.yaml's postgres_exporter needs --collector.stat_statements")
    return problems


def check_offline_prometheus():
    """The template, rendered as the stand-in's entrypoint does with the
    overlay's defaults, passes promtool; every variable it uses is set."""
    promtool = shutil.which("promtool")
    if not promtool:
        return ["promtool not found (Debian package `prometheus`)"]
    env = {k: str(v) for k, v in compose(OFFLINE_COMPOSE)["services"]["prometheus"]["environment"].items()}
    problems, lines = [], []
    for line in OFFLINE_PROMETHEUS.read_text(encoding="utf-8").splitlines():
        if not line.lstrip().startswith("#"):
            for name in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", line):
                if name not in env:
                    problems.append(f"{rel(OFFLINE_PROMETHEUS)} uses ${{{name}}}, which the overlay does not set")
                line = line.replace("${" + name + "}", env.get(name, "0"))
        lines.append(line)
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        tmp = f.name
    try:
        r = subprocess.run([promtool, "check", "config", tmp], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"promtool check config (rendered): {one_line(r.stdout + r.stderr)}")
        jobs = {j["job_name"] for j in load_yaml(tmp)["scrape_configs"]}
        if not {"notesd", "postgres", "prometheus"} <= jobs:
            problems.append(f"offline jobs {sorted(jobs)} lack notesd, postgres or prometheus")
    finally:
        os.unlink(tmp)
    return problems


# ---------------------------------------------------------------- main

def main():
    report = Report()
    for path in PROMETHEUS_CONFIGS:
        report.run(f"promtool check config {rel(path)}", check_promtool(path))
    report.run("prometheus scrape_timeout <= scrape_interval, 1s scrapes", check_scrape_timing)
    report.run("grafana data source provisioning", check_datasource)
    report.run("grafana dashboard provider and mounts", check_provider)
    report.run("dashboards parse and use the provisioned data source", check_dashboards_parse)
    report.run("dashboards are make_dashboards.py's output", check_dashboards_generated)
    report.run("dashboard queries are valid PromQL (promtool check rules)", check_promql_syntax)
    report.run("metric-name extractor self-test", check_extractor)
    report.run("dashboard metric names exist in notesd, the peer, postgres_exporter or k6", check_metric_names)
    report.run("k6: the TestRun runs the pinned k6 as compose.yaml does (trend stats, push "
               "interval, image, TESTID, no --tag)", check_k6_trend_stats)
    report.run("compose files parse", check_compose_parse)
    report.run("images pinned (compose, build args, FROM), no :latest", check_images_pinned)
    report.run("server and peers wait for a healthy database", check_depends_healthy)
    report.run("db service: TCP health check, init scripts, settings", check_db_healthcheck)
    report.run("prometheus flags, replay retention, k6 remote write", check_prometheus_service)
    report.run("docker-compose config -q", check_docker_compose_config)
    report.run("Dockerfile: build.sh build stage, non-root runtime stage", check_dockerfile)
    report.run("Dockerfile.peers: one node_modules, three runtimes", check_peers_dockerfile)
    report.run("peer bases run the harness's runtime versions (loadtests/peers/runtimes)", check_peer_versions)
    report.run("dockerignore files next to the Dockerfiles", check_dockerignore)
    report.run("ports and defaults agree with docs/configuration.md", check_defaults)
    report.run("compose.offline.yaml: host networking, Debian stand-ins, ports", check_offline_overlay)
    report.run("prometheus.offline.yml renders to a valid config", check_offline_prometheus)
    report.run("mounted and copied paths exist", check_paths)
    report.run("runtime packages cover the binary's shared libraries", check_runtime_libraries)
    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
