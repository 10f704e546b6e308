#!/usr/bin/env python3
"""The private PostgreSQL of sql/localdb.sh when another one already runs: what a
second checkout on the same machine meets. A first private cluster is started
(on 54329 when that is free), then `server/run.sh` of a "second checkout" (its own
NOTESD_PGDATA, no NOTESD_PGPORT) must start its own cluster on another port, say
which, and serve from it; NOTESD_PGPORT naming a taken port is refused in words.

    NOTESD_BIN=build/notesd /usr/bin/python3 tests/integration/test_localdb.py
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True

from notes_testlib import BIN, REPO, main, request  # noqa: E402

LOCALDB = os.path.join(REPO, "sql", "localdb.sh")
READY = re.compile(r"postgres: ready at postgresql://postgres@127\.0\.0\.1:(\d+)/notes \(data: (.+)\)")


class SecondCheckout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="notesd-localdb-")
        os.chmod(cls.tmp, 0o755)             # the cluster runs as `postgres` when we are root
        cls.env = {k: v for k, v in os.environ.items()
                   if k not in ("DB_URL", "NOTESD_PGPORT", "NOTESD_PGDATA", "PORT", "METRICS_PORT")}
        cls.first = cls.localdb("first", "start")

    @classmethod
    def tearDownClass(cls):
        for name in ("first", "second", "third"):
            if os.path.isdir(os.path.join(cls.tmp, name)):
                cls.localdb(name, "stop")
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def env_of(cls, name, **extra):
        return {**cls.env, "NOTESD_PGDATA": os.path.join(cls.tmp, name, "pgdata"), **extra}

    @classmethod
    def localdb(cls, name, *args, **extra):
        return subprocess.run([LOCALDB, *args], env=cls.env_of(name, **extra), capture_output=True, text=True,
                              timeout=120)

    def test_second_server_run_starts_on_another_port_and_serves(self):
        m = READY.search(self.first.stdout)
        self.assertIsNotNone(m, self.first.stdout + self.first.stderr)
        first_port = int(m.group(1))
        env = self.env_of("second", NOTESD_BIN=BIN, PORT="0", METRICS_PORT="auto", HOST="127.0.0.1",
                          METRICS_HOST="127.0.0.1", ASAN_OPTIONS="detect_leaks=0")
        proc = subprocess.Popen([os.path.join(REPO, "server", "run.sh")], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        lines = []
        try:
            port = None
            for line in proc.stdout:
                lines.append(line)
                got = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if got:
                    port = int(got.group(1))
                    break
            out = "".join(lines)
            self.assertIsNotNone(port, out)
            m = READY.search(out)
            self.assertIsNotNone(m, out)
            second_port = int(m.group(1))
            self.assertNotEqual(second_port, first_port, out)
            self.assertIn(f"port {first_port} is taken by another server", out)
            self.assertEqual(m.group(2), os.path.join(self.tmp, "second", "pgdata"))
            status, _, body = request(port, "GET", "/notes/1")
            self.assertEqual(status, 200, body)
            # the other commands find the second cluster's port again
            url = self.localdb("second", "url").stdout.strip()
            self.assertEqual(url, f"postgresql://postgres@127.0.0.1:{second_port}/notes")
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
            proc.stdout.close()

    def test_a_taken_port_named_explicitly_is_refused(self):
        port = READY.search(self.first.stdout).group(1)
        res = self.localdb("third", "start", NOTESD_PGPORT=port)
        self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
        self.assertIn(f"NOTESD_PGPORT={port} is taken by another server; choose another port", res.stderr)
        self.assertNotEqual(self.localdb("third", "status").returncode, 0)


if __name__ == "__main__":
    main()
