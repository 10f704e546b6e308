"""The wrk adapter and the tool runner: parsing the WRK_JSON lines of the committed
fixtures (loadtests/tests/fixtures/), and real wrk runs against a small HTTP
server on loopback, with the tool's own CPU time measured.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_wrk
"""
import http.server
import os
import shutil
import tempfile
import threading
import unittest


from loadlib import netcheck, procs
from loadlib.tools import run, wrk
from loadlib.tools.base import RunSpec, ToolResult
from tests import FIXTURES

FIX = FIXTURES


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


class Fixtures(unittest.TestCase):
    def test_notes_lua_line_with_breakdown(self):
        data = wrk.json_line(fixture("native-read-wrk.txt"))
        self.assertEqual(data["requests"], 24726)
        self.assertEqual(data["sent"], {"GET /notes/:id": 17383, "GET /notes?tag=": 7351})
        res = wrk.parse(fixture("native-read-wrk.txt"), "", "/tmp", RunSpec(url="http://127.0.0.1:1/"))
        self.assertIsInstance(res, ToolResult)
        self.assertEqual((res.requests, res.rps, res.duration_s), (24726, 8210.9, 3.011))
        self.assertEqual((res.latency.p50, res.latency.p99, res.latency.max), (0.747, 5.961, 10.732))
        self.assertIsNone(res.latency.p90)           # notes.lua prints p50, p95 and p99
        self.assertEqual(res.errors.total(), 0)
        self.assertIsNone(res.cpu_s)                 # only the runner knows it

    def test_every_committed_wrk_output_parses(self):
        for name in ("native-read-wrk.txt", "native-read-wrk-mismatch.txt", "node-read-wrk.txt",
                     "deno-write-wrk.txt"):
            res = wrk.from_json(wrk.json_line(fixture(name)))
            self.assertGreater(res.requests, 0, name)
            self.assertGreater(res.rps, 0, name)

    def test_latency_lua_line(self):
        res = wrk.parse("", fixture("latency-wrk.txt"), "/tmp", RunSpec(url="http://127.0.0.1:1/"))
        self.assertEqual(res.requests, 1546)
        self.assertEqual((res.latency.mean, res.latency.p50, res.latency.p90, res.latency.p99),
                         (3.526, 1.874, 7.243, 32.492))
        self.assertEqual(res.errors.total(), 0)

    def test_errors_by_kind(self):
        line = ('WRK_JSON {"requests":10,"duration_s":1.0,"rps":10.0,"p50_ms":1,"p99_ms":2,"max_ms":3,'
                '"connect_errors":1,"read_errors":2,"write_errors":3,"timeouts":4,"status_errors":5}')
        e = wrk.parse(line, "", "/tmp", RunSpec(url="http://127.0.0.1:1/")).errors
        self.assertEqual((e.non2xx, e.connect, e.reset, e.timeout, e.other), (5, 1, 5, 4, 0))
        self.assertEqual(e.total(), 15)

    def test_missing_or_broken_line(self):
        with self.assertRaises(wrk.OutputError):
            wrk.parse("Running 1s test\n", "", "/tmp", RunSpec(url="http://127.0.0.1:1/"))
        self.assertIsNone(wrk.json_line("WRK_JSON {not json"))
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write("no summary here\n")
            f.flush()
            with self.assertRaisesRegex(wrk.OutputError, "no WRK_JSON line"):
                wrk.read_json_line(f.name)

    def test_timeouts_from_the_summary_text(self):
        self.assertEqual(wrk.timeouts("socket errors 3 (connect 0, read 1, write 0, timeout 2)\n"), 2)
        self.assertEqual(wrk.timeouts(fixture("native-read-wrk.txt")), 0)

    def test_command(self):
        spec = RunSpec(url="http://127.0.0.1:8080/json", connections=50, duration_s=3, threads=2, timeout_s=5)
        argv = wrk.command(spec, "/tmp")
        self.assertEqual(argv[1:], ["-t2", "-c50", "-d3s", "--timeout", "5s", "--latency", "-s", wrk.LATENCY_LUA,
                                    "http://127.0.0.1:8080/json"])
        self.assertTrue(os.path.exists(wrk.LATENCY_LUA))
        closing = wrk.command(RunSpec(url="http://127.0.0.1:8080/", keepalive=False), "/tmp")
        self.assertEqual(closing[1:3], ["-H", "Connection: close"])


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        status = 200 if self.path == "/ok" else 404
        body = b"ok\n" if status == 200 else b"no\n"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@unittest.skipUnless(wrk.available(), "wrk is not installed")
class Runner(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.port = cls.httpd.server_address[1]
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        cls.httpd.server_close()

    def spec(self, path, seconds=1):
        return RunSpec(url=f"http://127.0.0.1:{self.port}{path}", connections=2, duration_s=seconds, timeout_s=5)

    def test_a_real_run_with_the_tools_cpu(self):
        cpu = 0 if procs.can_pin((0,)) else None
        res = run.run_tool(wrk, self.spec("/ok"), cpu=cpu)
        self.assertEqual(res.tool, "wrk")
        self.assertGreater(res.requests, 0)
        self.assertEqual(res.errors.total(), 0)
        self.assertIsNotNone(res.latency.p50)
        # wrk's own user + system time over a one-second run: more than nothing, less than
        # its wall time on every core it could use
        self.assertGreater(res.cpu_s, 0.0)
        self.assertLess(res.cpu_s, 1.5 * (os.cpu_count() or 1) + 0.5)

    def test_error_answers_are_counted(self):
        res = run.run_tool(wrk, self.spec("/missing"))
        self.assertGreater(res.requests, 0)
        self.assertEqual(res.errors.non2xx, res.requests)

    def test_only_loopback_is_loaded(self):
        with self.assertRaises(netcheck.NotLoopback):
            run.run_tool(wrk, RunSpec(url="http://192.0.2.1:80/"))

    def test_run_measured_reports_the_childs_cpu(self):
        res = run.run_measured(["/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo done"])
        self.assertEqual(res["rc"], 0)
        self.assertEqual(res["output"].strip(), "done")
        self.assertGreater(res["cpu_s"], 0.0)


class Adapters(unittest.TestCase):
    def test_wrk_is_listed(self):
        names = {name: (mod, why) for name, mod, why in run.adapters()}
        self.assertIn("wrk", names)
        mod, why = names["wrk"]
        if wrk.available():
            self.assertIs(mod, wrk)
            self.assertEqual(why, "")

    def test_a_missing_tool_is_not_installed_with_its_hint(self):
        old = os.environ.get("PATH", "")
        os.environ["PATH"] = tempfile.mkdtemp(prefix="empty-path-")
        try:
            names = {name: (mod, why) for name, mod, why in run.adapters()}
        finally:
            shutil.rmtree(os.environ["PATH"])
            os.environ["PATH"] = old
        self.assertEqual(names["wrk"], (None, "not installed: loadtests/tools/install.sh --all "
                                              "(every tool at once; this one alone: apt-get "
                                              "install -y wrk)"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
