#!/usr/bin/env python3
"""notesd as a system service: --version, systemd's readiness protocol and the
descriptor budget of the packaged unit.

- `--version` names the project's version (CMakeLists.txt) and the libh2o and
  libpq it runs with.
- With NOTIFY_SOCKET set, as systemd sets it for a Type=notify unit, notesd
  sends READY=1 once its listeners are bound (a connection made the moment the
  datagram arrives is answered), with a STATUS= line naming the port, and
  STOPPING=1 when SIGTERM begins its shutdown; at a path and at an abstract
  address. A NOTIFY_SOCKET nobody listens on costs a warning, not the service.
- packaging/notesd.service.in's LimitNOFILE with the settings of
  packaging/notesd.default.in gives the MAX_CONNECTIONS that the unit's comment
  and docs/install.md state.
"""
import os
import re
import resource
import select
import signal
import socket
import subprocess
import tempfile
import unittest

from notes_testlib import BIN, REPO, Notesd, create_database, main, request

PACKAGING = os.path.join(REPO, "packaging")


def project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(notesd VERSION ([0-9.]+)", f.read()).group(1)


def notify_socket(tmp, abstract):
    """A datagram socket bound as systemd binds its own, and the NOTIFY_SOCKET
    value that names it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if abstract:
        name = f"@notesd-test-notify-{os.getpid()}"
        sock.bind("\0" + name[1:])
    else:
        name = os.path.join(tmp, "notify")
        sock.bind(name)
    return sock, name


def receive(sock, timeout=15.0):
    """The next datagram, decoded; fails after `timeout` seconds without one."""
    if not select.select([sock], [], [], timeout)[0]:
        raise AssertionError(f"no datagram on the notify socket within {timeout:.0f} s")
    return sock.recv(4096).decode()


class ServiceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("service")

    def test_version_names_the_project_and_its_libraries(self):
        res = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=10,
                             env={**os.environ, "ASAN_OPTIONS": "detect_leaks=0"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertRegex(res.stdout,
                         rf"^notesd {re.escape(project_version())} \(libh2o 2\.2\.5, libpq 1[5-9]\.\d+\)\n$")
        help_text = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=10,
                                   env={**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}).stdout
        self.assertRegex(help_text, r"\n  --version +print the version")

    def ready_then_stopping(self, abstract):
        with tempfile.TemporaryDirectory() as tmp:
            sock, name = notify_socket(tmp, abstract)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("PORT", "HOST", "METRICS_PORT", "POOL_MAX")}
            env.update({"DB_URL": self.db_url, "PORT": "0", "HOST": "127.0.0.1",
                        "METRICS_PORT": "0", "NOTIFY_SOCKET": name,
                        "ASAN_OPTIONS": "detect_leaks=0"})
            with open(os.path.join(tmp, "log"), "w+") as log:
                proc = subprocess.Popen([BIN], env=env, stdout=log, stderr=subprocess.STDOUT)
                try:
                    ready = receive(sock)
                    # Nothing but the datagram says where it listens: the port is in STATUS.
                    m = re.fullmatch(r"READY=1\nSTATUS=API on port (\d+), 1 loop\(s\)", ready)
                    self.assertIsNotNone(m, ready)
                    self.assertEqual(request(int(m.group(1)), "GET", "/status")[0], 200)
                    proc.send_signal(signal.SIGTERM)
                    self.assertEqual(receive(sock), "STOPPING=1")
                    self.assertEqual(proc.wait(30), 0)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
                    sock.close()
                log.seek(0)
                self.assertNotIn("cannot notify", log.read())

    def test_ready_when_listening_and_stopping_on_sigterm_at_a_path(self):
        self.ready_then_stopping(abstract=False)

    def test_ready_when_listening_and_stopping_on_sigterm_at_an_abstract_address(self):
        self.ready_then_stopping(abstract=True)

    def test_a_notify_socket_nobody_reads_costs_a_warning_not_the_service(self):
        server = Notesd(self.db_url, env={"NOTIFY_SOCKET": f"@notesd-test-nobody-{os.getpid()}"})
        try:
            self.assertEqual(request(server.port, "GET", "/status")[0], 200)
        finally:
            self.assertEqual(server.stop(), 0)
        self.assertIn("cannot notify systemd at NOTIFY_SOCKET=@notesd-test-nobody-", server.output)
        self.assertIn("Connection refused", server.output)

    def test_the_units_descriptor_limit_gives_the_documented_max_connections(self):
        with open(os.path.join(PACKAGING, "notesd.service.in")) as f:
            unit = f.read()
        limit = int(re.search(r"^LimitNOFILE=(\d+)$", unit, re.M).group(1))
        stated = int(re.search(rf"{limit} - 2 x POOL_MAX - 7 x THREADS - 31, (\d+) with the defaults",
                               unit).group(1))
        with open(os.path.join(REPO, "docs", "install.md")) as f:
            self.assertIn(f"`MAX_CONNECTIONS` is {stated:,}", f.read())
        # The settings file's assignments (the commented ones are the defaults).
        settings = {}
        with open(os.path.join(PACKAGING, "notesd.default.in")) as f:
            for line in f:
                m = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
                if m:
                    settings[m.group(1)] = m.group(2).replace("@DATADIR@", "/usr/share/notesd")
        self.assertNotIn("POOL_MAX", settings)
        self.assertNotIn("THREADS", settings)
        # Raising a hard limit takes CAP_SYS_RESOURCE, which a test machine may not
        # grant: notesd runs under the unit's limit or the highest one allowed here,
        # and what it keeps back from that limit must be what the comment subtracts.
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        run_limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        # Ports as the tests choose them; the metrics port stays on, as in the unit.
        server = Notesd(self.db_url, env={**settings, "LOG_LEVEL": "info"},
                        wrapper=["prlimit", f"--nofile={run_limit}:{run_limit}"])
        try:
            self.assertEqual(request(server.port, "GET", "/status")[0], 200)
        finally:
            self.assertEqual(server.stop(), 0)
        m = re.search(r"max connections (\d+)", server.output)
        kept_back = run_limit - int(m.group(1))
        print(f"under LimitNOFILE={run_limit}: max connections {m.group(1)}, {kept_back} kept back")
        self.assertEqual(limit - kept_back, stated, server.output)

if __name__ == "__main__":
    main()
