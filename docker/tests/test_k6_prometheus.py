#!/usr/bin/python3
"""k6 -> Prometheus -> the Grafana dashboards' k6 row, for real, without Docker.

Debian's prometheus runs with compose.yaml's flags (the remote-write receiver
among them) on 127.0.0.1, scraping a notesd started here every second as job
`notesd`, as docker/prometheus/prometheus.yml does. k6 runs as compose.yaml's
k6 service runs it: the service's command (`run -o experimental-prometheus-rw
/loadtests/k6/notes.js`, the path mapped into this checkout) and its whole
environment (trend stats p(50),p(95),p(99),max, a push every second, RT, ROUND,
TESTID, ...), with only these changed: BASE_URL (this notesd), the remote-write
URL (this Prometheus), VUS and DURATION (seconds, not minutes). A second run of
the open-model script at a rate one VU cannot keep, in the same test (testid),
gives the dropped-iterations panel something to show.

Then every query of the dashboards that reads a k6 metric (panels, the test-window
annotation, the testid variable), with Grafana's variables filled in as Grafana
would (testid = the run's, target = RT, $__rate_interval = 4 x the 1 s scrape
interval), runs through Prometheus's HTTP API as a range query over the run, and
each must return data. k6's request count in Prometheus (the last value of
k6_http_reqs_total, summed over its series) must equal notesd's own
http_requests_total delta.

And the defect this replaces: the same k6 with `--tag testid=...` on the command
line (as compose.yaml and the TestRun had it) pushes samples without runtime,
mode and round, so a query selecting runtime finds none of them.

    NOTESD_BIN=build/notesd NOTESD_PGSTATE=build-test/pgstate.json K6=/path/to/k6 \\
      /usr/bin/python3 docker/tests/test_k6_prometheus.py

CTest `docker_k6_prometheus`; exits 77 (skipped) without k6 or prometheus.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
# loadtests/ for its tests package (tests.k6.k6live, which imports loadlib), then docker/ for
# its checks package; loadtests/tests is a package and docker/tests is not, so `tests` stays
# loadtests'
sys.path.insert(0, os.path.join(REPO, "loadtests"))
sys.path.insert(0, os.path.join(REPO, "docker"))

from loadlib.server import free_port  # noqa: E402
from tests.k6 import k6live  # noqa: E402

K6 = k6live.require_k6("k6 into Prometheus and every k6 dashboard query")
if not shutil.which("prometheus"):
    print("SKIP no prometheus on PATH (Debian package prometheus)", flush=True)
    sys.exit(k6live.SKIP)
k6live.require_notesd_and_postgres()

from checks import files, metrics  # noqa: E402  (the dashboards' queries, compose.yaml as Compose reads it)

DASHBOARDS = os.path.join(REPO, "docker", "grafana", "provisioning", "dashboards", "definitions")
TESTID = f"k6-prometheus-{os.getpid()}"
OLD_TESTID = f"k6-prometheus-tag-{os.getpid()}"
VUS, DURATION = "10", "3s"
# Grafana's $__rate_interval with a 1 s scrape interval (the data source's timeInterval):
# max(4 x scrape interval, query interval + scrape interval) = 4 s at a 1 s step
RATE_INTERVAL = "4s"
START_TIMEOUT_S = 30


def compose_k6():
    """compose.yaml's k6 service with its variables at their defaults."""
    return files.compose(files.HERE / "compose.yaml")["services"]["k6"]


def compose_prometheus_flags():
    command = files.compose(files.HERE / "compose.yaml")["services"]["prometheus"]["command"]
    return [c for c in command if not c.startswith(("--config.file=", "--storage.tsdb.path="))]


class K6Prometheus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="k6-prometheus-")
        os.chmod(cls.tmp, 0o755)
        cls.server = k6live.Server("k6_prometheus")
        cls.server.warm()
        cls.prom_port = free_port()
        config = os.path.join(cls.tmp, "prometheus.yml")
        with open(config, "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
                            "scrape_configs": [{"job_name": "notesd", "static_configs": [
                                {"targets": [f"127.0.0.1:{cls.server.metrics_port}"]}]}]}, f)
        cls.prom_log = open(os.path.join(cls.tmp, "prometheus.log"), "wb")
        cls.prom = subprocess.Popen(
            ["prometheus", f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(cls.tmp, 'tsdb')}", *compose_prometheus_flags(),
             f"--web.listen-address=127.0.0.1:{cls.prom_port}"],
            stdout=cls.prom_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            cls.wait_ready()
            cls.runs()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.prom.poll() is None:
            cls.prom.terminate()
            try:
                cls.prom.wait(20)
            except subprocess.TimeoutExpired:
                cls.prom.kill()
                cls.prom.wait()
        cls.prom_log.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def wait_ready(cls):
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{cls.prom_port}/-/ready",
                                            timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if cls.prom.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"prometheus did not start:\n{cls.log_text()}")
            time.sleep(0.1)

    @classmethod
    def log_text(cls):
        with open(os.path.join(cls.tmp, "prometheus.log"), errors="replace") as f:
            return f.read()[-3000:]

    @classmethod
    def k6(cls, script, variables, testid, extra_args=()):
        """One k6 run as compose.yaml's service runs it, with only the target, the
        remote-write URL, the length and testid changed (and `variables`)."""
        svc = compose_k6()
        env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
        env.update({"BASE_URL": cls.server.base_url, "VUS": VUS, "DURATION": DURATION,
                    "TESTID": testid,
                    "K6_PROMETHEUS_RW_SERVER_URL": f"http://127.0.0.1:{cls.prom_port}/api/v1/write"})
        env.update(variables)
        command = list(svc["command"])
        mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"]}
        inside = command[-1]
        for target, source in mounts.items():
            if inside.startswith(target + "/"):
                local = os.path.normpath(os.path.join(files.HERE, source) + inside[len(target):])
                break
        else:
            raise AssertionError(f"{inside} is in no mounted directory of the k6 service")
        command[-1] = os.path.join(os.path.dirname(local), script)
        argv = [K6, *command[:-1], *extra_args, command[-1]]
        t0 = time.time()
        p = subprocess.run(argv, env=k6live.k6_env(env), capture_output=True, text=True,
                           timeout=k6live.RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)
        return {"argv": argv, "rc": p.returncode, "out": p.stdout[-3000:] + p.stderr[-3000:],
                "start": t0, "end": time.time(), "env": env}

    @classmethod
    def runs(cls):
        cls.compose_env = {k: str(v) for k, v in (compose_k6().get("environment") or {}).items()}
        before = cls.server.requests_total()
        cls.closed = cls.k6("notes.js", {"ROUND": "1"}, TESTID)
        # the open model at a rate one VU cannot keep: dropped iterations, and k6's
        # threshold status 99
        cls.open = cls.k6("notes-open.js", {"MODE": "json", "RATE": "5000", "PRE_VUS": "1",
                                            "MAX_VUS": "1", "ROUND": "2"}, TESTID)
        cls.server_requests = cls.server.requests_total() - before
        # the old way: testid on the command line
        cls.old = cls.k6("notes.js", {"ROUND": "3", "TESTID": ""}, OLD_TESTID,
                         extra_args=("--tag", f"testid={OLD_TESTID}"))
        cls.start, cls.end = cls.closed["start"], cls.old["end"]
        # the server's last requests in a scrape, k6's last push in the TSDB
        time.sleep(2.5)

    def api(self, path, **params):
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/{path}?{urllib.parse.urlencode(params, doseq=True)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        self.assertEqual(body["status"], "success", body)
        return body["data"]

    def query_range(self, expr):
        return self.api("query_range", query=expr, start=f"{self.start - 1:.3f}",
                        end=f"{self.end + 2:.3f}", step="1s")["result"]

    def fill(self, expr, testid):
        return (expr.replace("$__rate_interval", RATE_INTERVAL)
                .replace('"$testid"', json.dumps(re.escape(testid)))
                .replace('"$job"', json.dumps(re.escape(self.compose_env["RT"]))))

    def k6_queries(self):
        """(where, expr) of every dashboard query that reads a k6 metric."""
        out = []
        for name in sorted(os.listdir(DASHBOARDS)):
            with open(os.path.join(DASHBOARDS, name)) as f:
                dash = json.load(f)
            for where, expr in files.dashboard_queries(dash):
                if any(n.startswith("k6_") for n in metrics.metric_names(expr)):
                    out.append((f"{name} {where}", expr))
        return out

    def test_runs_went_as_the_scripts_promise(self):
        self.assertEqual(self.closed["rc"], 0, self.closed["out"])
        self.assertEqual(self.open["rc"], k6live.THRESHOLDS_FAILED, self.open["out"])
        self.assertIn("dropped_iterations: count==0", self.open["out"])
        self.assertEqual(self.old["rc"], 0, self.old["out"])

    def test_k6_runs_with_composes_settings(self):
        env = self.closed["env"]
        for var in ("K6_PROMETHEUS_RW_TREND_STATS", "K6_PROMETHEUS_RW_PUSH_INTERVAL", "MODE", "RT"):
            self.assertEqual(env[var], self.compose_env[var], var)
        self.assertEqual(self.closed["argv"][1:-1], list(compose_k6()["command"][:-1]))
        self.assertNotIn("--tag", self.closed["argv"])

    def test_every_k6_dashboard_query_returns_data(self):
        queries = self.k6_queries()
        self.assertGreaterEqual(len([q for q in queries if "variable" not in q[0]]), 6)
        empty = []
        for where, expr in queries:
            if "variable" in where:
                # label_values(k6_vus, testid): Grafana asks the labels API
                values = self.api("label/testid/values", **{"match[]": "k6_vus"})
                if TESTID not in values:
                    empty.append(f"{where}: testid values {values}")
                continue
            result = self.query_range(self.fill(expr, TESTID))
            points = sum(len(r["values"]) for r in result)
            print(f"  {points:4d} points  {where}", flush=True)
            if not points:
                empty.append(f"{where}: {self.fill(expr, TESTID)}")
        self.assertEqual(empty, [], "dashboard queries without data")

    def test_k6_request_count_in_prometheus_equals_the_servers(self):
        # k6 pushes each counter's running total; the last value of every series, summed,
        # is what it sent (the two runs have different rounds, so no series is reused)
        t = f"{self.end + 2:.3f}"
        sel = json.dumps(TESTID)
        result = self.api("query", query=f"sum(last_over_time(k6_http_reqs_total{{testid={sel}}}[10m]))",
                          time=t)["result"]
        self.assertEqual(len(result), 1, result)
        k6_count = int(float(result[0]["value"][1]))
        print(f"  k6 in Prometheus {k6_count}, notesd {self.server_requests}", flush=True)
        self.assertEqual(k6_count, self.server_requests)
        self.assertGreater(k6_count, 0)

    def test_samples_carry_the_scripts_tags_and_testid(self):
        result = self.api("query", query=f"k6_vus{{testid={json.dumps(TESTID)}}}",
                          time=f"{self.closed['end']:.3f}")["result"]
        self.assertTrue(result)
        for r in result:
            labels = r["metric"]
            self.assertEqual(labels.get("runtime"), self.compose_env["RT"], labels)
            self.assertEqual((labels.get("round"), labels.get("mode")), ("1", "read"), labels)

    def test_a_command_line_tag_loses_the_scripts_tags(self):
        # the defect TESTID replaces: --tag testid=... wipes options.tags
        sel = json.dumps(OLD_TESTID)
        with_testid = self.query_range(f"k6_vus{{testid={sel}}}")
        self.assertTrue(with_testid, "the --tag run pushed nothing")
        self.assertNotIn("runtime", with_testid[0]["metric"])
        self.assertNotIn("mode", with_testid[0]["metric"])
        self.assertEqual(self.query_range(self.fill('sum by (testid) (k6_vus{testid=~"$testid", '
                                                    'runtime=~"$job"})', OLD_TESTID)), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
