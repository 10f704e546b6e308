"""A short real run of loadtests/bench --netns: three namespaces, 1 ms one way, the
read mix against notesd for 2 s, then nothing left behind.

    cd loadtests && NOTESD_BIN=../build/notesd /usr/bin/python3 -B -m tests.bench.smoke_netns

Checks: the run exits 0 within its time; bench.json holds a valid netns run of notesd
with requests, whose median latency is at least the two network round trips a request
makes (HTTP and query, 4 × 1 ms); the report has the section; afterwards no nb-*
namespace, no process of ours in one, no delay line, and the guard accepts the
addresses no more. Exits 77 (CTest's skip) where `ip netns add` is not permitted.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


from loadlib import netcheck, netns
from tests import LOADTESTS, REPO

SKIP = 77


def fail(msg):
    print(f"smoke_netns: FAIL: {msg}")
    sys.exit(1)


def main():
    ok, why = netns.permitted()
    if not ok:
        print(f"smoke_netns: skipped: {why}")
        return SKIP
    if any(os.path.exists(f"/run/netns/{n}") for n in netcheck.NETNS_NAMES):
        print("smoke_netns: skipped: nb-* namespaces exist (another benchmark is running)")
        return SKIP
    binary = os.environ.get("NOTESD_BIN") or os.path.join(REPO, "build", "notesd")
    if not os.access(binary, os.X_OK):
        fail(f"no notesd binary at {binary} (set NOTESD_BIN)")
    with tempfile.TemporaryDirectory(prefix="smoke-netns-") as tmp:
        os.chmod(tmp, 0o755)  # PostgreSQL runs as the postgres user and must reach its data
        out = os.path.join(tmp, "out")
        # no NOTESD_PGPORT: sql/localdb.sh takes the first free port from 54329 on, and moves
        # on when another socket holds one (a fixed port in the ephemeral range can be a
        # client connection's local port at that moment)
        env = {k: v for k, v in os.environ.items() if k != "NOTESD_PGPORT"}
        env["NOTESD_PGDATA"] = os.path.join(tmp, "pg", "pgdata")
        t0 = time.monotonic()
        res = subprocess.run([os.path.join(LOADTESTS, "bench"), "--rounds", "0", "--netns",
                              "--delays", "1", "--duration", "2s", "--warmup", "1s",
                              "--subjects", "notesd", "--notesd", binary, "--out", out],
                             env=env, capture_output=True, text=True, timeout=120)
        took = time.monotonic() - t0
        print(res.stderr[-3000:])
        if res.returncode != 0:
            fail(f"bench exited {res.returncode}")
        with open(os.path.join(out, "bench.json")) as f:
            data = json.load(f)
        runs = [r for r in data["netns"] if r["subject"] == "notesd"]
        if not runs or not runs[0].get("valid"):
            fail(f"no valid netns run of notesd: {runs}")
        r = runs[0]
        if not r["requests"] or r["rps"] <= 0:
            fail(f"no requests: {r}")
        # a read request crosses load-srv and srv-db once each way: ≥ 4 × 1 ms
        if r["p50_ms"] < 4.0:
            fail(f"p50 {r['p50_ms']} ms is below the 4 ms the delays alone make")
        with open(os.path.join(out, "report.md")) as f:
            if "## Three hosts on one machine (`--netns`)" not in f.read():
                fail("the report has no --netns section")
        print(f"smoke_netns: {r['rps']:.0f} req/s, p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms "
              f"over {data['netns_setup']['link']} links; {took:.0f} s")
    left = [n for n in netcheck.NETNS_NAMES if os.path.exists(f"/run/netns/{n}")]
    if left:
        netns.cleanup()
        fail(f"namespaces left behind: {left}")
    if os.path.exists(netns.STATE_FILE):
        fail(f"{netns.STATE_FILE} left behind")
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "nb-delayline":
                    fail(f"the delay line (pid {pid}) still runs")
        except OSError:
            pass
    if netcheck.is_own_netns_address("198.18.1.2", "nb-load"):
        fail("the guard still accepts 198.18.1.2 with the namespaces gone")
    print("smoke_netns: ok, nothing left behind")
    return 0


if __name__ == "__main__":
    sys.exit(main())
