#!/usr/bin/python3
"""Seconds from spawning notesd to its first 200 of `GET /notes?tag=js`, as the
load-testing harness measures start-up (loadtests/loadlib/server.py: spawned with
posix_spawn, polled every millisecond).

    tests/tools/startup_time.py [--bin BUILD/notesd ...] [--starts 10]
                                [--mode plain|prepared|pipeline ...] [--split]

Each start is a fresh process on a database that already runs, so what is measured
is notesd's own start-up: settings, listeners, the first database connection and,
with --prepared, the prepares. Several binaries and modes are measured start by start,
alternating, and the median, minimum and maximum printed per binary and mode. With
--split, each start is measured in two parts as well: spawn to the first 200 of
`GET /status` (no database), then one `GET /notes?tag=js` on a connection of its own
(the first database connection and its first query, prepares included), so that the
part the query mode changes is seen apart from the process's own start.

It starts a PostgreSQL of its own (tests/integration/pg_fixture.py), or uses the one
NOTESD_PGSTATE names. A measurement, not a test: it asserts only that every start
answered 200.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "loadtests"))

from loadlib import httpc, server  # noqa: E402

MODES = {"plain": [], "prepared": ["--prepared"], "pipeline": ["--pipeline", "8"]}


def once(binary, db_url, args, log, split=False):
    """Seconds to the first 200 of /notes?tag=js; with `split`, (seconds to the first
    200 of /status, seconds of the first /notes?tag=js after it, and its Server-Timing
    `db` and `total`, in seconds)."""
    port, metrics_port = server.pick_ports(range(18400, 18500), 1000)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "POOL_"))}
    env.update({"DB_URL": db_url, "HOST": "127.0.0.1", "PORT": str(port),
                "METRICS_PORT": str(metrics_port), "METRICS_HOST": "127.0.0.1",
                "POOL_MAX": "20", "LOG_LEVEL": "warn"})
    proc = server.ProcessUnderTest([binary, *args], env, REPO, log, port=port,
                                   ready_path="/status" if split else "/notes?tag=js")
    try:
        up = proc.start_ready(limit_s=30.0, poll_s=0.001)
        if not split:
            return up
        t0 = time.monotonic()
        res = httpc.request(port, "/notes?tag=js", timeout=10)
        took = time.monotonic() - t0
        if res.status != 200:
            raise SystemExit(f"{binary}: /notes?tag=js answered {res.status}")
        # The server's own account: `db` from sending the query (prepares included) to
        # its result, `total` from receiving the request (the connect included).
        timing = dict(re.findall(r"(\w+);dur=([\d.]+)", res.headers.get("server-timing", "")))
        return up, took, float(timing.get("db", "nan")) / 1000, float(timing.get("total", "nan")) / 1000
    finally:
        proc.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", action="append", help="notesd binary (repeatable) [build/notesd]")
    ap.add_argument("--mode", action="append", choices=sorted(MODES),
                    help="how notesd runs (repeatable) [plain, prepared]")
    ap.add_argument("--starts", type=int, default=10, help="starts per binary and mode [10]")
    ap.add_argument("--split", action="store_true",
                    help="also measure the process's start and the first query apart")
    args = ap.parse_args()
    bins = args.bin or [os.path.join(REPO, "build", "notesd")]
    modes = args.mode or ["plain", "prepared"]

    import pg_fixture
    from notes_testlib import create_database
    own = None
    if not os.environ.get("NOTESD_PGSTATE"):
        own = os.path.join(tempfile.mkdtemp(), "pg.json")
        pg_fixture.start(own)
        os.environ["NOTESD_PGSTATE"] = own
    try:
        db_url = create_database("startup_time")
        seconds = {(b, m): [] for b in bins for m in modes}
        parts = {(b, m): [] for b in bins for m in modes}
        log = os.path.join(tempfile.mkdtemp(), "notesd.log")
        for _ in range(args.starts):
            for b in bins:
                for m in modes:
                    seconds[(b, m)].append(once(b, db_url, MODES[m], log))
                    if args.split:
                        parts[(b, m)].append(once(b, db_url, MODES[m], log, split=True))
        for (b, m), s in seconds.items():
            ms = [x * 1000 for x in s]
            out = {"bin": b, "mode": m, "starts": len(ms),
                   "median_ms": round(statistics.median(ms), 1),
                   "min_ms": round(min(ms), 1), "max_ms": round(max(ms), 1)}
            if args.split:
                out["to_status_median_ms"] = round(
                    statistics.median(x[0] for x in parts[(b, m)]) * 1000, 1)
                out["first_query_median_ms"] = round(
                    statistics.median(x[1] for x in parts[(b, m)]) * 1000, 1)
                out["server_timing_db_median_ms"] = round(
                    statistics.median(x[2] for x in parts[(b, m)]) * 1000, 2)
                out["server_timing_total_median_ms"] = round(
                    statistics.median(x[3] for x in parts[(b, m)]) * 1000, 2)
            print(json.dumps(out))
    finally:
        if own:
            pg_fixture.stop(own)


if __name__ == "__main__":
    main()
