#!/usr/bin/env python3
"""The HTTP edge: admission at MAX_CONNECTIONS and when descriptors run out,
ports the kernel picks, prompt exits with work in flight (one loop and three),
clients that leave before their answer, and /primes's default limit. Each test
prints the figures it measured."""
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import tempfile
import threading
import time
import unittest

from notes_testlib import (SANITIZED, Notesd, create_database, db_connect, main, poll, proc_stat,
                           request, slack)
from test_edges import body_of
from test_fixture import make_certificate
from test_metrics import parse, value

# The fd limit the admission tests run under: small enough that a hundred
# sockets exhaust it, large enough for the process's own descriptors.
NOFILE = 64


def figure(text):
    print(f"  figure: {text}", flush=True)


def open_connections(port, n):
    """n connected sockets; past the server's limit they wait in the backlog."""
    return [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(n)]


def close_all(socks):
    for s in socks:
        s.close()


def cpu_seconds_over(pid, seconds):
    before = proc_stat(pid)[0]
    time.sleep(seconds)
    return proc_stat(pid)[0] - before


def answer_within(sock, seconds):
    """The first bytes of an answer to GET /status on sock, or None after `seconds`."""
    sock.settimeout(seconds)
    try:
        return sock.recv(64)
    except socket.timeout:
        return None


def listening_sockets(pid, port):
    """How many listening TCP sockets of process `pid` are bound to `port`."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if (int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A"
                        and fields[9] in inodes):
                    count += 1
    return count


def reset(sock):
    """Closes with a TCP reset instead of a FIN (SO_LINGER 0)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class AdmissionTest(unittest.TestCase):
    """notesd under `prlimit --nofile=64:64` with a hundred clients."""

    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("edge_admission")

    def start(self, env):
        return Notesd(self.db_url, env={"POOL_MAX": "2", **env},
                      wrapper=("prlimit", f"--nofile={NOFILE}:{NOFILE}"))

    def test_at_max_connections_the_loop_sleeps_metrics_answer_and_the_backlog_is_served(self):
        server = self.start({})
        socks = []
        try:
            m = parse(server.metrics())
            limit = int(value(m, "notes_http_connections_max"))
            # The default: RLIMIT_NOFILE - 2 per database connection - 7 per loop - 31.
            self.assertEqual(limit, NOFILE - 2 * 2 - 7 - 31)
            socks = open_connections(server.port, 100)
            poll(lambda: value(parse(server.metrics()), "notes_http_connections") >= limit,
                 what="the API port full")
            cpu = cpu_seconds_over(server.proc.pid, 1.0)
            m = parse(server.metrics())
            figure(f"{limit} connections open, {len(socks) - limit} in the backlog: "
                   f"{cpu:.3f} s of CPU in 1 s")
            self.assertLess(cpu, 0.1, "a full listener must not keep the loop busy")
            self.assertGreaterEqual(
                value(m, "notes_http_accept_paused_total", reason="max_connections"), 1)
            self.assertEqual(value(m, "notes_http_accept_paused_total", reason="fd_exhausted"), 0)
            # The last client waits in the backlog until places free up.
            last = socks.pop()
            last.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIsNone(answer_within(last, 0.5))
            close_all(socks)
            socks = [last]
            self.assertTrue(answer_within(last, 10).startswith(b"HTTP/1.1 200 "))
            self.assertEqual(request(server.port, "GET", "/status")[0], 200)
        finally:
            close_all(socks)
            self.assertEqual(server.stop(), 0, server.output)

    def test_tls_connections_count_toward_max_connections(self):
        """The TLS listener draws on MAX_CONNECTIONS with the
        API one: two plain and two TLS connections fill a limit of 4, a client
        on either port then waits in the backlog, and each close lets one in."""
        tmp = tempfile.mkdtemp(prefix="notesd-tls-")
        cert, key = make_certificate(tmp)
        server = Notesd(self.db_url, args=["--tls-port", "auto", "--tls-cert", cert,
                                           "--tls-key", key],
                        env={"POOL_MAX": "2", "MAX_CONNECTIONS": "4"})
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE

        def accepted():
            return value(parse(server.metrics()), "notes_http_connections_accepted_total")

        socks = []
        try:
            self.assertIsNotNone(server.tls_port)
            before = accepted()
            socks = open_connections(server.port, 2)
            for _ in range(2):
                raw = socket.create_connection(("127.0.0.1", server.tls_port), timeout=10)
                socks.append(ctx.wrap_socket(raw))  # the handshake needs the accept
            poll(lambda: accepted() == before + 4, what="four connections accepted")
            waiting_tls = socket.create_connection(("127.0.0.1", server.tls_port), timeout=10)
            waiting_plain = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            socks += [waiting_tls, waiting_plain]
            waiting_plain.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIsNone(answer_within(waiting_plain, 0.5))
            self.assertEqual(accepted(), before + 4, "a fifth connection was accepted")
            m = parse(server.metrics())
            self.assertEqual(value(m, "notes_http_connections_max"), 4)
            self.assertGreaterEqual(
                value(m, "notes_http_accept_paused_total", reason="max_connections"), 1)
            socks[2].close()  # a TLS one
            socks[0].close()  # a plain one
            poll(lambda: accepted() == before + 6, what="both waiting clients accepted")
            self.assertTrue(answer_within(waiting_plain, 10).startswith(b"HTTP/1.1 200 "))
            figure("MAX_CONNECTIONS=4: 2 plain + 2 TLS open, the next on either port waited")
        finally:
            close_all(socks)
            shutil.rmtree(tmp, ignore_errors=True)
            self.assertEqual(server.stop(), 0, server.output)

    def test_with_a_large_pool_every_client_is_served_and_the_pool_never_starves(self):
        """prlimit --nofile=200, POOL_MAX=60 (120 descriptors when full), and a
        hundred clients whose queries all wait on a locked table, so the pool
        grows as far as the admitted clients need: the default MAX_CONNECTIONS
        leaves room for both, so nobody meets EMFILE, neither accept nor the
        pool, and every client is answered, from the backlog if need be."""
        server = Notesd(self.db_url, env={"POOL_MAX": "60"},
                        wrapper=("prlimit", "--nofile=200:200"))
        locker = db_connect("edge_admission")
        locker.autocommit = False
        statuses, lock = [], threading.Lock()

        def client(n):
            try:
                with socket.create_connection(("127.0.0.1", server.port), timeout=30) as c:
                    c.sendall(b"GET /notes/%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                              % n)
                    data = b""
                    while True:
                        chunk = c.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                status = int(data.split(b" ", 2)[1]) if data else "no answer"
            except OSError as e:
                status = type(e).__name__
            with lock:
                statuses.append(status)
        try:
            limit = int(value(parse(server.metrics()), "notes_http_connections_max"))
            self.assertEqual(limit, 200 - 2 * 60 - 7 - 31)
            locker.cursor().execute("lock table notes in access exclusive mode")
            clients = [threading.Thread(target=client, args=(n,)) for n in range(1, 101)]
            for c in clients:
                c.start()
            poll(lambda: value(parse(server.metrics()), "notes_http_connections") >= limit,
                 what="the API port full")
            time.sleep(0.5)
            m = parse(server.metrics())
            held = (value(m, "notes_db_pool_connections"), proc_stat(server.proc.pid)[2])
            locker.rollback()
            for c in clients:
                c.join(60)
            m = parse(server.metrics())
            figure(f"nofile 200, POOL_MAX 60: MAX_CONNECTIONS {limit}; with the table locked "
                   f"{held[0]:.0f} database connections and {held[1]} descriptors; "
                   f"answers {sorted(set(map(str, statuses)))}, "
                   f"{value(m, 'notes_db_connection_errors_total'):.0f} connection errors")
            self.assertEqual(statuses, [200] * 100)
            self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
            self.assertEqual(value(m, "notes_db_pool_rejected_total"), 0)
            self.assertEqual(value(m, "notes_http_accept_paused_total", reason="fd_exhausted"), 0)
        finally:
            locker.close()
            self.assertEqual(server.stop(), 0, server.output)

    def test_max_connections_is_one_limit_for_every_loop(self):
        """Two loops, MAX_CONNECTIONS=30: the kernel hashes clients onto the two
        listening sockets unevenly, yet all 30 are admitted at once (a share of
        15 per loop would leave some waiting), and the 31st waits whichever loop
        it lands on, until a connection on either loop closes."""
        server = Notesd(self.db_url, env={"POOL_MAX": "2", "THREADS": "2",
                                          "MAX_CONNECTIONS": "30"})
        socks = []
        try:
            self.assertEqual(value(parse(server.metrics()), "notes_http_connections_max"), 30)
            for round_ in range(2):
                socks = open_connections(server.port, 30)
                for s in socks:
                    s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
                late = [s for s in socks if not (answer_within(s, 5) or b"").startswith(
                    b"HTTP/1.1 200 ")]
                self.assertEqual(len(late), 0, f"round {round_}: {len(late)} of 30 not admitted")
                last = socket.create_connection(("127.0.0.1", server.port), timeout=10)
                last.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertIsNone(answer_within(last, 0.5))
                socks.pop(0).close()
                self.assertTrue(answer_within(last, 10).startswith(b"HTTP/1.1 200 "))
                socks.append(last)
                close_all(socks)
                poll(lambda: value(parse(server.metrics()), "notes_http_connections") <= 1,
                     what="every connection closed")
            figure("--threads 2, MAX_CONNECTIONS=30: 30 admitted at once twice, the 31st waited")
        finally:
            close_all(socks)
            self.assertEqual(server.stop(), 0, server.output)

    def test_out_of_descriptors_accepting_pauses_instead_of_spinning(self):
        # MAX_CONNECTIONS above what the fd limit holds: accept fails with EMFILE.
        server = self.start({"MAX_CONNECTIONS": "1000"})
        socks = []
        try:
            socks = open_connections(server.port, 100)
            poll(lambda: proc_stat(server.proc.pid)[2] >= NOFILE - 1, what="descriptors exhausted")
            cpu = cpu_seconds_over(server.proc.pid, 1.0)
            figure(f"out of descriptors with {len(socks)} clients: {cpu:.3f} s of CPU in 1 s")
            self.assertLess(cpu, 0.1, "EMFILE on a level-triggered listener must not spin the loop")
            last = socks.pop()
            last.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
            close_all(socks)
            socks = [last]
            self.assertTrue(answer_within(last, 10).startswith(b"HTTP/1.1 200 "))
            m = parse(server.metrics())
            pauses = value(m, "notes_http_accept_paused_total", reason="fd_exhausted")
            figure(f"{pauses:.0f} pauses of 100 ms")
            self.assertGreaterEqual(pauses, 3)  # about 10 in the second measured
        finally:
            close_all(socks)
            self.assertEqual(server.stop(), 0, server.output)
        # One warning per episode (until an accept succeeds), not one per pause, each naming
        # its port and the connections really open (the metrics port's listener once reported
        # its own, empty budget: "0 connections open" with 60 open).
        warnings = server.output.count("Too many open files")
        self.assertGreaterEqual(warnings, 1)
        self.assertLess(warnings, pauses / 2)
        counts = re.findall(r"accept on the (API|metrics) port: Too many open files; .*\((\d+) API "
                            r"connections open, (\d+) on the metrics port\)", server.output)
        self.assertEqual(len(counts), warnings, server.output)
        for port, api, _ in counts:
            self.assertGreater(int(api), NOFILE / 2, (port, api))


class PortTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("edge_ports")

    def test_port_0_gives_every_loop_the_same_free_port(self):
        server = Notesd(self.db_url, env={"THREADS": "3", "POOL_MAX": "3"})
        try:
            self.assertNotEqual(server.port, 0)
            self.assertNotEqual(server.metrics_port, 0)
            self.assertEqual(listening_sockets(server.proc.pid, server.port), 3)
            self.assertEqual(listening_sockets(server.proc.pid, server.metrics_port), 1)
            self.assertIn("http_requests_in_flight", server.metrics())
        finally:
            self.assertEqual(server.stop(), 0, server.output)

    def test_metrics_port_0_still_turns_the_metrics_port_off(self):
        server = Notesd(self.db_url, env={"METRICS_PORT": "0"})
        try:
            self.assertEqual(server.metrics_port, 0)
            self.assertEqual(listening_sockets(server.proc.pid, server.port), 1)
            self.assertEqual(listening_sockets(server.proc.pid, 9091), 0)
        finally:
            self.assertEqual(server.stop(), 0, server.output)


class ShutdownTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("edge_shutdown")

    def test_sigterm_with_a_delay_in_flight_exits_right_after_it(self):
        server = Notesd(self.db_url)
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        allowance = slack(server.port)
        s.sendall(b"GET /delay/200 HTTP/1.1\r\nHost: x\r\n\r\n")
        poll(lambda: value(parse(server.metrics()), "http_requests_in_flight") == 1,
             what="the delay in flight")
        start = time.monotonic()
        code = server.stop(signal.SIGTERM)
        took = time.monotonic() - start
        answer = s.recv(4096)
        s.close()
        figure(f"SIGTERM with /delay/200 in flight: exit {code} after {took:.3f} s")
        self.assertEqual(code, 0, server.output)
        self.assertTrue(answer.startswith(b"HTTP/1.1 200 "), answer)
        self.assertLess(took, (0.6 if not SANITIZED else 1.0) + allowance)

    def test_three_loops_finish_their_in_flight_work_and_exit_0(self):
        server = Notesd(self.db_url, env={"THREADS": "3", "POOL_MAX": "3"})
        locker = db_connect("edge_shutdown")
        locker.autocommit = False
        locker.cursor().execute("select id from notes where id in (31, 32, 33) for update")
        results = []

        def ask(method, path):
            try:
                body = {"title": "t", "body": "b", "tag": "t"} if method == "PUT" else None
                results.append((path, request(server.port, method, path, body=body)[0]))
            except OSError as e:
                results.append((path, repr(e)))

        # 24 delays: SO_REUSEPORT leaves a loop without one with odds of 3 * (2/3)^24;
        # and three PUTs that wait on locked rows, holding database work in flight.
        # Delays of 2 s, so that all are in flight at once however slowly the threads start.
        work = [("GET", "/delay/2000")] * 24 + [("PUT", f"/notes/{i}") for i in (31, 32, 33)]
        threads = [threading.Thread(target=ask, args=w) for w in work]
        for t in threads:
            t.start()
        poll(lambda: value(parse(server.metrics()), "http_requests_in_flight") == len(work),
             what="every request in flight")
        start = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)
        locker.rollback()
        locker.close()
        server.proc.wait(10)  # exits by itself once the work is done
        took = time.monotonic() - start
        code = server.stop()
        for t in threads:
            t.join(10)
        figure(f"--threads 3, {len(work)} requests in flight: exit {code} after {took:.3f} s")
        self.assertEqual(code, 0, server.output)
        self.assertEqual(sorted(map(str, results)), sorted(str((p, 200)) for _, p in work))


class ClientGoneTest(unittest.TestCase):
    """A client that leaves while its request waits is recorded with status 0."""

    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("edge_gone")
        cls.server = Notesd(cls.db_url, env={"POOL_MAX": "2"})

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.output

    def count(self, method, path, status):
        return value(parse(self.server.metrics()), "http_requests_total", method=method, path=path,
                     status_code=status)

    def test_a_client_that_resets_or_closes_during_a_delay_is_recorded_as_0(self):
        for leave in (reset, socket.socket.close):
            with self.subTest(leave=leave.__name__):
                zero = self.count("GET", "/delay/:ms", "0")
                ok = self.count("GET", "/delay/:ms", "200")
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
                s.sendall(b"GET /delay/300 HTTP/1.1\r\nHost: x\r\n\r\n")
                leave(s)
                poll(lambda: self.count("GET", "/delay/:ms", "0") == zero + 1,
                     what="the request recorded with status 0")
                self.assertEqual(self.count("GET", "/delay/:ms", "200"), ok)

    def test_a_client_that_resets_while_its_query_waits_is_recorded_as_0(self):
        locker = db_connect("edge_gone")
        locker.autocommit = False
        locker.cursor().execute("select id from notes where id = 23 for update")
        try:
            zero = self.count("PUT", "/notes/:id", "0")
            body = b'{"title":"t","body":"b","tag":"t"}'
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
            s.sendall(b"PUT /notes/23 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            poll(lambda: value(parse(self.server.metrics()), "notes_db_pool_connections") >= 1 and
                 value(parse(self.server.metrics()), "http_requests_in_flight") == 1,
                 what="the PUT waiting on the lock")
            reset(s)
        finally:
            locker.rollback()
            locker.close()
        poll(lambda: self.count("PUT", "/notes/:id", "0") == zero + 1,
             what="the PUT recorded with status 0")
        self.assertEqual(self.count("PUT", "/notes/:id", "200"), 0)
        # The connection is gone, the server is not.
        self.assertEqual(request(self.server.port, "GET", "/status")[0], 200)


def half_closed_exchange(port, data, linger=None, in_flight=None, timeout=10):
    """Sends `data`, shuts down the sending side (as `nc -N` does), and reads
    until the server closes; returns what was read. With `linger` set to "close"
    or "reset", the socket is then closed (FIN already sent: the answer is reset
    by the kernel when it comes) or reset, once in_flight() says the request is
    being handled, and nothing is read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    if linger is not None:
        poll(in_flight, what="the request in flight")
    if linger == "close":
        s.close()
        return b""
    if linger == "reset":
        reset(s)
        return b""
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except ConnectionResetError:
        pass
    s.close()
    return out


def answers(data):
    return data.count(b"HTTP/1.1 ")


NOTE_BODY = b'{"title":"t","body":"b","tag":"half"}'

# Every route that answers after a wait, each sent alone and then half-closed;
# the last one is three requests pipelined before the FIN.
WAITING = [
    ("GET /notes/1", b"GET /notes/1 HTTP/1.1\r\nHost: x\r\n\r\n", 1),
    ("GET /notes?tag=ts", b"GET /notes?tag=ts HTTP/1.1\r\nHost: x\r\n\r\n", 1),
    ("POST /notes", b"POST /notes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Content-Length: %d\r\n\r\n%s" % (len(NOTE_BODY), NOTE_BODY), 1),
    ("PUT /notes/7", b"PUT /notes/7 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Content-Length: %d\r\n\r\n%s" % (len(NOTE_BODY), NOTE_BODY), 1),
    ("GET /delay/50", b"GET /delay/50 HTTP/1.1\r\nHost: x\r\n\r\n", 1),
    ("GET /fault/503?delay_ms=50", b"GET /fault/503?delay_ms=50 HTTP/1.1\r\nHost: x\r\n\r\n", 1),
    ("3 pipelined GET /notes/:id",
     b"".join(b"GET /notes/%d HTTP/1.1\r\nHost: x\r\n\r\n" % n for n in (1, 2, 3)), 3),
    ("3 pipelined, /json first", b"GET /json HTTP/1.1\r\nHost: x\r\n\r\n"
     b"GET /delay/30 HTTP/1.1\r\nHost: x\r\n\r\nGET /notes/4 HTTP/1.1\r\nHost: x\r\n\r\n", 3),
]
DRIP = b"GET /drip?bytes=5&duration_ms=200 HTTP/1.1\r\nHost: x\r\n\r\n"


class HalfCloseTest(unittest.TestCase):
    """A client that sends its requests and then shuts down its sending side
    (`nc -N`, socat, some scripts and proxies), under both HALF_CLOSE policies.
    abort, the default, answers as the Express reference on Node does (its HTTP
    server ends a half-closed connection): what is answered at once is answered,
    what waits is not. answer answers everything, and still finds a client that
    is really gone: one that reset, or closed so that its answer was reset."""

    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("edge_half_close")

    def gone(self, server):
        m = parse(server.metrics())
        return {r: value(m, "notes_http_clients_gone_total", reason=r)
                for r in ("half_closed", "reset", "aborted")}

    def test_abort_answers_nothing_that_waited(self):
        server = Notesd(self.db_url, env={"POOL_MAX": "2"})
        locker = db_connect("edge_half_close")
        locker.autocommit = False
        try:
            # At once: answered (Express's /json is too).
            self.assertEqual(answers(half_closed_exchange(
                server.port, b"GET /json HTTP/1.1\r\nHost: x\r\n\r\n")), 1)
            before = self.gone(server)
            got = {}
            for name, data, _ in WAITING:
                # The table stays locked a moment, so that no query can answer before
                # the FIN is in, however the client's two system calls are scheduled.
                locker.cursor().execute("lock table notes in access exclusive mode")
                release = threading.Timer(0.2, locker.rollback)
                release.start()
                got[name] = answers(half_closed_exchange(server.port, data))
                release.join()
            out = half_closed_exchange(server.port, DRIP)
            after = self.gone(server)
            figure(f"HALF_CLOSE=abort: answers {got}; /drip sent {len(body_of(out))} of 5 bytes; "
                   f"gone {after}")
            expected = {name: 0 for name, _, _ in WAITING}
            expected["3 pipelined, /json first"] = 1  # the /json, answered before the wait
            self.assertEqual(got, expected)
            # The drip's headers and first byte leave at once; at the next chunk it is gone.
            self.assertTrue(out.startswith(b"HTTP/1.1 200 "), out)
            self.assertLess(len(body_of(out)), 5)
            # One per request that waited (the pipelined ones behind it never ran), and the drip.
            self.assertEqual(after["half_closed"] - before["half_closed"], len(WAITING) + 1)
            self.assertEqual(after["reset"], before["reset"])
            m = parse(server.metrics())
            self.assertGreaterEqual(value(m, "http_requests_total", method="GET",
                                          path="/delay/:ms", status_code="0"), 1)
            self.assertEqual(value(m, "http_requests_total", method="GET", path="/delay/:ms",
                                   status_code="200"), 0)
        finally:
            locker.close()
            self.assertEqual(server.stop(), 0, server.output)

    def test_answer_answers_everything_and_still_finds_who_is_gone(self):
        server = Notesd(self.db_url, env={"POOL_MAX": "2", "HALF_CLOSE": "answer"})
        try:
            before = self.gone(server)
            got = {}
            for name, data, n in WAITING:
                out = half_closed_exchange(server.port, data)
                got[name] = answers(out)
                self.assertEqual(out.count(b"HTTP/1.1 5"), 1 if "fault" in name else 0, out)
            out = half_closed_exchange(server.port, DRIP)
            self.assertEqual(self.gone(server), before)
            figure(f"HALF_CLOSE=answer: answers {got}; /drip sent {len(body_of(out))} of 5 bytes")
            self.assertEqual(got, {name: n for name, _, n in WAITING})
            self.assertEqual(body_of(out), bytes(range(5)))
            m = parse(server.metrics())
            self.assertEqual(value(m, "http_requests_total", method="GET", path="/delay/:ms",
                                   status_code="0"), 0)
            # Really gone: a reset while it waits, and a close whose answer the kernel resets.
            for linger in ("reset", "close"):
                with self.subTest(linger=linger):
                    zero = value(parse(server.metrics()), "http_requests_total", method="GET",
                                 path="/delay/:ms", status_code="0")
                    half_closed_exchange(
                        server.port, b"GET /delay/300 HTTP/1.1\r\nHost: x\r\n\r\n",
                        linger=linger, in_flight=lambda: value(
                            parse(server.metrics()), "http_requests_in_flight") == 1)
                    poll(lambda: value(parse(server.metrics()), "http_requests_total",
                                       method="GET", path="/delay/:ms",
                                       status_code="0") == zero + 1,
                         what=f"the {linger} client recorded with status 0")
            after = self.gone(server)
            figure(f"HALF_CLOSE=answer: gone {after}")
            self.assertEqual(after["reset"] - before["reset"], 2)
            self.assertEqual(after["half_closed"], before["half_closed"])
        finally:
            self.assertEqual(server.stop(), 0, server.output)


class PrimesLimitTest(unittest.TestCase):
    def test_the_default_limit_is_1000000_and_holds_the_loop_briefly(self):
        server = Notesd(create_database("edge_primes"))
        try:
            start = time.monotonic()
            status, _, body = request(server.port, "GET", "/primes?below=1000000")
            took = time.monotonic() - start
            self.assertEqual((status, body), (200, b'{"below":1000000,"count":78498}'))
            self.assertEqual(request(server.port, "GET", "/primes?below=1000001")[0], 400)
            figure(f"/primes?below=1000000 (the default PRIMES_MAX): {took:.3f} s")
            # about 0.13 s on an idle 2-core VM
            self.assertLess(took, 2.0 + slack(server.port))
        finally:
            self.assertEqual(server.stop(), 0, server.output)


if __name__ == "__main__":
    main()
