#!/usr/bin/env python3
"""The comparison harness end to end, small: loadtests/run.sh --tool wrk runs notesd
for one round of read, write and json (3 s each, 8 connections) against a PostgreSQL of
this test's own, and its results must be complete and consistent: one entry per
test, no failed request, client and server counts reconciled, startup time
recorded, charts that are well-formed SVG, and each test's scrapes as OpenMetrics
(metrics.om) that promtool accepts. wrk by name, not run.sh's default (k6 when it is
at hand): the same run with k6 is loadtests/tests/k6/test_live.py's.

    NOTESD_REPO=/path/to/repo /usr/bin/python3 tests/integration/test_harness.py

The database is a private sql/localdb.sh instance in a temporary directory
(NOTESD_PGDATA, NOTESD_PGPORT), never the developer's .localdb; it is stopped and
removed at the end.
"""
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import xml.dom.minidom

sys.dont_write_bytecode = True   # no __pycache__ in the source tree

from notes_testlib import BIN, REPO, SANITIZED, free_port_in, main  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "loadtests"))
from loadlib.commands.harness import analyze  # noqa: E402

VUS = 8


class HarnessTest(unittest.TestCase):
    """One run of loadtests/run.sh over TARGETS and MODES, and what its results must hold.
    test_harness_peers.py runs the same checks with the Express peer beside notesd."""
    TARGETS = ["notesd"]
    MODES = ["read", "write", "json"]
    TIMEOUT_S = 110

    @classmethod
    def setUpClass(cls):
        if not os.access(BIN, os.X_OK):
            raise AssertionError(f"{BIN} is not built (server/build.sh)")
        cls.prepare()
        cls.tmp = tempfile.mkdtemp(prefix="notesd-harness-")
        os.chmod(cls.tmp, 0o755)            # PostgreSQL runs as `postgres` when we are root
        cls.out = os.path.join(cls.tmp, "out")
        cls.env = {k: v for k, v in os.environ.items() if k not in ("DB_URL", "PORT", "METRICS_PORT")}
        cls.env.update({"NOTESD_PGDATA": os.path.join(cls.tmp, "pgdata"), "NOTESD_PGPORT": str(free_port_in(18100, 18199)),
                        "NOTESD_BIN": BIN, "ASAN_OPTIONS": "detect_leaks=0"})
        # 3 s a test: the /proc sampler reads once a second, and the load tool's CPU needs two
        # of its samples inside the tool's life (2 s tests sometimes had one)
        argv = [os.path.join(REPO, "loadtests", "run.sh"), *cls.TARGETS, "--tool", "wrk", "--rounds", "1",
                "--modes", ",".join(cls.MODES),
                "--duration", "3s", "--vus", str(VUS), "--pause", "0", "--warmup", "0", "--out", cls.out,
                "--journal"]
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, env=cls.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=cls.TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.terminate()                  # run.sh stops its target and load tool on SIGTERM
            out, err = proc.communicate(timeout=60)
            err += f"\n(run.sh did not finish within {cls.TIMEOUT_S} s and was stopped)"
        cls.seconds = time.monotonic() - t0
        cls.res = subprocess.CompletedProcess(argv, proc.returncode, out, err)
        print(f"  figure: run.sh took {cls.seconds:.1f} s", flush=True)

    @classmethod
    def prepare(cls):
        """What a subclass needs before the run (the peer's runtimes, say)."""

    @classmethod
    def tearDownClass(cls):
        subprocess.run([os.path.join(REPO, "sql", "localdb.sh"), "stop"], env=cls.env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def output(self):
        return f"\n--- stdout\n{self.res.stdout}\n--- stderr\n{self.res.stderr}"

    def summary(self):
        with open(os.path.join(self.out, "summary.json")) as f:
            return json.load(f)

    def test_exits_0_and_writes_report_and_summary(self):
        self.assertEqual(self.res.returncode, 0, self.output())
        self.assertTrue(os.path.isfile(os.path.join(self.out, "report.md")), self.output())
        s = self.summary()
        self.assertEqual(sorted((t["target"], t["round"], t["mode"]) for t in s["tests"]),
                         sorted((target, 1, m) for target in self.TARGETS for m in self.MODES))
        self.assertEqual(s["problems"], [])
        self.assertIn("every test reconciled, 0 failed requests", self.res.stdout)

    def test_no_failed_requests(self):
        for t in self.summary()["tests"]:
            with self.subTest(target=t["target"], mode=t["mode"]):
                self.assertGreater(t["client"]["requests"], 0)
                self.assertEqual(t["client"]["failed"], 0)
                self.assertEqual(t["client"]["socket_errors"], 0)
                self.assertEqual(t["server"]["non2xx"], 0)
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertIn(f"All {len(self.TARGETS) * len(self.MODES)} tests finished with 0 failed requests", report)
        # the requests are counted per target, each with its own total
        totals = self.summary()["totals"]
        for target in self.TARGETS:
            with self.subTest(target=target):
                self.assertEqual(totals[target]["with_client_figures"], len(self.MODES))
                self.assertEqual(totals[target]["requests"],
                                 sum(t["client"]["requests"] for t in self.summary()["tests"] if t["target"] == target))

    def test_every_figure_of_every_target_is_a_number(self):
        s = self.summary()
        for target in self.TARGETS:
            self.assertIsInstance(s["medians"][target]["startup_s"], float)
            for mode in self.MODES:
                with self.subTest(target=target, mode=mode):
                    m = s["medians"][target][mode]
                    for key in ("rps", "p50_ms", "p95_ms", "p99_ms", "server_p99_ms", "lag_mean_ms", "heap_used_mib",
                                "rss_mib", "cpu_pct", "tool_cpu_pct"):
                        self.assertIsInstance(m[key], (int, float), key)
                        if key == "tool_cpu_pct":
                            # the tool's CPU is sampled once a second from /proc in 10 ms
                            # ticks: a 2 s test's window holds two or three samples, and a
                            # tool waiting on a slow target, on a busy machine, read 0 once
                            self.assertGreaterEqual(m[key], 0, key)
                        elif not (key == "heap_used_mib" and target == "notesd" and SANITIZED):
                            self.assertGreater(m[key], 0, key)      # ASan replaces malloc: mallinfo2 reads 0
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertNotIn("n/a", report)
        self.assertNotIn("incomplete", report)
        labels = [s["labels"][t] for t in self.TARGETS]
        self.assertIn("| Test | " + " | ".join(labels) + " |", report)

    def test_client_and_server_counts_reconcile(self):
        for t in self.summary()["tests"]:
            with self.subTest(target=t["target"], mode=t["mode"]):
                r = t["reconcile"]
                self.assertEqual(r["result"], "OK", r)
                self.assertEqual(r["tolerance"], VUS)
                # the server may answer the requests in flight when wrk stopped, never fewer
                self.assertGreaterEqual(r["difference"], 0)
                self.assertLessEqual(r["difference"], VUS)
                with open(os.path.join(t["dir"], "reconcile.txt")) as f:
                    self.assertIn("RESULT OK", f.read())

    def test_journal_beside_each_notesd_test_and_the_arrivals_chart(self):
        """run.sh --journal: every request of a notesd test is in its journal.ndjson.gz,
        none lost, and the report charts the arrivals per second."""
        notesd_tests = [t for t in self.summary()["tests"] if t["target"] == "notesd"]
        self.assertEqual(len(notesd_tests), len(self.MODES))
        for t in notesd_tests:
            with self.subTest(mode=t["mode"]):
                j = t["journal"]
                with gzip.open(os.path.join(t["dir"], j["file"]), "rt") as f:
                    lines = [json.loads(line) for line in f]
                self.assertEqual((j["lost"], j["errors"], len(lines)), (0, [], j["records"]))
                server = t["reconcile"]["server"]
                # what the server counted is all there; at most the requests that were in
                # flight at the closing scrape come after it
                self.assertGreaterEqual(j["records"], server)
                self.assertLessEqual(j["records"], server + VUS)
                self.assertEqual(sum(j["arrivals_per_s"]), j["records"])
                self.assertEqual({r["kind"] for r in lines}, {"http"})
        for t in self.summary()["tests"]:
            if t["target"] != "notesd":
                self.assertNotIn("journal", t)
        with open(os.path.join(self.out, "arrivals.svg")) as f:
            svg = f.read()
        self.assertIn("Arrivals per second", svg)
        with open(os.path.join(self.out, "report.md")) as f:
            self.assertIn("(arrivals.svg)", f.read())

    def test_startup_and_window_figures_recorded(self):
        s = self.summary()
        self.assertEqual(sorted(st["target"] for st in s["startups"]), sorted(self.TARGETS))
        for st in s["startups"]:
            with self.subTest(target=st["target"]):
                self.assertGreater(st["startup_s"], 0)
                self.assertLess(st["startup_s"], self.seconds)  # a part of the run it was measured in
                self.assertEqual(st["exit_code"], 0)
        for t in s["tests"]:
            with self.subTest(target=t["target"], mode=t["mode"]):
                self.assertGreaterEqual(t["scrapes"], 2)
                self.assertGreater(t["rss_mib"], 0)
                self.assertIsNotNone(t["cpu_pct"])

    def test_openmetrics_per_test(self):
        promtool = shutil.which("promtool")
        for t in self.summary()["tests"]:
            with self.subTest(target=t["target"], mode=t["mode"]):
                path = os.path.join(self.out, "r1", t["target"], t["mode"], "metrics.om")
                with open(path) as f:
                    text = f.read()
                self.assertTrue(text.endswith("\n# EOF\n"))
                with open(os.path.join(self.out, "r1", t["target"], t["mode"], "test.json")) as f:
                    info = json.load(f)
                self.assertEqual(info["openmetrics"]["scrapes"], t["scrapes"])
                self.assertIn("# TYPE http_requests counter\n", text)
                labels = f'job="{t["target"]}",target="{t["target"]}",mode="{t["mode"]}",round="1"'
                self.assertRegex(text, r'(?m)^http_requests_total\{' + labels + r',method="GET",.* \d+ \d+\.\d{3}$')
                if promtool:
                    blocks = os.path.join(self.tmp, f"tsdb-{t['target']}-{t['mode']}")
                    res = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", path, blocks],
                                         capture_output=True, text=True)
                    self.assertEqual(res.returncode, 0, res.stdout + res.stderr)

    def test_svg_charts_have_a_bar_per_target_and_test(self):
        labels = self.summary()["labels"]
        for name in ("throughput.svg", "latency.svg"):
            with self.subTest(chart=name):
                doc = xml.dom.minidom.parse(os.path.join(self.out, name))
                self.assertEqual(doc.documentElement.tagName, "svg")
                bars = {rect.getElementsByTagName("title")[0].firstChild.data
                        for rect in doc.getElementsByTagName("rect") if rect.getElementsByTagName("title")}
                for target in self.TARGETS:
                    for mode in self.MODES:
                        prefix = f"{labels[target]}, {analyze.MODE_LABELS[mode]}: "
                        self.assertTrue(any(b.startswith(prefix) for b in bars), (prefix, sorted(bars)))
                self.assertNotIn(">n/a<", doc.toxml())


if __name__ == "__main__":
    main()
