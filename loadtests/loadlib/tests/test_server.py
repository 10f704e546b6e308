"""loadlib.server and loadlib.procs on a real process: a small HTTP server spawned
pinned to one CPU, polled until ready, sampled through /proc, stopped by its pid.

    /usr/bin/python3 loadtests/loadlib/tests/test_server.py
"""
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from loadlib import httpc, procs, server  # noqa: E402
from loadlib.sampler import RssSampler  # noqa: E402


def free_port():
    ports = server.pick_ports(range(18260, 18300), 0)
    if ports is None:
        raise unittest.SkipTest("no free port in 18260-18299")
    return ports[0]


class Spawning(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loadlib-server-")
        with open(os.path.join(self.dir, "index.html"), "w") as f:
            f.write("ready\n")
        self.log = os.path.join(self.dir, "server.log")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def spawn(self, port, **kw):
        argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
        return server.Spawned(argv, dict(os.environ), self.dir, self.log, **kw)

    def check_server(self, tied):
        port = free_port()
        cpus = {0} if procs.can_pin((0,)) else None
        t0 = time.monotonic()
        proc = self.spawn(port, cpus=cpus, tied=tied)
        try:
            took = server.wait_ready(proc, port, "/", t0, limit_s=20, poll_s=0.01)
            self.assertGreater(took, 0)
            self.assertFalse(server.port_free(port))
            status, headers, body = httpc.request(port, "/")
            self.assertEqual((status, body), (200, b"ready\n"))
            self.assertEqual(headers["content-length"], "6")
            if cpus is not None:
                self.assertEqual(os.sched_getaffinity(proc.pid), cpus)
            st = procs.proc_stat(proc.pid)
            self.assertEqual(st["ppid"], os.getpid())
            self.assertGreater(st["rss_bytes"], 0)
            self.assertGreaterEqual(procs.tree_cpu_seconds(proc.pid), st["cpu_s"])
            sampler = RssSampler(proc.pid, period=0.01)
            sampler.start()
            time.sleep(0.05)
            self.assertGreater(sampler.finish(), 1024 * 1024)
        finally:
            code, seconds, killed = proc.stop(grace_s=10)
        self.assertFalse(killed)
        self.assertEqual(code, -15)                  # http.server dies of the SIGTERM
        self.assertIsNone(procs.proc_stat(proc.pid))
        self.assertTrue(server.port_free(port))

    def test_posix_spawned_server(self):
        self.check_server(tied=False)

    def test_tied_server(self):
        self.check_server(tied=True)

    def test_a_server_that_exits_is_not_ready(self):
        proc = server.Spawned([sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ), self.dir, self.log)
        with self.assertRaisesRegex(server.NotReady, "exited with status 3"):
            server.wait_ready(proc, free_port(), "/", time.monotonic(), limit_s=20)

    def test_a_silent_server_times_out(self):
        proc = server.Spawned([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), self.dir,
                              self.log)
        try:
            with self.assertRaisesRegex(server.NotReady, "no 200 from / within"):
                server.wait_ready(proc, free_port(), "/", time.monotonic(), limit_s=0.3, poll_s=0.02)
        finally:
            proc.stop()

    def test_taskset_prefix(self):
        self.assertEqual(procs.taskset(["x", "-y"], 1), ["taskset", "-c", "1", "x", "-y"])
        self.assertEqual(procs.taskset(["x"], {2, 0}), ["taskset", "-c", "0,2", "x"])
        self.assertEqual(procs.taskset(["x"], None), ["x"])


class Targets(unittest.TestCase):
    def test_commands(self):
        self.assertEqual(server.target_command("notesd", "/x/notesd"), (["/x/notesd"], server.REPO))
        argv, cwd = server.target_command("deno", "/x/notesd")
        self.assertEqual((argv[1:], cwd), (["run", "-A", "server.js"], server.PEER_DIR))
        self.assertEqual(os.path.basename(argv[0]), "deno")
        argv, _ = server.target_command("node", "/x/notesd")
        self.assertEqual(argv[1:], ["server.js"])

    def test_environments(self):
        base = {"PATH": "/usr/bin", "KEEP": "1"}
        env = server.target_env("notesd", base, "postgresql://u@127.0.0.1/n", 18100, 19100, pool_max=7)
        self.assertEqual({k: env[k] for k in ("DB_URL", "HOST", "PORT", "METRICS_HOST", "METRICS_PORT",
                                              "POOL_MAX", "SERVER_TIMING", "KEEP", "PATH")},
                         {"DB_URL": "postgresql://u@127.0.0.1/n", "HOST": "127.0.0.1", "PORT": "18100",
                          "METRICS_HOST": "127.0.0.1", "METRICS_PORT": "19100", "POOL_MAX": "7",
                          "SERVER_TIMING": "0", "KEEP": "1", "PATH": "/usr/bin"})
        self.assertEqual(env["STATIC_DIR"], server.STATIC_DIR)
        self.assertEqual(base, {"PATH": "/usr/bin", "KEEP": "1"})       # not modified
        deno = server.target_env("deno", base, "u", 1, 2)
        self.assertEqual(deno["DENO_NO_UPDATE_CHECK"], "1")
        self.assertTrue(deno["PATH"].startswith(server.RUNTIME_BIN + os.pathsep))
        self.assertNotIn("SERVER_TIMING", deno)


class Machine(unittest.TestCase):
    def test_cores(self):
        cores = procs.core_times()
        self.assertEqual(len(cores), len(procs.cpu_times()))
        for processes, interrupts, steal, total in cores:
            self.assertLessEqual(processes + interrupts + steal, total)

    def test_machine_info(self):
        info = procs.machine_info()
        self.assertEqual(info["cores"], os.cpu_count())
        self.assertGreater(info["memory_mib"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
