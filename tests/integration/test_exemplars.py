#!/usr/bin/env python3
"""Trace context: a request's W3C traceparent in Server-Timing and the debug
log, its trace id as the exemplar of its http_request_duration_seconds bucket
in the OpenMetrics page (which a scraper gets only when it asks; the text page
stays as it was), both pages read by Prometheus's own parsers (promtool), and
end to end: a k6 request's trace id found through Debian's Prometheus
exemplar query API after a real scrape."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from notes_testlib import (Notesd, ServerTestCase, create_database, free_port, main, poll,
                           raw_request, request)

K6 = os.environ.get("K6") or "/work/shared/tools/k6/k6"
OM_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
             "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TP = f"00-{TRACE}-00f067aa0ba902b7-01"
EXEMPLAR = re.compile(r'^(\S+)\{([^}]*)le="([^"]+)"\} (\d+) # \{trace_id="([0-9a-f]{32})"\} '
                      r'(\S+) (\d+\.\d{3})$')


def trace_id(i):
    return f"{i:032x}"


def scrape(port, accept=None):
    headers = {"Accept": accept} if accept else {}
    status, headers, body = request(port, "GET", "/metrics", headers=headers)
    assert status == 200, status
    return headers["content-type"], body.decode()


def exemplars(page):
    """{trace id: (series labels, le, value, timestamp)} of every exemplar on a page."""
    out = {}
    for line in page.splitlines():
        m = EXEMPLAR.match(line)
        if m:
            out[m.group(5)] = (m.group(2), m.group(3), float(m.group(6)), float(m.group(7)))
    return out


def with_timestamps(page, ts):
    """The page with a timestamp after each sample's value (what backfilling needs), so
    promtool's OpenMetrics importer will take it; nothing else changes."""
    out = []
    for line in page.splitlines():
        if line.startswith("#"):
            out.append(line)
            continue
        m = re.match(r'^(\S+(?:\{[^}]*\})?) (\S+)( # .*)?$', line)
        out.append(f"{m.group(1)} {m.group(2)} {ts}{m.group(3) or ''}")
    return "\n".join(out) + "\n"


class TraceparentTest(ServerTestCase):
    database = "exemplars"
    env = {"LOG_LEVEL": "debug"}

    def test_server_timing_carries_the_traceparent(self):
        _, headers, _ = request(self.port, "GET", "/json", headers={"traceparent": TP})
        self.assertRegex(headers["server-timing"],
                         r'^total;dur=\d+\.\d{3}, traceparent;desc="' + TP + '"$')
        # a later version's first four fields, written back as version 00
        _, headers, _ = request(self.port, "GET", "/json", headers={
            "traceparent": f"cc-{TRACE}-00f067aa0ba902b7-00-more"})
        self.assertTrue(headers["server-timing"].endswith(
            f'traceparent;desc="00-{TRACE}-00f067aa0ba902b7-00"'))
        for bad in (TP.upper(), f"00-{'0' * 32}-00f067aa0ba902b7-01", TP + "-x", "garbage"):
            _, headers, _ = request(self.port, "GET", "/json", headers={"traceparent": bad})
            self.assertRegex(headers["server-timing"], r"^total;dur=\d+\.\d{3}$", bad)
        _, headers, _ = request(self.port, "GET", "/notes/1", headers={"traceparent": TP})
        self.assertRegex(headers["server-timing"],
                         r'^db;dur=\d+\.\d{3}, total;dur=\d+\.\d{3}, traceparent;desc="' + TP +
                         '"$')

    def test_a_traceparent_is_read_without_the_whitespace_around_it(self):
        """RFC 9110 section 5.5: trailing (and leading) spaces and tabs are not part of a
        field's value; h2o 2.2.5 keeps the trailing ones, so notesd drops them itself."""
        for raw in (TP + " ", TP + "\t", "  " + TP + " \t"):
            answer = raw_request(self.port, ("GET /json HTTP/1.1\r\nHost: x\r\n"
                                             f"traceparent: {raw}\r\n\r\n").encode())
            self.assertIn(f'traceparent;desc="{TP}"'.encode(), answer, repr(raw))

    def test_the_text_page_is_unchanged_and_openmetrics_carries_the_exemplar(self):
        mine = trace_id(77)  # the other tests use TRACE elsewhere
        t0 = time.time()
        request(self.port, "GET", "/delay/30",
                headers={"traceparent": f"00-{mine}-00f067aa0ba902b7-01"})
        t1 = time.time()
        # the text format: as before, no exemplar, no EOF, whoever asks for anything else
        for accept in (None, "*/*", "text/plain", "application/*",
                       "application/openmetrics-text;q=0.4, text/plain;q=0.5"):
            ctype, page = scrape(self.server.metrics_port, accept)
            self.assertEqual(ctype, "text/plain; version=0.0.4; charset=utf-8", accept)
            self.assertNotIn(" # {", page)
            self.assertNotIn("# EOF", page)
            self.assertIn("# TYPE http_requests_total counter\n", page)
        ctype, text = scrape(self.server.metrics_port)
        ctype, om = scrape(self.server.metrics_port, OM_ACCEPT)
        self.assertEqual(ctype, "application/openmetrics-text; version=1.0.0; charset=utf-8")
        self.assertTrue(om.endswith("\n# EOF\n"))
        self.assertIn("# TYPE http_requests counter\n", om)
        self.assertNotIn("_total counter", om)
        found = exemplars(om)
        self.assertIn(mine, found)
        labels, le, value, ts = found[mine]
        self.assertEqual(labels, 'method="GET",path="/delay/:ms",status_code="200",')
        self.assertEqual(le, "0.05")  # 30 ms and a little: the (0.03, 0.05] bucket
        self.assertTrue(0.03 < value <= 0.05, value)
        self.assertTrue(t0 - 0.001 <= ts <= t1 + 0.001, (t0, ts, t1))
        # the same samples in both, the exemplars and the counters' family names aside
        samples = lambda page: sorted(re.sub(r" # \{.*$", "", l) for l in page.splitlines()
                                      if l and not l.startswith("#") and "_seconds" not in l
                                      and not l.startswith(("process_", "notes_malloc")))
        self.assertEqual(samples(om)[:50], samples(text)[:50])

    def test_a_later_request_in_the_same_bucket_replaces_the_exemplar(self):
        """Three traced requests of about 20 ms: the last is the exemplar of its bucket, and
        an earlier one is left only in a bucket of its own (a slower or faster answer)."""
        for i in (1, 2, 3):
            request(self.port, "GET", "/delay/20", headers={
                "traceparent": f"00-{trace_id(i)}-00f067aa0ba902b7-01"})
        request(self.port, "GET", "/delay/20")  # untraced: replaces nothing
        found = exemplars(scrape(self.server.metrics_port, OM_ACCEPT)[1])
        self.assertIn(trace_id(3), found)
        last_le = found[trace_id(3)][1]
        for i in (1, 2):
            if trace_id(i) in found:
                self.assertNotEqual(found[trace_id(i)][1], last_le)
        # one exemplar per bucket line, whatever landed there
        les = [e[1] for t, e in found.items() if 'path="/delay/:ms"' in e[0]]
        self.assertEqual(len(les), len(set(les)))

    def test_prometheus_parsers_accept_both_pages(self):
        if shutil.which("promtool") is None:
            self.skipTest("no promtool (apt-get install prometheus)")
        request(self.port, "GET", "/json", headers={"traceparent": TP})
        _, text = scrape(self.server.metrics_port)
        res = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        _, om = scrape(self.server.metrics_port, OM_ACCEPT)
        self.assertIn(" # {trace_id=", om)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "page.om")
            with open(src, "w") as f:
                f.write(with_timestamps(om, int(time.time())))
            res = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", src,
                                  os.path.join(tmp, "blocks")], capture_output=True, text=True,
                                 timeout=120)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)

    def test_the_debug_log_names_the_trace(self):
        request(self.port, "GET", "/status", headers={"traceparent": TP})
        request(self.port, "GET", "/status?untraced")
        # the line is written when the request ends: read what the server printed so far
        # (other tests of the class ask for /status too: wait for the untraced line itself)
        lines = []

        def seen():
            text = self.server.output_so_far()
            lines[:] = [l for l in text.splitlines() if " debug GET /status" in l]
            return any("GET /status?untraced " in l for l in lines)
        poll(seen, timeout=5, what="the debug line of GET /status?untraced")
        self.assertTrue(any(l.endswith(f" trace={TRACE}") and "GET /status 200 " in l
                            for l in lines), lines)
        self.assertTrue(any("GET /status?untraced 200 " in l and "trace=" not in l
                            for l in lines), lines)


class LoopsTest(unittest.TestCase):
    def test_each_loops_exemplars_reach_the_page(self):
        """Two loops: requests on many connections (the kernel spreads them), each to a series
        of its own, each traced; every trace id is on the page."""
        server = Notesd(create_database("exemplars_loops"), args=["--threads", "2"])
        try:
            for i in range(40):
                request(server.port, "GET", f"/fault/{200 + i}", headers={
                    "traceparent": f"00-{trace_id(1000 + i)}-00f067aa0ba902b7-01"})
            server.settled_metrics()           # every request disposed of: its exemplar kept
            found = exemplars(scrape(server.metrics_port, OM_ACCEPT)[1])
            for i in range(40):
                self.assertIn(trace_id(1000 + i), found)
                self.assertIn(f'status_code="{200 + i}"', found[trace_id(1000 + i)][0])
        finally:
            self.assertEqual(server.stop(), 0)


K6_SCRIPT = r"""
import http from 'k6/http';
import crypto from 'k6/crypto';
import { check } from 'k6';

export const options = { vus: 1, iterations: 1 };

// k6 writes no traceparent by itself (its tracing module is a remote jslib): the script
// makes a W3C trace context of its own, as an instrumented client would.
export default function () {
  const trace = crypto.hexEncode(crypto.randomBytes(16));
  const span = crypto.hexEncode(crypto.randomBytes(8));
  const res = http.get(`${__ENV.BASE_URL}/delay/120`, {
    headers: { traceparent: `00-${trace}-${span}-01` },
  });
  check(res, { '200': (r) => r.status === 200 });
  console.log(`trace_id=${trace} server_timing=${res.headers['Server-Timing']}`);
}
"""


class PrometheusTest(unittest.TestCase):
    """A k6 request's trace id, found as an exemplar by Debian's Prometheus."""

    def test_a_k6_request_is_found_through_the_exemplar_api(self):
        if shutil.which("prometheus") is None:
            self.skipTest("no prometheus (apt-get install prometheus)")
        if not os.access(K6, os.X_OK):
            self.skipTest(f"no k6 at {K6}")
        server = Notesd(create_database("exemplars_prom"))
        tmp = tempfile.mkdtemp(prefix="notesd-prom-")
        prom = None
        try:
            port = free_port()
            with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                        "scrape_configs:\n  - job_name: notesd\n    static_configs:\n"
                        f"      - targets: ['127.0.0.1:{server.metrics_port}']\n")
            prom = subprocess.Popen(
                ["prometheus", f"--config.file={tmp}/prometheus.yml",
                 f"--storage.tsdb.path={tmp}/data", f"--web.listen-address=127.0.0.1:{port}",
                 "--enable-feature=exemplar-storage"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            api = f"http://127.0.0.1:{port}"

            def get(path):
                with urllib.request.urlopen(api + path, timeout=5) as r:
                    return json.load(r)

            def ready():
                try:
                    with urllib.request.urlopen(api + "/-/ready", timeout=2) as r:
                        return r.status == 200
                except OSError:
                    return False
            poll(ready, timeout=60, what="prometheus to be ready")
            start = time.time()
            script = os.path.join(tmp, "traced.js")
            with open(script, "w") as f:
                f.write(K6_SCRIPT)
            out = subprocess.run([K6, "run", "--quiet", "--log-output=stderr",
                                  "-e", f"BASE_URL=http://127.0.0.1:{server.port}", script],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr[-2000:])
            m = re.search(r"trace_id=([0-9a-f]{32}) server_timing=([^\"]*)", out.stderr)
            self.assertIsNotNone(m, out.stderr[-2000:])
            trace = m.group(1)
            self.assertIn(trace, out.stderr)

            found = {}

            def exemplar_found():
                q = urllib.parse.urlencode({
                    "query": 'http_request_duration_seconds_bucket{path="/delay/:ms"}',
                    "start": f"{start - 60:.3f}", "end": f"{time.time() + 60:.3f}"})
                data = get("/api/v1/query_exemplars?" + q)
                for series in data["data"]:
                    for e in series["exemplars"]:
                        if e["labels"].get("trace_id") == trace:
                            found.update(series=series["seriesLabels"], exemplar=e)
                            return True
                return False
            poll(exemplar_found, timeout=30, what="the trace id in Prometheus's exemplars")
            self.assertEqual(found["series"]["le"], "0.25")  # 120 ms and a little
            self.assertEqual(found["series"]["status_code"], "200")
            self.assertTrue(0.12 <= float(found["exemplar"]["value"]) <= 0.25)
            targets = get("/api/v1/targets")["data"]["activeTargets"]
            self.assertEqual([(t["health"], t["lastError"]) for t in targets], [("up", "")])
            print(f"\n  trace {trace} found in Prometheus's exemplars: "
                  f"{found['exemplar']}", flush=True)
        finally:
            if prom is not None:
                prom.terminate()
                try:
                    prom.wait(30)
                except subprocess.TimeoutExpired:
                    prom.kill()
                    prom.wait()
            shutil.rmtree(tmp, ignore_errors=True)
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    main()
