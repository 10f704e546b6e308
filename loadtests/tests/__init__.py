"""The tests of loadtests/: one tree, run from loadtests/ as modules, so `loadlib`
and `tests` import without any sys.path edit (Python puts the working directory
first on sys.path for `-m`):

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_prom       # one file
    cd loadtests && /usr/bin/python3 -B -m unittest discover -t . -s tests   # all of them

lib/ the shared package loadlib, harness/ run.sh's harness, reconcile and report,
bench/ loadtests/bench, calibrate/ calibrate's conformance matrix, tools/ the
load-tool adapters, k6/ the k6 scripts run for real; fixtures/ the captured
scrapes, k6 summaries and wrk outputs several of them read, and fixtures/tools/
each load tool's captured runs. CTest runs each file (tests/CMakeLists.txt:
loadtests_*).
"""
from loadlib.paths import LOADTESTS, REPO, loadtests

TESTS = loadtests("tests")
FIXTURES = loadtests("tests", "fixtures")
__all__ = ["FIXTURES", "LOADTESTS", "REPO", "TESTS"]
