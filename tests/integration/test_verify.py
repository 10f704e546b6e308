#!/usr/bin/env python3
"""loadtests/verify, checked against targets whose faults are known: it passes
against the real notesd (Server-Timing on and off) and against the correct
variant of loadtests/verification/broken_target.py, and fails, naming the
check, against each deliberate defect of the broken target.

Standalone: starts its own PostgreSQL with sql/localdb.sh (data in a temporary
directory, a free port) and needs wrk and the built notesd.

    NOTESD_REPO=/work/main /usr/bin/python3 tests/integration/test_verify.py
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from notes_testlib import BIN, REPO, Notesd, free_port_in, main, poll

VERIFY = os.path.join(REPO, "loadtests", "verify")
BROKEN = os.path.join(REPO, "loadtests", "verification", "broken_target.py")
LOCALDB = os.path.join(REPO, "sql", "localdb.sh")
LOAD_SECONDS = "1"

# defect -> the check that must fail (other checks may fail with it)
DEFECTS = {
    "id-number": "bytes.get_note",
    "no-ms": "bytes.get_note",
    "order": "bytes.list_by_tag",
    "no-write": "notes.put",
    "cache": "work.db_calls",
}


def figure(text):
    print(f"  figure: {text}", flush=True)


def answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


class LocalDb:
    """A private PostgreSQL from sql/localdb.sh, seeded with the 200,000 rows."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="notesd-verify-")
        os.chmod(self.dir, 0o755)  # the postgres user must reach it when we are root
        # no NOTESD_PGPORT: localdb.sh takes the first free port from 54329 on by itself,
        # and moves on when one is taken between its check and PostgreSQL's bind
        self.env = {k: v for k, v in os.environ.items() if k != "NOTESD_PGPORT"}
        self.env["NOTESD_PGDATA"] = os.path.join(self.dir, "pgdata")
        proc = subprocess.run([LOCALDB, "start"], env=self.env, capture_output=True, text=True,
                              timeout=180)
        if proc.returncode != 0:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise AssertionError(f"sql/localdb.sh start failed: {proc.stderr}")
        self.url = subprocess.run([LOCALDB, "url"], env=self.env, capture_output=True, text=True,
                                  check=True).stdout.strip()

    def stop(self):
        subprocess.run([LOCALDB, "stop"], env=self.env, capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


class VerifyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("wrk"):
            raise unittest.SkipTest("wrk is not installed (apt-get install wrk)")
        if not os.access(BIN, os.X_OK):
            raise unittest.SkipTest(f"{BIN} is not built (server/build.sh)")
        cls.pg = LocalDb()
        cls.out = tempfile.mkdtemp(prefix="notesd-verify-out-")

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()
        shutil.rmtree(cls.out, ignore_errors=True)

    def verify(self, port, *extra):
        """Runs verify; returns (exit status, stdout, {check name: result})."""
        out = os.path.join(self.out, f"verify-{port}-{time.monotonic_ns()}.json")
        proc = subprocess.run([sys.executable, VERIFY, "--base-url", f"http://127.0.0.1:{port}",
                               "--db-url", self.pg.url, "--load-seconds", LOAD_SECONDS,
                               "--json", out, *extra],
                              capture_output=True, text=True, timeout=120)
        checks = {}
        if os.path.exists(out):
            with open(out) as f:
                checks = {c["name"]: c for c in json.load(f)["checks"]}
        return proc.returncode, proc.stdout + proc.stderr, checks

    def assert_all_pass(self, rc, text, checks):
        failed = [n for n, c in checks.items() if c["status"] == "FAIL"]
        self.assertEqual((rc, failed), (0, []), text)
        self.assertIn("work.db_calls", checks, text)
        figure(checks["work.db_calls"]["detail"])

    def broken(self, defect):
        port = free_port_in(18250, 18299)
        proc = subprocess.Popen([sys.executable, BROKEN, "--db-url", self.pg.url,
                                 "--port", str(port), "--defect", defect],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.stop, proc)

        def up():
            if proc.poll() is not None:
                raise AssertionError(f"broken_target exited: {proc.stderr.read()}")
            return answers(port)
        poll(up, timeout=15, what="broken_target to answer /status")
        return port, proc

    @staticmethod
    def stop(proc):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr:
            proc.stderr.close()

    def notesd(self, server_timing):
        port, metrics = free_port_in(18250, 18299), free_port_in(19250, 19299)
        server = Notesd(self.pg.url, env={"PORT": str(port), "METRICS_PORT": str(metrics),
                                          "SERVER_TIMING": server_timing}, port=port)
        self.addCleanup(server.stop)
        return port, metrics

    def test_passes_against_notesd(self):
        port, metrics = self.notesd("1")
        rc, text, checks = self.verify(port, "--metrics-url", f"http://127.0.0.1:{metrics}/metrics")
        self.assert_all_pass(rc, text, checks)
        self.assertEqual(checks["work.metrics"]["status"], "PASS", text)

    def test_passes_against_notesd_without_server_timing(self):
        port, metrics = self.notesd("0")
        rc, text, checks = self.verify(port, "--metrics-url", f"http://127.0.0.1:{metrics}/metrics")
        self.assert_all_pass(rc, text, checks)

    def test_passes_against_the_correct_broken_target(self):
        rc, text, checks = self.verify(self.broken("none")[0])
        self.assert_all_pass(rc, text, checks)
        self.assertEqual(checks["work.metrics"]["status"], "SKIP", text)

    def test_each_defect_fails_its_check(self):
        for defect, check in DEFECTS.items():
            with self.subTest(defect=defect):
                port, proc = self.broken(defect)
                # the cache only shows with repeated ids: draw them from 1..100
                extra = ["--max-id", "100"] if defect == "cache" else []
                rc, text, checks = self.verify(port, *extra)
                self.stop(proc)
                self.assertEqual(rc, 1, text)
                self.assertIn(check, checks, text)
                self.assertEqual(checks[check]["status"], "FAIL", text)
                line = next((l for l in text.splitlines() if l.startswith(check + " ")), "")
                self.assertRegex(line, rf"^{check}\s+FAIL\s+\S", text)
                figure(f"--defect {defect}: {line[:150]}")


if __name__ == "__main__":
    main()
