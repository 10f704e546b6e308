#!/usr/bin/python3
"""Writes the two provisioned Grafana dashboards.

    /usr/bin/python3 docker/grafana/make_dashboards.py          # rewrite the JSON files
    /usr/bin/python3 docker/grafana/make_dashboards.py --check  # exit 1 if they are stale

The JSON in provisioning/dashboards/definitions/ is this script's output and is
committed; docker/check.py fails when the two differ. Edit here, then rerun.

notesd-app.json  the server under test: one `job` per target (notesd, node,
                 bun, deno), the metric names of docs/metrics.md's table,
                 which the Express peer exposes too; and a k6 row (k6's
                 remote-write samples, picked by `testid`), with each test's
                 window as an annotation.
postgres.json    the database, from postgres_exporter's default collectors and
                 its stat_statements collector.
"""

import json
import sys
from pathlib import Path

DATASOURCE = {"type": "prometheus", "uid": "prometheus"}  # provisioning/datasources/prometheus.yaml
OUT_DIR = Path(__file__).resolve().parent / "provisioning" / "dashboards" / "definitions"
RATE = "$__rate_interval"


class Layout:
    """Places panels left to right in a 24-column grid, rows of equal height."""

    def __init__(self):
        self.panels = []
        self.x = 0
        self.y = 0
        self.row_h = 0

    def _next_id(self):
        return len(self.panels) + 1

    def row(self, title):
        if self.x:
            self.y += self.row_h
        self.x, self.row_h = 0, 0
        self.panels.append({
            "id": self._next_id(),
            "type": "row",
            "title": title,
            "collapsed": False,
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
            "panels": [],
        })
        self.y += 1

    def add(self, panel, w=12, h=8):
        if self.x + w > 24:
            self.y += self.row_h
            self.x, self.row_h = 0, 0
        panel["id"] = self._next_id()
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.panels.append(panel)
        self.x += w
        self.row_h = max(self.row_h, h)


def target(ref, expr, legend, instant=False):
    t = {"refId": ref, "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
    if instant:
        t.update({"instant": True, "range": False, "format": "table"})
    else:
        t.update({"instant": False, "range": True})
    return t


def timeseries(title, description, unit, targets, minimum=0, stack=False):
    custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10 if stack else 0,
              "showPoints": "never", "spanNulls": False}
    if stack:
        custom["stacking"] = {"mode": "normal", "group": "A"}
    defaults = {"unit": unit, "custom": custom}
    if minimum is not None:
        defaults["min"] = minimum
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                       "calcs": ["mean", "max", "lastNotNull"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": [target(chr(ord("A") + i), e, l) for i, (e, l) in enumerate(targets)],
    }


def stat(title, description, unit, expr, legend):
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "value", "graphMode": "area", "textMode": "auto"},
        "targets": [target("A", expr, legend)],
    }


def query_variable(name, label, query, default=None):
    v = {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": name},
        "refresh": 2,
        "sort": 1,
        "regex": "",
        "multi": True,
        "includeAll": True,
    }
    if default is None:
        v["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
    else:
        v["current"] = {"selected": True, "text": [default], "value": [default]}
    return v


def dashboard(uid, title, description, variables, panels, annotations=()):
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["notesd"],
        "editable": False,
        "graphTooltip": 1,
        "timezone": "utc",
        "refresh": "5s",
        "time": {"from": "now-15m", "to": "now"},
        "schemaVersion": 39,
        "version": 1,
        "annotations": {"list": list(annotations)},
        "links": [],
        "templating": {"list": variables},
        "panels": panels,
    }


def hq(q, metric, by, sel):
    """histogram_quantile over a classic histogram, summed per `by` labels and le."""
    return (f"histogram_quantile({q}, sum by ({by}, le) "
            f"(rate({metric}_bucket{{{sel}}}[{RATE}])))")


# k6's samples arrive by remote write (experimental-prometheus-rw), named by its
# output: counters k6_<metric>_total, gauges k6_<metric>, rates k6_<metric>_rate,
# trends one gauge per stat in K6_PROMETHEUS_RW_TREND_STATS (k6_<metric>_p99, in
# seconds). Every sample carries the run's tags: testid (TESTID), runtime (RT,
# the same name as the server's job), scenario, name (the route), and with the
# k6-operator instance_id (one per runner pod).
K6 = 'testid=~"$testid", runtime=~"$job"'

K6_TEST_WINDOWS = {
    "name": "k6 test runs",
    "datasource": DATASOURCE,
    "enable": True,
    "iconColor": "rgba(255, 152, 48, 1)",
    # A region per testid while its VUs report: the test's window.
    "expr": 'count by (testid) (k6_vus{testid=~"$testid"})',
    "step": "5s",
    "titleFormat": "k6 {{testid}}",
    "textFormat": "k6 test {{testid}} running",
    "tagKeys": "testid",
    "useValueForTime": False,
}


def k6_row(L):
    """k6's view of the same run, beside the server's: rates, latency, VUs,
    dropped iterations and checks, for the tests picked in `testid`."""
    L.row("k6 (client side)")
    L.add(timeseries(
        "k6: requests per second by scenario and route",
        "rate(k6_http_reqs_total), summed over k6 instances (runner pods), by scenario and "
        "the request's name tag (the route). Compare with the server's rate above: the two "
        "differ only by requests in flight.",
        "reqps",
        [(f"sum by (testid, scenario, name) (rate(k6_http_reqs_total{{{K6}}}[{RATE}]))",
          "{{testid}} {{scenario}} {{name}}")]))
    L.add(timeseries(
        "p99: k6 (client) next to the server",
        "k6_http_req_duration_p99: k6's p99 over the whole run so far (the remote-write "
        "output keeps one digest per series from the start), the largest over runner pods. "
        "server: histogram_quantile(0.99) of http_request_duration_seconds over the rate "
        "window. Client minus server is network, queueing in the kernel and the client itself.",
        "s",
        [(f"max by (testid, name) (k6_http_req_duration_p99{{{K6}}})", "k6 {{testid}} {{name}} p99"),
         (hq(0.99, "http_request_duration_seconds", "job, path", 'job=~"$job"'),
          "server {{job}} {{path}} p99")]))
    L.add(timeseries(
        "k6: virtual users",
        "k6_vus summed over runner pods, and the most VUs the test may start (k6_vus_max).",
        "short",
        [(f"sum by (testid) (k6_vus{{{K6}}})", "{{testid}} VUs"),
         (f"sum by (testid) (k6_vus_max{{{K6}}})", "{{testid}} VUs max")]), w=8)
    L.add(timeseries(
        "k6: dropped iterations per second",
        "rate(k6_dropped_iterations_total): iterations an arrival-rate scenario could not "
        "start for lack of VUs. Anything above 0 means the offered load was not sent.",
        "ops",
        [(f"sum by (testid, scenario) (rate(k6_dropped_iterations_total{{{K6}}}[{RATE}]))",
          "{{testid}} {{scenario}}")]), w=8)
    L.add(timeseries(
        "k6: checks passed",
        "k6_checks_rate: the share of checks that passed so far, per check, the lowest over "
        "runner pods.",
        "percentunit",
        [(f"min by (testid, check) (k6_checks_rate{{{K6}}})", "{{testid}} {{check}}")],
        minimum=None), w=8)


def app_dashboard():
    j = 'job=~"$job"'
    L = Layout()

    L.row("Requests")
    L.add(timeseries(
        "Requests per second by route and status",
        "rate(http_requests_total): requests answered, by route template and status "
        "(status 0: the client left before the response was complete).",
        "reqps",
        [(f"sum by (job, path, status_code) (rate(http_requests_total{{{j}}}[{RATE}]))",
          "{{job}} {{path}} {{status_code}}")]))
    L.add(timeseries(
        "Requests per second per target",
        "All routes together, one line per target.",
        "reqps",
        [(f"sum by (job) (rate(http_requests_total{{{j}}}[{RATE}]))", "{{job}}")]))
    L.add(timeseries(
        "Latency p50 / p95 / p99 (server side)",
        "From http_request_duration_seconds: handler received the parsed request to the "
        "last response byte written. Client-side latency adds network and queueing.",
        "s",
        [(hq(0.5, "http_request_duration_seconds", "job", j), "{{job}} p50"),
         (hq(0.95, "http_request_duration_seconds", "job", j), "{{job}} p95"),
         (hq(0.99, "http_request_duration_seconds", "job", j), "{{job}} p99")]))
    L.add(timeseries(
        "Latency p99 by route",
        "p99 of http_request_duration_seconds per route template.",
        "s",
        [(hq(0.99, "http_request_duration_seconds", "job, path", j), "{{job}} {{path}}")]))
    L.add(timeseries(
        "Responses other than 2xx per second",
        "Any status outside 200-299, including 0 (client gone) and 503 (no database "
        "connection could be had).",
        "reqps",
        [(f'sum by (job, status_code) (rate(http_requests_total{{{j}, status_code!~"2.."}}[{RATE}]))',
          "{{job}} {{status_code}}")]))
    L.add(timeseries(
        "Requests in flight, open connections",
        "http_requests_in_flight: received and not yet finished. notes_http_connections: "
        "open HTTP connections on both ports (notesd only).",
        "short",
        [(f"http_requests_in_flight{{{j}}}", "{{job}} in flight"),
         (f"notes_http_connections{{{j}}}", "{{job}} connections")]))

    L.row("WebSockets and streams (notesd's fixture routes)")
    L.add(timeseries(
        "WebSocket connections: open, and opened per second",
        "notes_ws_connections: open now (past the 101, not yet closed), by route; "
        "rate(notes_ws_connections_opened_total): new ones. The handshake itself is also a "
        "request with status 101 in the panels above; the connection's life is kept out of "
        "http_request_duration_seconds.",
        "short",
        [(f"sum by (job, path) (notes_ws_connections{{{j}}})", "{{job}} {{path}} open"),
         (f"sum by (job, path) (rate(notes_ws_connections_opened_total{{{j}}}[{RATE}]))",
          "{{job}} {{path}} opened/s")]), w=8)
    L.add(timeseries(
        "WebSocket messages per second, each way",
        "rate(notes_ws_messages_total): data messages received whole from clients and "
        "queued to be sent (pings, pongs and closes not counted). Compare with a load tool's "
        "own counts: they should agree exactly.",
        "ops",
        [(f"sum by (job, path, direction) (rate(notes_ws_messages_total{{{j}}}[{RATE}]))",
          "{{job}} {{path}} {{direction}}")]), w=8)
    L.add(timeseries(
        "WebSocket payload bytes per second, each way",
        "rate(notes_ws_message_bytes_total): the messages' payload, frame headers not counted.",
        "Bps",
        [(f"sum by (job, path, direction) (rate(notes_ws_message_bytes_total{{{j}}}[{RATE}]))",
          "{{job}} {{path}} {{direction}}")]), w=8)
    L.add(timeseries(
        "WebSocket closes per second by reason, and feed messages skipped",
        "rate(notes_ws_closes_total) by reason: client (the client's close frame), done "
        "(1000), idle_timeout and shutdown (1001), protocol_error (1002, 1007), "
        "message_limit and not_reading (1008), too_big (1009), abnormal (no closing handshake). "
        "rate(notes_ws_messages_skipped_total): feed messages left out because the client "
        "was not reading.",
        "ops",
        [(f"sum by (job, path, reason) (rate(notes_ws_closes_total{{{j}}}[{RATE}]))",
          "{{job}} {{path}} {{reason}}"),
         (f"sum by (job, path) (rate(notes_ws_messages_skipped_total{{{j}}}[{RATE}]))",
          "{{job}} {{path}} skipped")]), w=8)
    L.add(timeseries(
        "WebSocket connection lifetime p50 / p99",
        "From notes_ws_connection_duration_seconds: the 101 written to the socket's close, "
        "for the connections that closed in the rate window.",
        "s",
        [(hq(0.5, "notes_ws_connection_duration_seconds", "job, path", j), "{{job}} {{path}} p50"),
         (hq(0.99, "notes_ws_connection_duration_seconds", "job, path", j),
          "{{job}} {{path}} p99")]), w=8)
    L.add(timeseries(
        "Server-Sent Events per second",
        "rate(notes_sse_events_total): events /sse handed to h2o.",
        "ops",
        [(f"rate(notes_sse_events_total{{{j}}}[{RATE}])", "{{job}} events")]), w=8)

    L.row("Process")
    L.add(timeseries(
        "CPU (1.0 = one core)",
        "rate(process_cpu_seconds_total): user + system CPU seconds per second.",
        "percentunit",
        [(f"rate(process_cpu_seconds_total{{{j}}}[{RATE}])", "{{job}}")]), w=8)
    L.add(timeseries(
        "Resident memory (RSS)",
        "process_resident_memory_bytes. The one memory figure that compares across all "
        "runtimes.",
        "bytes",
        [(f"process_resident_memory_bytes{{{j}}}", "{{job}}")]), w=8)
    L.add(timeseries(
        "Heap",
        "process_heap_bytes: the process's data segment (VmData from /proc/self/status), "
        "the same measure on every target, as prom-client reports it on Linux. "
        "notes_malloc_heap_used_bytes: bytes in use in glibc malloc (notesd). "
        "nodejs_heap_size_used_bytes / _total_bytes: the JavaScript engine's heap in the "
        "peer (V8 on node and deno, JavaScriptCore on bun: compare node with deno only).",
        "bytes",
        [(f"process_heap_bytes{{{j}}}", "{{job}} process_heap_bytes (VmData)"),
         (f"notes_malloc_heap_used_bytes{{{j}}}", "{{job}} malloc in use"),
         (f"nodejs_heap_size_used_bytes{{{j}}}", "{{job}} JS heap used"),
         (f"nodejs_heap_size_total_bytes{{{j}}}", "{{job}} JS heap total")]), w=8)
    L.add(timeseries(
        "Event loop delay",
        "How late a 100 ms timer fires. The window gauges (mean, max, p99) cover the "
        "samples since the previous scrape; the histogram mean and p99 cover the rate "
        "window and stay right with more than one scraper.",
        "s",
        [(f"notes_eventloop_lag_mean_seconds{{{j}}}", "{{job}} mean (window)"),
         (f"notes_eventloop_lag_max_seconds{{{j}}}", "{{job}} max (window)"),
         (f"notes_eventloop_lag_p99_seconds{{{j}}}", "{{job}} p99 (window)"),
         (f"rate(notes_eventloop_delay_seconds_sum{{{j}}}[{RATE}]) / "
          f"rate(notes_eventloop_delay_seconds_count{{{j}}}[{RATE}])", "{{job}} mean (histogram)"),
         (hq(0.99, "notes_eventloop_delay_seconds", "job", j), "{{job}} p99 (histogram)")]),
        w=24)

    L.row("Database pool")
    L.add(timeseries(
        "Pool: connections, idle, waiting",
        "pg.Pool's totalCount, idleCount and waitingCount, and the pool's limit.",
        "short",
        [(f"notes_db_pool_connections{{{j}}}", "{{job}} total"),
         (f"notes_db_pool_idle_connections{{{j}}}", "{{job}} idle"),
         (f"notes_db_pool_waiting_requests{{{j}}}", "{{job}} waiting"),
         (f"notes_db_pool_max_connections{{{j}}}", "{{job}} max")]))
    L.add(timeseries(
        "Pool acquire wait p95 / p99",
        "notes_db_pool_acquire_duration_seconds: from a query entering the pool to a "
        "connection being handed to it.",
        "s",
        [(hq(0.95, "notes_db_pool_acquire_duration_seconds", "job", j), "{{job}} p95"),
         (hq(0.99, "notes_db_pool_acquire_duration_seconds", "job", j), "{{job}} p99")]))
    L.add(timeseries(
        "Query time per statement p50 / p95",
        "notes_db_query_duration_seconds: from sending a statement to its complete result.",
        "s",
        [(hq(0.5, "notes_db_query_duration_seconds", "job, statement", j), "{{job}} {{statement}} p50"),
         (hq(0.95, "notes_db_query_duration_seconds", "job, statement", j), "{{job}} {{statement}} p95")]))
    L.add(timeseries(
        "Queries per second per statement",
        "Completed statements per second (the query histogram's count).",
        "ops",
        [(f"sum by (job, statement) (rate(notes_db_query_duration_seconds_count{{{j}}}[{RATE}]))",
          "{{job}} {{statement}}")]))
    L.add(timeseries(
        "Pool failures and connections opened per second",
        "Connection errors, queries refused at once (503), acquire and query timeouts, "
        "and new connections. Series a target does not export stay empty.",
        "ops",
        [(f"rate(notes_db_connection_errors_total{{{j}}}[{RATE}])", "{{job}} connection errors"),
         (f"rate(notes_db_pool_rejected_total{{{j}}}[{RATE}])", "{{job}} rejected"),
         (f"rate(notes_db_pool_acquire_timeouts_total{{{j}}}[{RATE}])", "{{job}} acquire timeouts"),
         (f"rate(notes_db_query_timeouts_total{{{j}}}[{RATE}])", "{{job}} query timeouts"),
         (f"rate(notes_db_connections_opened_total{{{j}}}[{RATE}])", "{{job}} opened")]), w=24)

    k6_row(L)

    L.row("Build")
    build = {
        "type": "table",
        "title": "Targets",
        "description": "notes_build_info: version, runtime and library versions of each target.",
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {}, "overrides": []},
        "options": {"showHeader": True},
        "transformations": [{"id": "organize", "options": {
            "excludeByName": {"Time": True, "Value": True, "__name__": True}}}],
        "targets": [target("A", f"notes_build_info{{{j}}}", "", instant=True)],
    }
    L.add(build, w=24, h=6)

    return dashboard(
        "notesd-app", "notesd: server under test",
        "Requests, latency, CPU, memory, event loop and database pool of notesd and of the "
        "Express peer on node, bun and deno. Pick targets with the `target` variable.",
        [query_variable("job", "target", "label_values(notes_build_info, job)"),
         query_variable("testid", "k6 test", "label_values(k6_vus, testid)")],
        L.panels,
        annotations=[K6_TEST_WINDOWS])


def postgres_dashboard():
    d = 'datname=~"$datname"'
    L = Layout()

    L.row("Database")
    L.add(stat("Exporter connected", "pg_up: 1 when postgres_exporter's last scrape reached "
               "PostgreSQL.", "none", "pg_up", "{{instance}}"), w=6, h=5)
    L.add(stat("Database size", "pg_database_size_bytes.", "bytes",
               f"pg_database_size_bytes{{{d}}}", "{{datname}}"), w=6, h=5)
    L.add(stat("Connections", "pg_stat_activity_count, all states.", "short",
               f"sum by (datname) (pg_stat_activity_count{{{d}}})", "{{datname}}"), w=6, h=5)
    L.add(stat("Buffer cache hit ratio", "blks_hit / (blks_hit + blks_read) over the rate "
               "window.", "percentunit",
               f"sum by (datname) (rate(pg_stat_database_blks_hit{{{d}}}[{RATE}])) / "
               f"(sum by (datname) (rate(pg_stat_database_blks_hit{{{d}}}[{RATE}])) + "
               f"sum by (datname) (rate(pg_stat_database_blks_read{{{d}}}[{RATE}])))",
               "{{datname}}"), w=6, h=5)

    L.row("Work")
    L.add(timeseries(
        "Transactions per second",
        "pg_stat_database xact_commit and xact_rollback.",
        "ops",
        [(f"rate(pg_stat_database_xact_commit{{{d}}}[{RATE}])", "{{datname}} commit"),
         (f"rate(pg_stat_database_xact_rollback{{{d}}}[{RATE}])", "{{datname}} rollback")]))
    L.add(timeseries(
        "Rows per second",
        "pg_stat_database tup_fetched, tup_inserted and tup_updated.",
        "ops",
        [(f"rate(pg_stat_database_tup_fetched{{{d}}}[{RATE}])", "{{datname}} fetched"),
         (f"rate(pg_stat_database_tup_inserted{{{d}}}[{RATE}])", "{{datname}} inserted"),
         (f"rate(pg_stat_database_tup_updated{{{d}}}[{RATE}])", "{{datname}} updated")]))
    L.add(timeseries(
        "Blocks per second: buffer cache hits and reads",
        "pg_stat_database blks_hit (found in shared buffers) and blks_read (asked of the "
        "operating system, which may still have them cached).",
        "ops",
        [(f"rate(pg_stat_database_blks_hit{{{d}}}[{RATE}])", "{{datname}} hit"),
         (f"rate(pg_stat_database_blks_read{{{d}}}[{RATE}])", "{{datname}} read")]))
    L.add(timeseries(
        "Connections by state",
        "pg_stat_activity_count by state. Each pool holds up to 20; the exporter adds one "
        "per scrape.",
        "short",
        [(f"sum by (datname, state) (pg_stat_activity_count{{{d}}})", "{{datname}} {{state}}")],
        stack=True))
    L.add(timeseries(
        "Locks by mode",
        "pg_locks_count by lock mode.",
        "short",
        [(f"sum by (datname, mode) (pg_locks_count{{{d}}})", "{{datname}} {{mode}}")]))
    L.add(timeseries(
        "Database size",
        "pg_database_size_bytes: grows with the write tests until the table is reseeded.",
        "bytes",
        [(f"pg_database_size_bytes{{{d}}}", "{{datname}}")], minimum=None))

    L.row("Statements (pg_stat_statements)")
    s = f'{d}, user!=""'
    L.add(timeseries(
        "Calls per second, busiest 10 statements",
        "pg_stat_statements_calls_total by queryid (the exporter's stat_statements "
        "collector): what the database really ran, to hold against the server's "
        "http_requests_total and notes_db_query_duration_seconds_count.",
        "ops",
        [(f"topk(10, sum by (datname, queryid) (rate(pg_stat_statements_calls_total{{{s}}}[{RATE}])))",
          "{{datname}} {{queryid}}")]))
    L.add(timeseries(
        "Mean execution time per call",
        "rate(pg_stat_statements_seconds_total) / rate(pg_stat_statements_calls_total): "
        "time inside PostgreSQL per execution, without the network and the pool.",
        "s",
        [(f"sum by (datname, queryid) (rate(pg_stat_statements_seconds_total{{{s}}}[{RATE}])) / "
          f"sum by (datname, queryid) (rate(pg_stat_statements_calls_total{{{s}}}[{RATE}])) > 0",
          "{{datname}} {{queryid}}")]))
    L.add(timeseries(
        "Rows per call",
        "rate(pg_stat_statements_rows_total) / rate(pg_stat_statements_calls_total): 1 for "
        "GET /notes/:id, up to 20 for GET /notes?tag=.",
        "short",
        [(f"sum by (datname, queryid) (rate(pg_stat_statements_rows_total{{{s}}}[{RATE}])) / "
          f"sum by (datname, queryid) (rate(pg_stat_statements_calls_total{{{s}}}[{RATE}])) > 0",
          "{{datname}} {{queryid}}")]), w=24)

    return dashboard(
        "notesd-postgres", "notesd: PostgreSQL",
        "The database every target shares, from postgres_exporter's default collectors "
        "and its stat_statements collector. "
        "Machine CPU and memory of the db host need node_exporter, which this stack does "
        "not run.",
        [query_variable("datname", "database", 'label_values(pg_stat_database_xact_commit{datname!=""}, datname)',
                        default="notes")],
        L.panels)


def build():
    """File name -> dashboard object."""
    return {"notesd-app.json": app_dashboard(), "postgres.json": postgres_dashboard()}


def render(obj):
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print("usage: make_dashboards.py [--check]", file=sys.stderr)
        return 2
    stale = []
    for name, obj in build().items():
        path = OUT_DIR / name
        text = render(obj)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print("stale (rerun docker/grafana/make_dashboards.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
