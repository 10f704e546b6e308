"""Every k6 script of loadtests/k6/ run for real against notesd, with short
settings (seconds), and reconciled exactly with loadtests/reconcile (tolerance
0: k6 lets in-flight iterations finish, so the server's http_requests_total
delta equals k6's http_reqs, per route and status); an infeasible open-model
rate drops iterations and exits with k6's threshold status, 99; and
`loadtests/run.sh --tool k6 --quick` on one mode (its reconcile, and k6's web
dashboard report kept with the test). The verdicts about timing (a feasible rate
drops nothing, breaking.js breaks in time) are test_timing.py's, run alone.

    cd loadtests && NOTESD_BIN=../build/notesd NOTESD_PGSTATE=../build-test/pgstate.json \\
      K6=/path/to/k6 /usr/bin/python3 -B -m tests.k6.test_live

CTest `loadtests_k6_live`; exits 77 (skipped) without k6, saying why.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from tests.k6 import k6live

K6 = k6live.require_k6("every k6 script run against notesd and reconciled, and run.sh --tool k6")
k6live.require_notesd_and_postgres()
from loadlib.tools import k6 as k6tool  # noqa: E402

VUS = "10"
SECONDS = "2s"
RUNSH_TIMEOUT_S = 180


class Scripts(k6live.ScriptRuns):
    """One notesd for all the script runs; each run is reconciled on its own."""
    SUITE = "k6_live"

    def test_notes_closed_model_every_mode(self):
        for mode in ("read", "write", "mixed", "json"):
            with self.subTest(mode=mode):
                run = self.run_script(K6, "notes.js", {"MODE": mode, "VUS": VUS, "DURATION": SECONDS,
                                                       "RT": "notesd", "ROUND": "1"})
                data = self.assert_reconciled(run, at_least=20)
                self.assertEqual(data["mode"], mode)
                self.assertEqual(run.metric("http_req_failed", "passes"), 0)
                self.assertEqual(run.metric("checks", "fails"), 0)

    def test_open_model_infeasible_rate_drops_and_fails_its_threshold(self):
        # one VU cannot start 20,000 requests a second: k6 drops the rest, and the
        # script's dropped_iterations threshold fails the run with k6's status 99
        run = self.run_script(K6, "notes-open.js", {"MODE": "json", "RATE": "20000",
                                                    "DURATION": SECONDS, "PRE_VUS": "1",
                                                    "MAX_VUS": "1"},
                              name="open-infeasible", want_rc=k6live.THRESHOLDS_FAILED)
        dropped = run.metric("dropped_iterations", "count")
        self.assertIsNotNone(dropped, run.output())
        self.assertGreater(dropped, 0)
        thresholds = run.summary["metrics"]["dropped_iterations"]["thresholds"]
        self.assertFalse(thresholds["count==0"]["ok"])
        self.assertIn("thresholds FAILED: dropped_iterations: count==0", run.stdout)
        # what it did send still reconciles exactly, and fell short of the rate
        data = self.assert_reconciled(run)
        self.assertLess(data["client"]["total"], 40000)

    def test_ramps_status_primes_breaking(self):
        stages = "1s:8,1s:8,1s:0"
        for script, extra in (("status.js", {}), ("primes.js", {"BELOW": "20000"}),
                              ("breaking.js", {"BELOW": "20000"})):
            with self.subTest(script=script):
                run = self.run_script(K6, script, {"STAGES": stages, **extra})
                self.assert_reconciled(run, at_least=8)
                self.assertEqual(run.metric("http_req_failed", "passes"), 0)
        self.assertIn("no breaking point", run.stdout)

    def test_hello_fixed_counts(self):
        run = self.run_script(K6, "hello.js", {"WARMUP": "100", "WARMUP_WINDOW": "1s",
                                               "ITERATIONS": "3000", "VUS": VUS})
        self.assert_reconciled(run, at_least=3100)
        self.assertEqual(int(run.metric("http_reqs", "count")), 3100)
        self.assertEqual(int(run.summary["metrics"]["http_reqs{scenario:measure}"]["values"]["count"]),
                         3000)

    def test_static_file(self):
        run = self.run_script(K6, "static.js", {"ITERATIONS": "400", "VUS": VUS})
        self.assert_reconciled(run, at_least=400)
        size = os.path.getsize(os.path.join(k6live.LOADTESTS, "static", "app.min.js"))
        # every response carried the whole file (bodies are discarded, not their bytes)
        self.assertGreaterEqual(run.metric("data_received", "count"), 400 * size)


class Harness(unittest.TestCase):
    """loadtests/run.sh --tool k6 --quick on one mode, against a database of its own."""

    def test_run_sh_with_k6(self):
        lib = k6live.require_notesd_and_postgres()
        db_url = lib.create_database("k6_live_harness")
        tmp = tempfile.mkdtemp(prefix="k6-live-harness-")
        out = os.path.join(tmp, "out")
        env = {k: v for k, v in os.environ.items() if k not in ("PORT", "METRICS_PORT")}
        env.update({"DB_URL": db_url, "NOTESD_BIN": lib.BIN, "K6": K6})
        argv = [os.path.join(k6live.LOADTESTS, "run.sh"), "--tool", "k6", "--quick",
                "--modes", "read", "--duration", "3s", "--vus", VUS, "--out", out, "notesd"]
        try:
            res = subprocess.run(argv, env=env, capture_output=True, text=True,
                                 timeout=RUNSH_TIMEOUT_S)
            text = f"\n--- stdout\n{res.stdout[-4000:]}\n--- stderr\n{res.stderr[-4000:]}"
            self.assertEqual(res.returncode, 0, text)
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
            (test,) = summary["tests"]
            self.assertEqual((test["target"], test["mode"]), ("notesd", "read"))
            self.assertEqual(test["reconcile"]["result"], "OK", test["reconcile"])
            mdir = os.path.join(out, "r1", "notesd", "read")
            with open(os.path.join(mdir, "test.json")) as f:
                info = json.load(f)
            self.assertEqual(info["tool"], "k6")
            self.assertEqual(os.path.realpath(info["argv"][info["argv"].index("run") - 1]),
                             os.path.realpath(K6))
            with open(os.path.join(mdir, "reconcile.json")) as f:
                rec = json.load(f)
            self.assertTrue(rec["ok"], rec)
            self.assertEqual(rec["tool"], "k6")
            self.assertGreater(rec["client"]["total"], 0)
            report = os.path.join(mdir, "k6-report.html")
            if k6tool.web_dashboard_env(report, K6):
                # k6's web dashboard, exported at the end of the run, kept with the test
                self.assertTrue(os.path.isfile(report), os.listdir(mdir))
                with open(report, encoding="utf-8", errors="replace") as f:
                    self.assertIn("<html", f.read(4096).lower())
            print(f"  run.sh --tool k6 --quick: {rec['client']['total']} requests, reconciled",
                  flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
