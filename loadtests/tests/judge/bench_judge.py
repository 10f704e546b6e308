"""How fast judge judges a large run, printed, not asserted: loadtests/judge on h2load
sending --requests (default 1,000,000) to /json over 10 connections, 8 requests in
flight on each, into a notesd whose ring holds twice the run (so judge reads it all
after the run, which is what is timed); then judge's own figures: seconds to read the
journal's pages, to check the run, to write the page and the JSON, and its peak memory.
It fails only when judge did not count every request h2load sent.

    cd loadtests && NOTESD_BIN=../build/notesd /usr/bin/python3 -B -m tests.judge.bench_judge
    ... -m tests.judge.bench_judge --requests 100000     (CTest: loadtests_judge_benchmark)
"""
import argparse
import os
import shutil
import sys
import tempfile

from loadlib import procs
from tests.judge.judgelib import NOTESD, check, run_judge


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=1_000_000)
    args = p.parse_args()
    if not os.access(NOTESD, os.X_OK) or not shutil.which("h2load"):
        print(f"skipped: needs {NOTESD} and h2load (apt-get install nghttp2-client)")
        return 77
    n = args.requests
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        page = os.path.join(tmp, "judge.html")
        load = procs.loadavg()
        rc, result, err = run_judge(
            ["--closed", "--connections", "10", "--requests", str(n), "--journal-records",
             str(2 * n + 1000), "--html", page],
            ["h2load", "--h1", "-n", str(n), "-c", "10", "-m", "8", "{url}"], timeout=3600)
        size = os.path.getsize(page) if os.path.exists(page) else None
    if result is None:
        print(err[-3000:])
        return 1
    t = result["timings_s"]
    judged = t["journal_read"] + t["checks"] + t["report"]
    print(f"judge on {n:,} requests ({result['journal_format']} pages): journal read "
          f"{t['journal_read']:.2f} s, checks {t['checks']:.2f} s, page and figures "
          f"{t['report']:.2f} s: {judged:.2f} s in all ({judged / n * 1e6:.2f} µs a request); "
          f"peak memory {result['peak_rss_mb']:.0f} MB; page {size:,} bytes; load average "
          f"{' '.join(f'{x:.2f}' for x in load or [])} before the run", flush=True)
    counted = check(result, "requests")
    if result["requests"] != n or counted["verdict"] != "PASS":
        print(f"FAIL: judge counted {result['requests']} of {n}: {counted}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
