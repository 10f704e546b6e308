"""loadlib.server and loadlib.procs: free ports found and taken ones refused; on a real
process, a small HTTP server spawned
pinned to one CPU, polled until ready, sampled through /proc, stopped by its pid;
and ProcessUnderTest, the wrapper every command starts its servers with, both ways
it pins (the spawn's CPU mask, or a taskset prefix in the recorded command line).

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_server
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest


from loadlib import httpc, paths, procs, server
from loadlib.sampler import RssSampler


def free_port():
    ports = server.pick_ports(range(18260, 18300), 0)
    if ports is None:
        raise unittest.SkipTest("no free port in 18260-18299")
    return ports[0]


class Ports(unittest.TestCase):
    def test_free_port_is_free_and_bindable(self):
        port = server.free_port()
        self.assertGreater(port, 0)
        self.assertTrue(server.port_free(port))
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
            s.listen()
            self.assertFalse(server.port_free(port))          # taken while we listen on it
            self.assertNotEqual(server.free_port(), port)    # and not handed out again

    def test_pick_ports_skips_a_taken_pair(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            taken = s.getsockname()[1]
            self.assertIsNone(server.pick_ports([taken], 0))
            self.assertIsNone(server.pick_ports([taken - 1], 1))


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


class UnderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loadlib-put-")
        with open(os.path.join(self.dir, "index.html"), "w") as f:
            f.write("ready\n")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def http_server(self, port, **kw):
        argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
        return server.ProcessUnderTest(argv, dict(os.environ), self.dir, os.path.join(self.dir, "put.log"),
                                       port=port, ready_path="/", **kw)

    def check(self, taskset, tied):
        port = free_port()
        cpu = 0 if procs.can_pin((0,)) else None
        put = self.http_server(port, cpus=cpu, taskset=taskset, tied=tied)
        self.assertEqual(put.stop(), (None, 0.0, False))                 # before start(): nothing to stop
        self.assertEqual(put.argv[:3] == ["taskset", "-c", "0"], taskset and cpu is not None)
        try:
            took = put.start_ready(limit_s=20, poll_s=0.01)  # NotReady past 20 s
            self.assertGreater(took, 0)
            self.assertIsNone(put.poll())
            self.assertEqual(httpc.request(port, "/")[2], b"ready\n")
            if cpu is not None:                  # taskset execs the server: the pid is its own
                self.assertEqual(os.sched_getaffinity(put.pid), {cpu})
            with open(f"/proc/{put.pid}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
            self.assertNotIn(b"taskset", cmdline[0])
            self.assertIn(b"http.server", cmdline)
        finally:
            code, seconds, killed = put.stop(grace_s=10)
        self.assertEqual((code, killed), (-15, False))
        self.assertIsNone(procs.proc_stat(put.pid))
        self.assertEqual(put.stop()[0], -15)                             # stopping again changes nothing
        self.assertIn("GET / ", put.log_text())                         # http.server logs each request

    def test_pinned_by_the_spawn(self):
        self.check(taskset=False, tied=False)

    def test_pinned_by_taskset_and_tied(self):
        self.check(taskset=True, tied=True)

    def test_a_server_that_never_answers_is_stopped_and_its_temporary_log_removed(self):
        put = server.ProcessUnderTest([sys.executable, "-c", "import sys, time; print('starting'); "
                                       "sys.stdout.flush(); time.sleep(30)"], dict(os.environ), self.dir,
                                      os.path.join(self.dir, "silent.log"), port=free_port(),
                                      temporary_log=True, name="silent")
        self.assertEqual(put.name, "silent")
        with self.assertRaisesRegex(server.NotReady, "no 200 from /status within"):
            put.start_ready(limit_s=0.5, poll_s=0.02)
        self.assertIsNotNone(put.poll())                                 # start_ready() stopped it
        self.assertFalse(os.path.exists(os.path.join(self.dir, "silent.log")))

    def test_a_missing_program(self):
        put = server.ProcessUnderTest([os.path.join(self.dir, "nope")], {}, self.dir,
                                      os.path.join(self.dir, "nope.log"))
        with self.assertRaises(OSError):
            put.start()
        self.assertIsNone(put.pid)
        self.assertEqual(put.stop(), (None, 0.0, False))


class Targets(unittest.TestCase):
    def test_commands(self):
        self.assertEqual(server.target_command("notesd", "/x/notesd"), (["/x/notesd"], paths.REPO))
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


class Family(unittest.TestCase):
    def test_children_and_descendants(self):
        # a shell with a sleep of its own: one child here, one grandchild below it
        sh = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
        grandchildren = []
        try:
            deadline = time.monotonic() + 5
            while not procs.children(sh.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            grandchildren = procs.children(sh.pid)
            self.assertEqual(len(grandchildren), 1)
            self.assertIn(sh.pid, procs.children(os.getpid()))
            self.assertEqual(sorted(procs.children(os.getpid())),
                             sorted(procs.children_map().get(os.getpid(), [])))
            self.assertEqual(sorted(procs.descendants(os.getpid())),
                             sorted([sh.pid] + grandchildren))
            self.assertEqual(sorted(procs.descendants(os.getpid())),
                             sorted(procs.descendants(os.getpid(), procs.children_map())))
        finally:
            for pid in grandchildren:
                server.stop_pid(pid, 9)
            sh.kill()
            sh.wait()
        self.assertEqual(procs.children(sh.pid), [])          # gone: no children

    def test_memory(self):
        mem = procs.memory(os.getpid())
        self.assertGreater(mem["rss"], 0)
        # private pages are part of the resident ones, and so is each process's share
        self.assertLessEqual(mem["uss"], mem["pss"])
        self.assertLessEqual(mem["pss"], mem["rss"])
        self.assertGreater(mem["anon"], 0)
        self.assertIsNone(procs.memory(2 ** 22 + 12345))       # no such process


if __name__ == "__main__":
    unittest.main(verbosity=2)
