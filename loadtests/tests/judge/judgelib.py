"""What judge's live tests share: running loadtests/judge as a person does (by path, with
--json), the generators of generators.py as its command, and reading what both said.

    rc, result, stderr = run_judge(["--rate", "50"], generator("poisson", "--rate", "50", ...))
    check(result, "schedule")["verdict"]
    said(stderr)["sent"]                  # the generator's own JSON line

The tests run under CTest (tests/CMakeLists.txt), which gives NOTESD_BIN (and K6); by
hand, from loadtests/: NOTESD_BIN=../build/notesd /usr/bin/python3 -B -m tests.judge.test_live
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from tests import LOADTESTS, REPO

JUDGE = os.path.join(LOADTESTS, "judge")
GENERATORS = os.path.join(LOADTESTS, "tests", "judge", "generators.py")
NOTESD = os.environ.get("NOTESD_BIN") or os.path.join(REPO, "build", "notesd")


def generator(mode, *args, url="{url}"):
    """The command of one of generators.py's modes (judge fills in {url})."""
    return [sys.executable, GENERATORS, mode, url, *args]


def plan(mode, *args):
    """The requests a seeded generator will claim, before it runs."""
    out = subprocess.run([sys.executable, GENERATORS, mode, "http://127.0.0.1:9/", *args,
                          "--plan"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["claimed"]


def run_judge(options, command=None, timeout=180, notesd=True):
    """loadtests/judge with `options` (and `-- command`): (exit status, its --json, stderr)."""
    with tempfile.TemporaryDirectory(prefix="judge-test-") as tmp:
        out = os.path.join(tmp, "judge.json")
        argv = [JUDGE, *(["--notesd", NOTESD] if notesd else []), "--json", out, *options]
        if command:
            argv += ["--", *command]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        result = None
        if os.path.exists(out):
            with open(out) as f:
                result = json.load(f)
    print(res.stdout, flush=True)
    return res.returncode, result, res.stderr


# A generator's own lateness (its "late_ms": the most a send came after its time) beyond
# which the server cannot be expected to see its schedule kept: a pause that long on a
# machine every other test shares is the machine's, not the generator's design.
LATE_OK_MS = 50.0
ATTEMPTS = 3


def honest_run(test, options, command):
    """Runs judge on an honest generator until, in one attempt, the generator kept its
    own schedule and the server its own (each late by at most LATE_OK_MS: the
    generator's late_ms, the server's event-loop lag judge read) or judge passed the
    schedule, at most ATTEMPTS times; (exit status, --json, stderr, the generator's
    line) of that attempt. Skips the test, saying why, when the machine never let them."""
    lates = []
    for _ in range(ATTEMPTS):
        rc, result, err = run_judge(options, command)
        line = said(err)
        schedule = check(result, "schedule")
        server = schedule["figures"].get("bounds", {}).get("server_lag_ms") or 0.0
        if max(line["late_ms"], server) <= LATE_OK_MS or schedule["verdict"] == "PASS":
            return rc, result, err, line
        lates.append((line["late_ms"], server))
        print(f"  the generator was {line['late_ms']:.0f} ms late, the server {server:.0f} ms: "
              "again", flush=True)
    test.skipTest(f"the machine kept the generator or the server from its schedule in "
                  f"{ATTEMPTS} runs (late by {lates} ms)")


def check(result, name):
    """The check called `name` of a judged run (AssertionError when it has none)."""
    found = [c for c in result["checks"] if c["name"] == name]
    if not found:
        raise AssertionError(f"no check {name!r}: {[c['name'] for c in result['checks']]}")
    return found[0]


def said(stderr):
    """The generator's JSON line, from judge's stderr (the command's output goes there)."""
    for line in stderr.splitlines():
        if line.startswith("{") and '"sent"' in line:
            return json.loads(line)
    raise AssertionError(f"no generator line in: {stderr[-2000:]}")


# A verdict that an honest schedule was kept (a PASS of the schedule check) needs a machine
# that lets the generator keep it and the server see it: with every other test beside it, a
# scheduler's quanta bunch arrivals into what judge rightly calls lockstep. Those tests, and
# the one that counts a lockstep's size (a busy machine merges two bunches, or names its
# pauses first), run alone, after the rest (CTest loadtests_judge_schedules, label serial, sets this); the
# others beside every other test (loadtests_judge_live, loadtests_judge_tools).
ALONE = os.environ.get("NOTESD_JUDGE_ALONE") == "1"


def alone(test):
    """Marks a test whose verdict is a schedule's exact shape: it runs only where ALONE is set."""
    test.judged_alone = True
    return test


def runs_here(case):
    """From setUp: skips a test marked alone() unless ALONE, and any other test when ALONE."""
    marked = getattr(getattr(case, case._testMethodName), "judged_alone", False)
    if marked and not ALONE:
        raise unittest.SkipTest("a schedule kept: judged alone, in loadtests_judge_schedules")
    if ALONE and not marked:
        raise unittest.SkipTest("not a schedule kept: in loadtests_judge_live or _tools")

