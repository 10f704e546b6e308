#!/usr/bin/env python3
"""A short load on every route under valgrind's memcheck, ended by SIGTERM:
no invalid reads or writes, and no definitely lost memory. Every route is one
example of tests/route_examples.py (held to server/routes.h by
tests/check_route_tables.py), with bad input to the notes routes beside them."""
import os
import re
import shutil
import sys
import threading
import unittest

from notes_testlib import SANITIZED, Notesd, create_database, main, request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from route_examples import API, EXAMPLES  # noqa: E402

BAD = [("GET", "/notes/abc", None), ("POST", "/notes", b"{bad"), ("GET", "/nope", None)]
ROUNDS, THREADS = 12, 4


class ValgrindTest(unittest.TestCase):
    def test_short_load_has_no_memory_errors_or_definite_leaks(self):
        valgrind = shutil.which("valgrind")
        self.assertIsNotNone(valgrind, "valgrind (Debian package valgrind) is required")
        if SANITIZED:
            self.skipTest("valgrind and AddressSanitizer do not mix; the strict build runs this")
        db_url = create_database("valgrind")
        static = os.path.join(os.environ.get("NOTESD_REPO", "."), "loadtests", "static")
        server = Notesd(db_url, env={"POOL_MAX": "4", "STATIC_DIR": static,
                                     "JOURNAL": "1000"},
                        wrapper=[valgrind, "--leak-check=full", "--show-leak-kinds=definite",
                                 "--errors-for-leak-kinds=definite", "--error-exitcode=99",
                                 "--track-fds=no"], ready_timeout=60)
        statuses = {}

        def work(k):
            for _ in range(ROUNDS):
                for key, (port, method, path, body) in EXAMPLES.items():
                    got = request(server.port if port == API else server.metrics_port, method,
                                  path, body=body)[0]
                    statuses.setdefault(key, set()).add(got)
                for method, path, body in BAD:
                    headers = {"Content-Type": "application/json"} if isinstance(body, bytes) else None
                    statuses.setdefault((f"bad {method}", path), set()).add(
                        request(server.port, method, path, body=body, headers=headers)[0])

        threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        code = server.stop(timeout=120)
        out = server.output
        print("\n".join(l for l in out.splitlines() if "lost:" in l or "ERROR SUMMARY" in l))
        print(", ".join(f"{m} {t}: {sorted(v)}" for (m, t), v in sorted(statuses.items())))
        self.assertEqual(set(statuses), set(EXAMPLES) | {(f"bad {m}", p) for m, p, _ in BAD})
        for (method, template), seen in statuses.items():
            # /fault answers its 503 every second time; a WebSocket without an upgrade is 426
            allowed = ({400, 404} if method.startswith("bad") else {200, 201, 426}) | (
                {503} if template == "/fault/:status" else set())
            self.assertLessEqual(seen, allowed, f"{method} {template}")
        self.assertEqual(code, 0, out[-3000:])
        self.assertRegex(out, r"ERROR SUMMARY: 0 errors")
        m = re.search(r"definitely lost: ([\d,]+) bytes", out)
        self.assertTrue(m is None or m.group(1) == "0", out[-3000:])


if __name__ == "__main__":
    main()
