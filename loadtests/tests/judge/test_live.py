"""loadtests/judge on generators no adapter knows (generators.py, given as judge's
command), against the notesd judge starts: an honest open model (Poisson arrivals, and
ten connections paced from random phases) PASSes and is counted exactly; one that sends
each second's share at once FAILs its schedule, naming the bursts; connections in
lockstep WARN; one that silently drops a tenth of what it claims FAILs its count; a
closed model is counted and its connections held; a notesd loaded by others is judged
over a window, and one restarted during it cannot be; bad usage exits 2.

The honest schedules run at 50 and 100 requests a second: a pause of the generator or of
the machine (tens of milliseconds, with every test of the suite running beside this
one) is then within what Poisson arrivals do anyway, where at 200/s it would be a stall
the verdict rightly names. The server's own pauses judge excuses (its event-loop lag);
the generator's it cannot see, so the generator says how late it was, and a run in which
it could not keep its schedule is run again (judgelib.honest_run). The two honest runs
and the lockstep's size are judged alone, after every other test (judgelib.alone: CTest loadtests_judge_schedules).

    cd loadtests && NOTESD_BIN=../build/notesd /usr/bin/python3 -B -m tests.judge.test_live
"""
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest

from loadlib import httpc
from loadlib.server import Target
from tests.judge.judgelib import (JUDGE, NOTESD, alone, check, generator, honest_run, plan,
                                  run_judge, runs_here, said)


class Generators(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(NOTESD, os.X_OK):
            raise unittest.SkipTest(f"{NOTESD} is not built")

    def setUp(self):
        runs_here(self)

    @alone
    def test_an_honest_poisson_generator_passes_and_is_counted_exactly(self):
        args = ("--rate", "50", "--duration", "5", "--connections", "4", "--seed", "11")
        claimed = plan("poisson", *args)
        with tempfile.TemporaryDirectory(prefix="judge-log-") as tmp:
            log = os.path.join(tmp, "requests.csv")
            rc, result, err, line = honest_run(
                self, ["--rate", "50", "--poisson", "--connections", "4", "--duration", "5",
                       "--claimed-requests", str(claimed), "--log", log],
                generator("poisson", *args, "--log", log))
        sent = line["sent"]
        self.assertEqual((rc, result["verdict"]), (0, "PASS"), result["checks"])
        self.assertEqual(result["requests"], sent)
        self.assertEqual(sent, claimed)
        self.assertEqual(check(result, "schedule")["verdict"], "PASS")
        self.assertIn("KS p", check(result, "schedule")["figure"])
        self.assertEqual(check(result, "claimed_requests")["verdict"], "PASS")
        joined = check(result, "join")
        self.assertEqual(joined["verdict"], "PASS", joined)
        self.assertEqual((joined["figures"]["by"], joined["figures"]["matched"],
                          joined["figures"]["tool_only"], joined["figures"]["server_only"]),
                         ("request id", sent, 0, 0))
        self.assertGreater(joined["figures"]["client_ms"]["p50"], 0)
        # the --json every reader relies on
        self.assertTrue(all({"name", "verdict"} <= set(c) for c in result["checks"]))

    @alone
    def test_ten_connections_paced_from_random_phases_pass(self):
        rc, result, err, line = honest_run(
            self, ["--rate", "100", "--connections", "10", "--duration", "4"],
            generator("phased", "--rate", "100", "--duration", "4", "--connections", "10"))
        self.assertEqual(check(result, "schedule")["verdict"], "PASS", check(result, "schedule"))
        self.assertEqual(result["requests"], line["sent"])
        self.assertEqual(check(result, "connections")["figures"]["connections"], 10)

    def test_each_seconds_share_at_once_fails_the_schedule(self):
        rc, result, err = run_judge(["--rate", "200", "--connections", "8", "--duration", "3"],
                                    generator("bursts", "--rate", "200", "--duration", "3",
                                              "--connections", "8"))
        self.assertEqual((rc, result["verdict"]), (1, "FAIL"))
        s = check(result, "schedule")
        self.assertEqual(s["verdict"], "FAIL")
        self.assertRegex(s["reason"], r"^bursts, about (1\d\d|2\d\d) arrivals each, one every "
                                      r"(9\d\d|1\d\d\d) ms")
        self.assertEqual(result["requests"], said(err)["sent"])

    @alone
    def test_connections_in_lockstep_warn(self):
        rc, result, _ = run_judge(["--rate", "200", "--connections", "8", "--duration", "3"],
                                  generator("lockstep", "--rate", "200", "--duration", "3",
                                            "--connections", "8"))
        s = check(result, "schedule")
        self.assertEqual((rc, result["verdict"], s["verdict"]), (3, "WARN", "WARN"), s)
        # about the 8 connections' 8 at once (a pause of the machine may merge two)
        at_once = int(re.match(r"bunched: about (\d+) arrivals at once", s["reason"]).group(1))
        self.assertTrue(6 <= at_once <= 12, s["reason"])
        self.assertIn("lockstep", s["reason"])

    def test_a_generator_that_drops_a_tenth_fails_its_count(self):
        args = ("--rate", "100", "--duration", "3", "--connections", "10", "--seed", "5")
        claimed = plan("phased", *args)
        rc, result, err = run_judge(["--rate", "100", "--connections", "10", "--duration", "3",
                                     "--claimed-requests", str(claimed)],
                                    generator("phased", *args, "--drop", "0.1"))
        sent = said(err)["sent"]
        self.assertEqual(sent, round(claimed * 0.9))
        self.assertEqual((rc, result["verdict"], result["requests"]), (1, "FAIL", sent))
        c = check(result, "claimed_requests")
        self.assertEqual(c["verdict"], "FAIL")
        self.assertIn(f"{claimed - sent} requests claimed that never reached the server",
                      c["reason"])

    def test_a_closed_model_is_counted_and_its_connections_held(self):
        rc, result, err = run_judge(["--closed", "--connections", "4", "--requests", "3000"],
                                    generator("closed", "--requests", "3000", "--connections",
                                              "4"))
        self.assertEqual(result["requests"], 3000)
        self.assertEqual(check(result, "requests")["verdict"], "PASS")
        s = check(result, "schedule")
        self.assertEqual(s["figures"]["most_at_once"], 4, s)
        self.assertIn(s["verdict"], ("PASS", "WARN"), s)    # WARN: a pause of the machine
        self.assertEqual(check(result, "connections")["verdict"], "PASS")

    def window(self, target, seconds, during):
        """judge over a window of `target` while `during()` runs once the window is open;
        (exit status, its --json, stderr)."""
        with tempfile.TemporaryDirectory(prefix="judge-window-") as tmp:
            out = os.path.join(tmp, "judge.json")
            proc = subprocess.Popen([JUDGE, "--target", target.url(""), "--metrics",
                                     target.metrics_url, "--rate", "100", "--duration",
                                     str(seconds), "--json", out], stderr=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, text=True)
            lines = []
            for line in proc.stderr:
                lines.append(line)
                if "judging a window" in line:
                    break
            rest = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
            rest.start()
            during()
            proc.wait(timeout=120)
            rest.join(timeout=10)
            proc.stderr.close()
            result = None
            if os.path.exists(out):
                with open(out) as f:
                    result = json.load(f)
        return proc.returncode, result, "".join(lines)

    def test_a_window_of_a_notesd_loaded_by_another(self):
        target = Target(NOTESD, pin=False, journal=100000)
        try:
            sent = {}

            def load():
                res = subprocess.run(generator("phased", "--rate", "100", "--duration", "2",
                                               "--connections", "10", url=target.url("/json")),
                                     capture_output=True, text=True, check=True)
                sent.update(said(res.stdout))
            rc, result, err = self.window(target, 4, load)
        finally:
            target.stop()
        self.assertIsNotNone(result, err)
        self.assertEqual(result["requests"], sent["sent"])
        # judged against the rate (the verdict itself is the tests above: this one's load
        # runs beside judge's reading of the ring, on a notesd judge did not start)
        self.assertIn("100/s", check(result, "schedule")["figure"])

    def test_a_restart_during_the_window_cannot_be_judged(self):
        target = Target(NOTESD, pin=False, journal=1000)
        if not httpc.request(target.metrics_port, "/journal?limit=1").headers.get("journal-epoch"):
            target.stop()
            self.skipTest("this notesd's journal has no epoch")

        def restart():
            for _ in range(5):
                target.get("/json")
            target.process.stop(10)
            target.process.start()
            target.process.wait_ready(limit_s=15, poll_s=0.05)
            for _ in range(5):
                target.get("/json")
            time.sleep(2.5)                     # the window reads once a second
        try:
            rc, result, err = self.window(target, 4, restart)
        finally:
            target.stop()
        self.assertEqual((rc, result["verdict"]), (1, "FAIL"), err)
        self.assertIn("restarted", check(result, "journal")["reason"])

    def test_bad_usage_exits_2(self):
        for options in ([], ["--rate", "10", "--closed", "--", "true"],
                        ["--poisson", "--", "true"], ["--tool", "no-such-tool"],
                        ["--target", "http://127.0.0.1:9"], ["--ramp", "10:x:3", "--", "true"]):
            with self.subTest(options=options):
                res = subprocess.run([JUDGE, "--notesd", NOTESD, *options], capture_output=True,
                                     text=True, timeout=60)
                self.assertEqual(res.returncode, 2, res.stderr)
                self.assertRegex(res.stderr, re.compile(r"usage:|judge:"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
