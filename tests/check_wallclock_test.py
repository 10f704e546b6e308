#!/usr/bin/python3
"""The wall-clock checker must fail on the upper bounds a busy machine breaks, in each
way a test writes one, name the line, and pass what is no such bound: a bound widened
by slack(), a comparison with a time measured in the test, a lower bound, CPU seconds,
sizes and counts, and a line carrying the marker."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import check_wallclock  # noqa: E402

BOUNDS = {  # flagged: source of one test body
    "assertLess on a measured duration": "self.assertLess(took, 0.5)",
    "assertLessEqual on time.monotonic()": "self.assertLessEqual(time.monotonic() - t0, 2)",
    "assertGreater with the time second": "self.assertGreater(1.0, elapsed)",
    "assert statement": "assert seconds <= 3",
    "assert statement, reversed": "assert 3 > duration",
    "assertTrue of a comparison": "self.assertTrue(latency < 0.2)",
    "chained comparison": "self.assertTrue(0 < lag_s < 0.2)",
    "a figure's key in seconds": 'self.assertLess(st["startup_s"], 30)',
    "a figure's key in milliseconds": 'self.assertLess(s["state"]["testRunDurationMs"], 20000)',
    "a histogram's sum": 'self.assertLess(delta(m, "http_request_duration_seconds_sum"), 10)',
    "a constant as the bound": "self.assertLess(took, self.TIMEOUT_S - 10)",
    "slack() measured, but not in the bound": "allowance = slack(port)\nself.assertLess(took, 0.5)",
}
PASSES = {  # not flagged
    "slack() in the bound": "self.assertLess(took, 0.5 + slack(self.port))",
    "a name assigned from slack()": "allowance = slack(port)\nself.assertLess(took, 0.6 + allowance)",
    "a lower bound": "self.assertGreaterEqual(took, 0.2)",
    "a time measured in the test as the bound": "self.assertLessEqual(lag_max, took + 0.05)",
    "a key measured in the same record": 'self.assertLessEqual(r["arrived_us"], r["ended_us"])',
    "CPU seconds": "self.assertLess(res.cpu_s, 1.5 * cores)",
    "a count": "self.assertLess(sent, 10)",
    "a size": "self.assertLess(rss_growth, 16 << 20)",
    "the marker on the line": "self.assertLess(took, 5)  # not a wall-clock limit: a fake clock",
    "the marker above": "# not a wall-clock limit: the schedule's own length\nself.assertLess(took, 21)",
}

failures = 0


def report(name, ok, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        failures += 1
        print("  " + detail)


def source(body):
    lines = "\n".join("        " + line for line in body.splitlines())
    return f"import time\n\n\nclass T:\n    def test(self):\n{lines}\n"


for name, body in BOUNDS.items():
    found = check_wallclock.check_source(source(body), "t.py")
    line = 6 + body.count("\n")  # the body's last line holds the assertion
    report(f"flags {name}", len(found) == 1 and found[0].startswith(f"t.py:{line}: "),
           f"{body!r}: {found}")
for name, body in PASSES.items():
    found = check_wallclock.check_source(source(body), "t.py")
    report(f"passes {name}", found == [], f"{body!r}: {found}")

# The command: exit 1 naming file and line, exit 0 on a clean file.
with tempfile.TemporaryDirectory() as tmp:
    bad, good = os.path.join(tmp, "test_bad.py"), os.path.join(tmp, "test_good.py")
    with open(bad, "w") as f:
        f.write(source(BOUNDS["assertLess on a measured duration"]))
    with open(good, "w") as f:
        f.write(source(PASSES["slack() in the bound"]))
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_wallclock.py"), bad, good],
                       capture_output=True, text=True)
    report("the command fails and names the line", p.returncode == 1 and "test_bad.py:6: " in p.stdout
           and "test_good" not in p.stdout, p.stdout)
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_wallclock.py"), good],
                       capture_output=True, text=True)
    report("the command passes a clean file", p.returncode == 0, p.stdout)

print(f"{len(BOUNDS) + len(PASSES) + 2 - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
