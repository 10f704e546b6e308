#!/usr/bin/env bash
# run.sh: the runtime comparison of the seed, on this machine.
#
#   loadtests/run.sh [options] TARGET...     TARGET: notesd, node, bun, deno
#
#   loadtests/run.sh notesd node bun deno             the seed: 3 rounds x read, write,
#                                                     mixed, json x 3 min, 100 connections
#   loadtests/run.sh --quick notesd node bun deno     a few minutes: 1 round, 10 s per test
#   loadtests/run.sh --rounds 1 --modes read,json --duration 60s notesd bun
#
# Options (defaults are the seed's):
#   --quick              1 round, 10 s per test, 2 s pause, 2 s warm-up (explicit options win)
#   --rounds N           rounds (3); round r starts at the r-th target, so the order rotates
#   --modes LIST         comma-separated: read, write, mixed, json (all four)
#   --duration D         length of each test, e.g. 180s, 3m (180s)
#   --vus N              virtual users / connections (100)
#   --pause D            pause between tests (15s)
#   --warmup D           wait after the first 200 before the first test (30s)
#   --out DIR            results (loadtests/results/<UTC timestamp>/)
#   --allow-remote-db    accept a DB_URL host that is not this machine
#   --tool auto|k6|wrk   load tool (auto: k6 when K6=/path/to/k6 names one or k6 is on PATH,
#                        else wrk); k6 is not in Debian or npm (loadtests/README.md, "k6");
#                        with k6, each test also keeps k6's web dashboard report
#                        (k6-report.html) when the k6 at hand has the dashboard
#
# For each target in each round it resets the notes table (sql/localdb.sh reset,
# or sql/reset.sql through psql when DB_URL is set), starts the target pinned to
# CPU 1 (taskset), times spawn -> first 200 of GET /notes?tag=js, waits the
# warm-up, then runs each test with the load tool pinned to CPU 0 while one
# scraper reads /metrics and /proc every second, reconciles the tool's counts
# with the server's (loadtests/reconcile) and pauses; then stops the target
# with SIGTERM. Each test's scrapes are also written as OpenMetrics
# (metrics.om, for docker/replay/backfill.sh). At the end
# loadtests/harness/analyze.py writes report.md, summary.json and SVG charts
# into the results directory.
#
# Targets: notesd = build/notesd (built by server/build.sh; NOTESD_BIN picks
# another binary and skips the build) with SERVER_TIMING=0 (`native`, its older
# name, is accepted and means the same); node, bun, deno =
# the Express peer in loadtests/peers/express run by the pinned runtimes
# (loadtests/peers/install.sh runs when they are missing). Everything listens
# on 127.0.0.1, on the first free ports in 18100-18199 (API) and 19100-19199
# (metrics). Without DB_URL the private PostgreSQL of sql/localdb.sh is used
# (started if needed; NOTESD_PGDATA and NOTESD_PGPORT choose another one).
#
# Exit status: 0 when every test ran, reconciled and had no failed request;
# 1 otherwise (report.md lists the problems); 2 for bad options or a missing
# tool, database or binary (then no results directory is created).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${NOTESD_PYTHON:-/usr/bin/python3}"
[ -x "$python" ] || python="$(command -v python3)"
# The harness is `harness` of the one entry point (loadlib/entry.py), run through
# loadtests/notesd-loadtests: Python puts that script's directory first on sys.path,
# so loadlib imports from the checkout, nothing to install (README.md).
exec "$python" -B "$here/notesd-loadtests" harness "$@"
