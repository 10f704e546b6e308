#!/usr/bin/python3
"""User-space instructions per request, counted by callgrind.

    tests/tools/callgrind_per_request.py [--bin BUILD/notesd ...] [--path /json ...]
                                         [--requests 2000] [--rounds 3] [--json FILE]
                                         [--env PREPARED=1 ...] [--clients 1]

Runs notesd under `valgrind --tool=callgrind` twice per round, on a free port
this picks (any revision can be measured: older ones cannot take PORT=0): once
with 100 keep-alive requests on one connection and once with 100 + REQUESTS,
then ends it with SIGTERM. Start-up, the first connection to the database and shutdown
are the same in both runs, so the difference of the two totals (callgrind's
`totals:` line, every instruction the process ran in user space: notesd, h2o,
libpq, libc), divided by REQUESTS, is what one request costs. The lag probe is
slowed to one tick a minute and the pool holds one connection, so nothing that
depends on how long a run takes is counted; what is left of that (h2o's Date
header, refreshed once a second) is a few instructions per request. Several
binaries are measured round by round, alternating, and the median of the
rounds printed per binary and path (and with --json written to FILE: {"requests",
"rounds", "per_request": {binary: {path: [one figure per round]}}}; loadtests/bench
--compare reads it).

--env sets notesd's settings (PREPARED=1, PIPELINE_DEPTH=16: the query variants).
--clients N sends the requests on N keep-alive connections at once instead of one
(each its share, one after the other), so that a pipelined notesd has several
queries to put in one batch; the pool still holds one connection.

How exact: callgrind counts every instruction, but a few dozen of a request's
depend on time: the latency histograms' bucket search (how long the request
took) and h2o's Date header, refreshed once a second. Two runs of the same
binary differ by up to about 0.1% on GET /notes/1 and a few instructions on
/json.

It starts a PostgreSQL of its own (tests/integration/pg_fixture.py), or uses
the one NOTESD_PGSTATE names. A measurement, not a test: it asserts only that
every request got 200.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

WARM = 100


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect_when_listening(proc, port, log_path, limit_s=120):
    """An HTTP connection to the server once its port accepts one (valgrind takes a second
    or more to start it). Waiting for the port, not for the start-up line, works with
    every revision: older ones print that line only at LOG_LEVEL=info and cannot take
    PORT=0. The connection that succeeds is the one the requests use, so nothing but
    them reaches the server."""
    deadline = time.monotonic() + limit_s
    while True:
        if proc.poll() is not None:
            with open(log_path, errors="replace") as f:
                tail = f.read()[-2000:]
            raise SystemExit(f"the server exited with {proc.returncode} before listening:\n{tail}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            conn.connect()
            return conn
        except ConnectionRefusedError:
            conn.close()
        if time.monotonic() > deadline:
            raise SystemExit(f"nothing listens on port {port} after {limit_s} s")
        time.sleep(0.02)


def ask(conn, path, n, errors):
    """n requests of `path`, one after the other on conn; a failure goes to `errors`."""
    try:
        for _ in range(n):
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                errors.append(f"{path}: status {resp.status}")
                return
    except OSError as e:
        errors.append(f"{path}: {e}")
    finally:
        conn.close()


def total_instructions(binary, db_url, path, n, out, settings=None, clients=1):
    """Callgrind's total Ir for a server's life in which `path` is asked WARM + n times,
    on `clients` connections at once."""
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PG", "POOL_", "LAG_", "PREPARED", "PIPELINE_"))}
    env.update({"DB_URL": db_url, "PORT": str(port), "HOST": "127.0.0.1", "METRICS_PORT": "0",
                "POOL_MAX": "1", "LAG_INTERVAL_MS": "60000", "LOG_LEVEL": "warn"})
    env.update(settings or {})
    log_path = out + ".log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                 binary], env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        conns = [connect_when_listening(proc, port, log_path)]
        conns += [http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                  for _ in range(clients - 1)]
        errors = []
        total = WARM + n
        shares = [total // clients + (i < total % clients) for i in range(clients)]
        threads = [threading.Thread(target=ask, args=(c, path, k, errors))
                   for c, k in zip(conns, shares)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise SystemExit(errors[0])
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with open(out) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise SystemExit(f"no totals in {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", action="append", help="notesd binary (repeatable) [build/notesd]")
    ap.add_argument("--path", action="append", help="path to ask (repeatable) [/json, /notes/1]")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of notesd's (repeatable): PREPARED=1, PIPELINE_DEPTH=16")
    ap.add_argument("--clients", type=int, default=1,
                    help="keep-alive connections asking at once [1]")
    args = ap.parse_args()
    settings = dict(e.split("=", 1) for e in args.env)
    # SIGTERM (loadtests/bench stopping us) unwinds like Ctrl-C: the finally blocks stop
    # the server under valgrind and the PostgreSQL this started
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    binaries = args.bin or [os.path.join(REPO, "build", "notesd")]
    paths = args.path or ["/json", "/notes/1"]

    tmp = tempfile.mkdtemp(prefix="notesd-callgrind-")
    own_pg = "NOTESD_PGSTATE" not in os.environ
    if own_pg:
        import pg_fixture
        os.environ["NOTESD_PGSTATE"] = os.path.join(tmp, "pg.json")
        pg_fixture.start(os.environ["NOTESD_PGSTATE"])
    try:
        from notes_testlib import create_database
        db_url = create_database("callgrind")
        out = os.path.join(tmp, "callgrind.out")
        results = {(b, p): [] for b in binaries for p in paths}
        for r in range(args.rounds):
            for p in paths:
                for b in binaries:
                    few = total_instructions(b, db_url, p, 0, out, settings, args.clients)
                    many = total_instructions(b, db_url, p, args.requests, out, settings,
                                              args.clients)
                    per = (many - few) / args.requests
                    results[(b, p)].append(per)
                    print(f"round {r + 1}: {b} {p}: {per:,.0f} instructions per request",
                          flush=True)
        print("median of the rounds:")
        for (b, p), values in results.items():
            print(f"  {b} {p}: {statistics.median(values):,.0f} "
                  f"(rounds: {', '.join(f'{v:,.0f}' for v in values)})")
        if args.json:
            per = {b: {p: results[(b, p)] for p in paths} for b in binaries}
            with open(args.json, "w") as f:
                json.dump({"requests": args.requests, "rounds": args.rounds,
                           "per_request": per}, f, indent=1)
    finally:
        if own_pg:
            import pg_fixture
            pg_fixture.stop(os.environ["NOTESD_PGSTATE"])
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
