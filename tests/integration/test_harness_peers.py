#!/usr/bin/env python3
"""The comparison itself end to end: loadtests/run.sh runs notesd beside the Express
peer on Node (and on Bun and Deno, which loadtests/peers/install.sh installs with it
from npm) for one round of read and json, 3 s each, and every check of
test_harness.py must hold for every target: every test reconciled, every figure of
every target a number (nothing in report.md reads n/a), a bar per target and test in
both charts, each target's requests totalled on its own.

The peer's /metrics arrives chunked (Node's writeHead + end), notesd's does not:
this is the test that reads a real peer's page.

    NOTESD_REPO=/path/to/repo /usr/bin/python3 tests/integration/test_harness_peers.py

Needs npm and the npm registry the first time on a machine (the peer and the pinned runtimes,
about a minute; loadtests/npm_cache.sh keeps them for the next checkout); a runtime
that does not install or run is left out and named.
"""
import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True

import test_harness  # noqa: E402
from notes_testlib import REPO, main  # noqa: E402
from loadlib import server  # noqa: E402  (test_harness put loadtests/ on sys.path)


class PeersHarnessTest(test_harness.HarnessTest):
    TARGETS = ["notesd", "node"]
    MODES = ["read", "json"]
    TIMEOUT_S = 170

    @classmethod
    def prepare(cls):
        if not server.peers_ready(server.PEERS):
            res = subprocess.run([os.path.join(REPO, "loadtests", "peers", "install.sh")], capture_output=True,
                                 text=True, timeout=900)
            print(res.stdout[-1500:], res.stderr[-1500:], flush=True)
        if not server.peers_ready(["node"]):
            raise AssertionError("the Express peer on Node could not be installed (loadtests/peers/install.sh)")
        usable = [rt for rt in ("bun", "deno") if server.runtime_version(rt)]
        missing = sorted(set(("bun", "deno")) - set(usable))
        if missing:
            print(f"  note: {', '.join(missing)} not installed or not runnable here; left out", flush=True)
        cls.TARGETS = ["notesd", "node"] + usable
        print(f"  targets: {' '.join(cls.TARGETS)}", flush=True)


if __name__ == "__main__":
    main()
