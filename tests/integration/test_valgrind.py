#!/usr/bin/env python3
"""A short load on every route under valgrind's memcheck, ended by SIGTERM:
no invalid reads or writes, and no definitely lost memory."""
import re
import shutil
import threading
import unittest

from notes_testlib import SANITIZED, Notesd, create_database, main, request


class ValgrindTest(unittest.TestCase):
    def test_short_load_has_no_memory_errors_or_definite_leaks(self):
        valgrind = shutil.which("valgrind")
        self.assertIsNotNone(valgrind, "valgrind (Debian package valgrind) is required")
        if SANITIZED:
            self.skipTest("valgrind and AddressSanitizer do not mix; the strict build runs this")
        db_url = create_database("valgrind")
        server = Notesd(db_url, env={"POOL_MAX": "4", "STATIC_DIR": "/usr/share/doc"},
                        wrapper=[valgrind, "--leak-check=full", "--show-leak-kinds=definite",
                                 "--errors-for-leak-kinds=definite", "--error-exitcode=99",
                                 "--track-fds=no"], ready_timeout=60)
        statuses = []

        def work(k):
            for i in range(40):
                for method, path, body in (
                        ("GET", f"/notes/{1 + (k * 40 + i) % 1000}", None),
                        ("GET", "/notes?tag=js", None),
                        ("POST", "/notes", {"title": f"v{k}-{i}", "body": "b", "tag": "v"}),
                        ("PUT", f"/notes/{2 + i}", {"title": "u", "body": "b", "tag": "v"}),
                        ("GET", "/json", None), ("GET", "/primes?below=1000", None),
                        ("GET", "/notes/abc", None), ("POST", "/notes", b"{bad"),
                        ("GET", "/nope", None)):
                    headers = {"Content-Type": "application/json"} if isinstance(body, bytes) else None
                    statuses.append(request(server.port, method, path, body=body,
                                            headers=headers)[0])
            request(server.metrics_port, "GET", "/metrics")

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        code = server.stop(timeout=120)
        out = server.output
        print("\n".join(l for l in out.splitlines() if "lost:" in l or "ERROR SUMMARY" in l))
        self.assertEqual(len(statuses), 4 * 40 * 9)
        self.assertEqual(set(statuses), {200, 201, 400, 404})
        self.assertEqual(code, 0, out[-3000:])
        self.assertRegex(out, r"ERROR SUMMARY: 0 errors")
        m = re.search(r"definitely lost: ([\d,]+) bytes", out)
        self.assertTrue(m is None or m.group(1) == "0", out[-3000:])


if __name__ == "__main__":
    main()
