"""The k6 verdicts that are about timing, run alone after everything else (CTest label
`serial`): the open-model script at a feasible rate drops nothing and exits 0 (a busy
machine's late answers would make k6 drop iterations that a quiet one does not), and
breaking.js finds its breaking point and stops its ramp (its backlog of /primes, both
cores' worth, drains in seconds only on a quiet machine). Every run reconciled exactly,
as in test_live.py.

    cd loadtests && NOTESD_BIN=../build/notesd NOTESD_PGSTATE=../build-test/pgstate.json \\
      K6=/path/to/k6 /usr/bin/python3 -B -m tests.k6.test_timing

CTest `loadtests_k6_timing`; exits 77 (skipped) without k6, saying why.
"""
import unittest

from tests.k6 import k6live

K6 = k6live.require_k6("k6's open model at a feasible rate and breaking.js, against notesd")
k6live.require_notesd_and_postgres()

SECONDS = "2s"


class Timing(k6live.ScriptRuns):
    SUITE = "k6_timing"

    def test_open_model_feasible_rate_drops_nothing(self):
        # 50/s with 100 VUs ready: k6 needs a VU it has not got only when answers are 2 s
        # late, which a shared machine's busy moments (reads of 0.5 s were seen) stay far
        # from; the database pool is opened beforehand
        self.server.warm()
        run = self.run_script(K6, "notes-open.js", {"MODE": "read", "RATE": "50", "DURATION": SECONDS,
                                                    "PRE_VUS": "100", "MAX_VUS": "200"},
                              name="open-feasible")
        data = self.assert_reconciled(run, at_least=90)
        self.assertEqual(run.metric("dropped_iterations", "count") or 0, 0,
                         "a feasible rate dropped iterations")
        self.assertTrue(run.summary["metrics"]["dropped_iterations"]["thresholds"]["count==0"]["ok"])
        # constant-arrival-rate started RATE x DURATION iterations (k6 2.2 also starts one at
        # the very end: 101 for 50/s over 2 s), one request each
        iterations = int(run.metric("iterations", "count"))
        self.assertIn(iterations, (100, 101))
        self.assertEqual(data["client"]["total"], iterations)


    def test_breaking_point_is_found_and_stops_the_ramp(self):
        # 40 VUs on /primes?below=200000 (about 15 ms of one core each) with a 200 ms
        # timeout: the queue (~0.6 s) outgrows the timeout at once, the failure rate
        # passes 20%, and the threshold aborts the 21 s ramp once its 10 s
        # delayAbortEval has passed, with k6's status 99
        run = self.run_script(K6, "breaking.js", {"STAGES": "1s:40,20s:40", "BELOW": "200000",
                                                  "TIMEOUT": "200ms", "GRACEFUL_RAMP_DOWN": "1s"},
                              name="breaking-point", want_rc=k6live.THRESHOLDS_FAILED)
        self.server.settle()   # the requests k6 gave up on, still computed, before the next test
        self.assertIn("BREAKING POINT: failure rate", run.stdout)
        self.assertIn("first failed request with", run.stdout)
        self.assertGreaterEqual(run.metric("http_req_failed", "rate"), 0.2)
        # k6 says so when a threshold with abortOnFail ends the run before its 21 s
        self.assertIn("stopping test prematurely", run.stderr,
                      "the threshold did not stop the ramp" + run.output())

if __name__ == "__main__":
    unittest.main(verbosity=2)
