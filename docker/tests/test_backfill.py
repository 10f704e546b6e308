#!/usr/bin/python3
"""docker/replay/backfill.sh for real, without Docker: a small results directory of
loadtests/run.sh's layout goes to OpenMetrics (the harness's own code), through
promtool into Prometheus blocks, and Debian's Prometheus opened on those blocks
answers PromQL over them with the scraped values.

    /usr/bin/python3 docker/tests/test_backfill.py

The run is made from the real pages in loadtests/tests/fixtures/ with synthetic
timestamps, one scrape a second: notesd's read test (r1/notesd/read) and the Node
peer's (r1/node/read) 600 s later. In both, http_requests_total of
GET /notes/:id 200 is rewritten to grow by exactly 100 a second, so rate() has one
right answer. Prometheus runs with the replay stack's flags (docker/replay/
compose.yaml: 100 years of retention, as the timestamps are in the past, and a
5 s lookback), listens on 127.0.0.1 on a free port and is stopped by its pid.

Exit status: 0 passed, 1 failed, 77 (CTest's skip) without promtool or prometheus.
"""
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "loadtests"))

from loadlib.commands.harness.harness_command import write_openmetrics  # noqa: E402

BACKFILL = os.path.join(REPO, "docker", "replay", "backfill.sh")
FIX = os.path.join(REPO, "loadtests", "tests", "fixtures")
T0 = 1764540000            # 2025-11-30 22:00:00 UTC
SCRAPES = 21               # T0 .. T0 + 20, one a second
RATE = 100                 # GET /notes/:id 200 per second in the rewritten series
START = 1000               # its value at the first scrape
NODE_OFFSET = 60           # the Node peer's test starts this much later
SERIES = re.compile(r'^(http_requests_total\{method="GET",path="/notes/:id",status_code="200"\}) \S+$', re.M)
SKIP = 77


def replay_flags():
    """The replay Prometheus's command-line flags, without the two that name its files."""
    with open(os.path.join(REPO, "docker", "replay", "compose.yaml")) as f:
        command = yaml.safe_load(f)["services"]["prometheus"]["command"]
    return [c for c in command if not c.startswith(("--config.file=", "--storage.tsdb.path="))]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def write_test(mdir, page, t0):
    """A metrics.prom.gz as the sampler writes it: SCRAPES pages one second apart, the
    rewritten series at START + RATE * i, and one failed scrape in between."""
    os.makedirs(mdir)
    self_check = SERIES.findall(page)
    assert len(self_check) == 1, "the fixture lacks GET /notes/:id 200"
    with gzip.open(os.path.join(mdir, "metrics.prom.gz"), "wt", encoding="utf-8") as f:
        for i in range(SCRAPES):
            f.write(f"# SCRAPE unix={t0 + i:.3f} status=200\n")
            f.write(SERIES.sub(lambda m: f"{m.group(1)} {START + RATE * i}", page))
            if i == 5:
                f.write(f"# SCRAPE unix={t0 + i + 0.5:.3f} status=error\n")


class Backfill(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="notesd-backfill-")
        cls.results = os.path.join(cls.tmp, "results")
        cls.tsdb = os.path.join(cls.tmp, "tsdb")
        cls.proc = None
        cls.converted = {}
        for target, name, t0 in (("notesd", "native-read-after.prom", T0),
                                 ("node", "node-read-after.prom", T0 + NODE_OFFSET)):
            mdir = os.path.join(cls.results, "r1", target, "read")
            write_test(mdir, fixture(name), t0)
            cls.converted[target] = write_openmetrics(mdir, target, "read", 1)
        cls.backfill = subprocess.run([BACKFILL, cls.results, cls.tsdb], capture_output=True, text=True,
                                      timeout=300)
        if cls.backfill.returncode != 0:
            return
        config = os.path.join(cls.tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n")      # nothing to scrape, as in the replay stack
        cls.port = free_port()
        cls.log = open(os.path.join(cls.tmp, "prometheus.log"), "wb")
        cls.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={cls.tsdb}", *replay_flags(),
             f"--web.listen-address=127.0.0.1:{cls.port}"],
            stdin=subprocess.DEVNULL, stdout=cls.log, stderr=subprocess.STDOUT, cwd=cls.tmp)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if cls.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{cls.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.2)

    @classmethod
    def tearDownClass(cls):
        if cls.proc is not None and cls.proc.poll() is None:
            os.kill(cls.proc.pid, signal.SIGTERM)
            try:
                cls.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(cls.proc.pid, signal.SIGKILL)
                cls.proc.wait()
        if getattr(cls, "log", None):
            cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def prometheus_log(self):
        try:
            with open(os.path.join(self.tmp, "prometheus.log"), errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def query(self, expr, t):
        self.assertEqual(self.backfill.returncode, 0, self.backfill.stdout + self.backfill.stderr)
        self.assertIsNone(self.proc.poll(), f"prometheus exited:\n{self.prometheus_log()}")
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": t})
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        self.assertEqual(body["status"], "success", body)
        return body["data"]["result"]

    def test_harness_wrote_every_scrape_and_left_out_the_failed_one(self):
        for target in ("notesd", "node"):
            self.assertEqual(self.converted[target], {"scrapes": SCRAPES, "skipped": 1})
            with open(os.path.join(self.results, "r1", target, "read", "metrics.om")) as f:
                self.assertTrue(f.read().endswith("# EOF\n"))

    def test_backfill_converts_every_om_file(self):
        self.assertEqual(self.backfill.returncode, 0, self.backfill.stdout + self.backfill.stderr)
        self.assertIn("r1/node/read/metrics.om: 1 block(s)", self.backfill.stdout)
        self.assertIn("r1/notesd/read/metrics.om: 1 block(s)", self.backfill.stdout)
        self.assertIn("2 file(s) into", self.backfill.stdout)

    def test_counter_has_the_scraped_value_and_the_test_labels(self):
        result = self.query('http_requests_total{target="notesd",path="/notes/:id",status_code="200"}', T0 + 7)
        self.assertEqual(len(result), 1, result)
        metric, (_, value) = result[0]["metric"], result[0]["value"]
        self.assertEqual(float(value), START + RATE * 7)
        self.assertEqual({k: metric[k] for k in ("job", "target", "mode", "round", "method")},
                         {"job": "notesd", "target": "notesd", "mode": "read", "round": "1", "method": "GET"})

    def test_an_unrewritten_series_keeps_the_fixtures_value(self):
        want = float(re.search(r'^http_requests_total\{method="GET",path="/notes",status_code="200"\} (\S+)$',
                               fixture("native-read-after.prom"), re.M).group(1))
        result = self.query('http_requests_total{job="notesd",path="/notes"}', T0 + 20)
        self.assertEqual([float(r["value"][1]) for r in result], [want])

    def test_rate_is_right(self):
        for target, t0 in (("notesd", T0), ("node", T0 + NODE_OFFSET)):
            with self.subTest(target=target):
                result = self.query(f'rate(http_requests_total{{target="{target}",path="/notes/:id",'
                                    f'status_code="200"}}[10s])', t0 + 20)
                self.assertEqual(len(result), 1, result)
                self.assertAlmostEqual(float(result[0]["value"][1]), RATE, places=6)

    def test_each_target_only_inside_its_own_test(self):
        # no staleness markers in backfilled blocks: the replay's 5 s lookback ends a series
        # a few seconds after its last scrape, not 5 minutes later over the next test
        self.assertIn("--query.lookback-delta=5s", replay_flags())
        def jobs(t):
            return sorted(r["metric"]["job"] for r in self.query("notes_db_pool_max_connections", t))
        self.assertEqual(jobs(T0 + 10), ["notesd"])
        self.assertEqual(jobs(T0 + SCRAPES - 1 + 4), ["notesd"])
        self.assertEqual(jobs(T0 + SCRAPES - 1 + 10), [])
        self.assertEqual(jobs(T0 + NODE_OFFSET + 10), ["node"])
        self.assertEqual(jobs(T0 - 3600), [])

    def test_histogram_quantile_over_the_backfilled_buckets(self):
        result = self.query('histogram_quantile(0.99, sum by (job, le) '
                            '(http_request_duration_seconds_bucket{job="notesd"}))', T0 + 20)
        self.assertEqual(len(result), 1, result)
        q = float(result[0]["value"][1])
        self.assertGreater(q, 0)
        self.assertLessEqual(q, 10)


if __name__ == "__main__":
    if not (shutil.which("promtool") and shutil.which("prometheus")):
        print("SKIP: promtool and prometheus (Debian's prometheus package) are needed", file=sys.stderr)
        sys.exit(SKIP)
    unittest.main(verbosity=2)
