"""The k6 verdict that is about timing, run alone after everything else (CTest label
`serial`): the open-model script at a feasible rate drops nothing and exits 0, its run
reconciled exactly, as in test_live.py. A busy machine's late answers would make k6
drop iterations that a quiet one does not.

    cd loadtests && NOTESD_BIN=../build/notesd NOTESD_PGSTATE=../build-test/pgstate.json \\
      K6=/path/to/k6 /usr/bin/python3 -B -m tests.k6.test_timing

CTest `loadtests_k6_timing`; exits 77 (skipped) without k6, saying why.
"""
import unittest

from tests.k6 import k6live

K6 = k6live.require_k6("k6's open model at a feasible rate against notesd")
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
