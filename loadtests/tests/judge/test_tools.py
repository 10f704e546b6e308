"""loadtests/judge --tool on three tools with an adapter (k6, httperf, hey): each one's
schedule verdict is the one calibrate's check 8 gave it in the committed scorecard (k6's
constant-arrival-rate and httperf's --rate keep the schedule; hey's -q workers fire in
lockstep), and calibrate's judge_schedule, given the same run, gives the same verdict
and the same figures: one implementation. What the adapter read of the tool's own
figures is held against the server's as its claims.

The scorecard was measured on a quiet machine; the schedules kept (k6's and httperf's)
are judged alone, after every other test (judgelib.alone: CTest
loadtests_judge_schedules), hey's lockstep beside them. A pause of the machine of a
few hundred milliseconds is still a stall the server really saw. So a verdict other
than the scorecard's is accepted only when its every reason is a stall (printed, for
the record), never when the tool's way of pacing is judged otherwise: k6 and httperf
are never bunched, hey always is. At 100 requests a second (check 8 runs 200/s), such
pauses are less often beyond an open model's bounds, and each tool's way of pacing
does not depend on the rate.

    cd loadtests && NOTESD_BIN=../build/notesd K6=/path/to/k6 \\
      /usr/bin/python3 -B -m tests.judge.test_tools
"""
import json
import os
import unittest

from loadlib.commands.calibrate import verdicts
from loadlib.tools import run as toolrun
from tests import LOADTESTS
from tests.judge.judgelib import NOTESD, alone, check, run_judge, runs_here

SCORECARD = os.path.join(LOADTESTS, "calibration", "latest-scorecard.json")
RATE, CONNECTIONS, SECONDS = 100, 10, 3


def check_eight(name="schedule"):
    """{tool: check 8's verdict} of the committed scorecard (its schedule, or its ramp)."""
    with open(SCORECARD) as f:
        data = json.load(f)
    return {t["tool"]: t["checks"][name]["verdict"] for t in data["tools"]
            if t.get("checks", {}).get(name)}


class AdaptedTools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(NOTESD, os.X_OK):
            raise unittest.SkipTest(f"{NOTESD} is not built")
        cls.adapters = {name: mod for name, mod, _ in toolrun.adapters()}
        cls.scorecard = check_eight()

    def setUp(self):
        runs_here(self)

    def judged(self, tool):
        if self.adapters.get(tool) is None:
            self.skipTest(f"{tool} is not installed")
        rc, result, err = run_judge(["--tool", tool, "--rate", str(RATE), "--connections",
                                     str(CONNECTIONS), "--duration", str(SECONDS)])
        self.assertIsNotNone(result, err)
        schedule = check(result, "schedule")
        if schedule["verdict"] != self.scorecard[tool]:
            parts = schedule["reason"].split("; ")
            self.assertTrue(all(p.startswith("stalls") for p in parts), schedule)
            print(f"  {tool}: {schedule['verdict']} where check 8 said {self.scorecard[tool]}: "
                  f"the machine paused ({schedule['reason']})", flush=True)
        # calibrate's check 8 on the same figures
        figures = {k: v for k, v in schedule["figures"].items() if k != "bounds"}
        run = {"result": {"requests": result["tool"]["requests"]}, "spec": {"rate": RATE},
               "server": {"requests": result["requests"],
                          "lag_max_ms": schedule["figures"]["bounds"]["server_lag_ms"]},
               "journal": {"records": result["requests"], "lost": 0, "schedule": figures,
                           "connections": {}}}
        theirs = verdicts.judge_schedule(run)
        self.assertEqual(theirs["verdict"], schedule["verdict"])
        self.assertTrue(theirs["detail"].startswith(schedule["figure"]), theirs["detail"])
        # the adapter read the tool's own count: a claim held against the server's
        claimed = check(result, "claimed_requests")
        self.assertEqual(claimed["figures"]["claimed"], result["tool"]["requests"])
        return result, schedule

    @alone
    def test_k6_constant_arrival_rate_keeps_its_schedule(self):
        _, s = self.judged("k6")
        self.assertEqual(self.scorecard["k6"], "PASS")
        self.assertNotIn("bunched", s["reason"])

    @alone
    def test_k6_ramping_arrival_rate_keeps_its_ramp(self):
        if self.adapters.get("k6") is None:
            self.skipTest("k6 is not installed")
        # check 8's ramp: 50/s rising to 250/s in 3 s, then 2 s at 250/s
        rc, result, err = run_judge(["--tool", "k6", "--ramp", "50:250:3", "--duration", "5",
                                     "--connections", str(CONNECTIONS)])
        self.assertIsNotNone(result, err)
        ramp = check(result, "schedule")
        self.assertIn("off the ramp on average", ramp["figure"])
        self.assertEqual(check_eight("ramp")["k6"], "PASS")
        if ramp["verdict"] != "PASS":
            # the one reason a quiet machine's run would not have: a pause of this one
            self.assertNotIn("off the ramp:", ramp["reason"], ramp)
            print(f"  k6's ramp: {ramp['verdict']} where check 8 said PASS: the machine paused "
                  f"({ramp['reason']})", flush=True)
        # calibrate's judge_ramp on the same figures
        figures = {k: v for k, v in ramp["figures"].items() if k != "bounds"}
        theirs = verdicts.judge_ramp({"result": {"requests": result["tool"]["requests"]},
                                      "spec": {"rate": 50.0, "ramp": [[3, 250.0], [2, 250.0]]},
                                      "server": {"requests": result["requests"]},
                                      "journal": {"records": result["requests"], "lost": 0,
                                                  "ramp": figures}})
        self.assertEqual(theirs["verdict"], ramp["verdict"])

    @alone
    def test_httperf_rate_keeps_its_schedule(self):
        result, s = self.judged("httperf")
        self.assertEqual(self.scorecard["httperf"], "PASS")
        self.assertNotIn("bunched", s["reason"])
        # a connection per request, by design of its rate
        c = check(result, "connections")["figures"]
        self.assertEqual(c["connections"], result["requests"])

    def test_hey_workers_fire_in_lockstep(self):
        _, s = self.judged("hey")
        self.assertEqual(self.scorecard["hey"], "WARN")
        self.assertIn("bunched", s["reason"])
        self.assertIn("lockstep", s["reason"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
