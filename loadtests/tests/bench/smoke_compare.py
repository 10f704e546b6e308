"""A short real run of loadtests/bench --compare: HEAD against itself, so nothing may
tell the two sides apart.

    cd loadtests && /usr/bin/python3 -B -m tests.bench.smoke_compare

`--compare HEAD..HEAD` builds HEAD from `git archive` in a temporary tree (once: one
commit on both sides, each running a copy; uncommitted changes in this checkout change
nothing), runs the read mix in 5 interleaved pairs of 1 s runs against a private
PostgreSQL of its own, and callgrind once per side. Checks: the run exits 0; both
sides are the same commit, built in a tree removed again; every round has a valid
pair; the req/s verdict is "no difference" (at 99%: with 5 pairs, 2 identical binaries
are called different by chance less than 1% of the time); the other figures were
compared; callgrind's instructions per request are equal within the resolution on
/json and /notes/1; the report says it is indicative only; neither the run's scratch
directory (the temporary trees, the binaries' copies) nor a server started from it is
left.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from loadlib import stats
from loadlib.commands.bench import compare_report
from tests import LOADTESTS

ROUNDS = 5


def fail(msg):
    print(f"smoke_compare: FAIL: {msg}")
    sys.exit(1)


def running_from(directory):
    """Processes whose program lies in `directory` (the run's private notesd copies)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if exe.startswith(directory + "/"):
            found.append(f"{pid} {exe}")
    return found


def main():
    with tempfile.TemporaryDirectory(prefix="smoke-compare-") as tmp:
        os.chmod(tmp, 0o755)  # PostgreSQL runs as the postgres user and must reach its data
        out = os.path.join(tmp, "out")
        # no NOTESD_PGPORT: bench leaves the port to sql/localdb.sh (the first free one)
        env = {k: v for k, v in os.environ.items() if k != "NOTESD_PGPORT"}
        env["NOTESD_PGDATA"] = os.path.join(tmp, "pg", "pgdata")
        cmd = [os.path.join(LOADTESTS, "bench"), "--compare", "HEAD..HEAD", "--quick",
               "--tests", "read", "--variants", "plain", "--rounds", str(ROUNDS),
               "--confidence", "0.99", "--callgrind-rounds", "1", "--out", out]
        t0 = time.monotonic()
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
        took = time.monotonic() - t0
        print(res.stderr[-4000:])
        if res.returncode != 0:
            fail(f"bench exited {res.returncode}")
        with open(os.path.join(out, "bench.json")) as f:
            data = json.load(f)
        with open(os.path.join(out, "report.md")) as f:
            report = f.read()
    sides = data["meta"]["sides"]
    if sides["A"]["sha"] != sides["B"]["sha"]:
        fail(f"the two sides are different commits: {sides}")
    if "removed" not in sides["A"]["source"] or "removed" not in sides["B"]["source"]:
        fail(f"both sides should come from a temporary tree: {sides}")
    rows = {(r["case"], r["figure"]): r for r in compare_report.comparison_rows(data)}
    rps = rows[("read", "rps")]
    if rps["n"] != ROUNDS:
        fail(f"{rps['n']} valid pairs of {ROUNDS}: {[r.get('invalid_reason') for r in data['runs']]}")
    if rps["verdict"] != "no difference":
        fail(f"two builds of the same commit differ in req/s: {rps}")
    for key in ("cpu_us_per_req", "db_cpu_us_per_req", "startup_ms"):
        if rows[("read", key)]["n"] != ROUNDS or rows[("read", key)]["ratio"] is None:
            fail(f"{key} was not compared: {rows[('read', key)]}")
    instructions = compare_report.instruction_rows(data["callgrind"])
    if [r["path"] for r in instructions] != ["/json", "/notes/1"]:
        fail(f"no instruction counts: {data['callgrind']}")
    for r in instructions:
        if r["verdict"] != "no difference" or abs(r["ratio"] - 1) > compare_report.INSTRUCTION_RESOLUTION:
            fail(f"GET {r['path']}: identical builds, {r['a']['median']:.0f} against "
                 f"{r['b']['median']:.0f} instructions per request ({r['verdict']})")
    if "indicative only" not in report or "## Verdicts" not in report:
        fail("the report lacks its verdicts or the --quick warning")
    scratch = data["meta"]["scratch"]
    running = running_from(scratch)
    if running:
        fail(f"notesd copies still running: {running}")
    if os.path.exists(scratch):
        fail(f"{scratch} (the builds' temporary trees, the private copies) was left behind")
    print(f"smoke_compare: req/s {rps['ratio']:.3f} ({stats.describe_verdict(rps)}); "
          + "; ".join(f"GET {r['path']} {r['a']['median']:.0f} / {r['b']['median']:.0f} "
                      "instructions" for r in instructions) + f"; {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
