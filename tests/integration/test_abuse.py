#!/usr/bin/env python3
"""Hostile clients, each measured: HTTP/2 rapid reset (on a database route and on
/delay), a CONTINUATION flood, PING and SETTINGS floods (frames written with Debian's
python3-h2), huge declared bodies over HTTP/1 and HTTP/2, many clients that half-close,
and slow clients from Debian's slowhttptest (slow headers, slow body, slow read). For
each one the test asserts

  - the server's CPU per abusive unit (a reset stream, a frame, a slow connection)
    stays under a bound, read from /proc before and after;
  - a well-behaved client in another process, one GET /notes/1 every 20 ms on its own
    keep-alive connection throughout, gets every answer, 200, within a bound;
  - what the abuse may pin: the database work a reset stream causes, the memory a
    flood or a slow reader holds, the time a slow sender keeps its connection.

Every figure is printed ("figure: ..."): the run's output is their record, and
docs/decisions.md ("Hostile clients") says why the bounds are what they are.

    NOTESD_BIN=build/notesd NOTESD_PGSTATE=... /usr/bin/python3 tests/integration/test_abuse.py
"""
import json
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True

from notes_testlib import SANITIZED, Notesd, create_database, main, proc_stat, slack  # noqa: E402

try:
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    import hpack
except ImportError:                      # python3-h2 (tests/run.sh installs it)
    h2 = None

# Bounds, several times what the figures read on the 2-core test VM (printed by each
# test), and ten times looser under the sanitizers, whose bookkeeping is the cost then.
SLOW = 10 if SANITIZED else 1
US_PER_RESET_STREAM = 60 * SLOW          # measured about 5 (/notes/1) and 7 (/delay)
US_PER_FRAME = 20 * SLOW                 # measured under 1 (PING, SETTINGS)
US_PER_CONTINUATION = 60 * SLOW          # a 1 KB CONTINUATION frame
# "Not starved" is judged against a control measured at the same moment: a second bystander
# asks a twin notesd that nobody abuses. A busy machine slows both alike; an abuse that
# starved the event loop leaves its bystander with a small share of the control's answers.
# (A fixed bound on the slowest answer broke on busy machines: one answer took 1.0-2.9 s
# there while every other was answered in milliseconds; the slowest is printed instead.)
# abused bystander's answers / the control's, at least. Not under the sanitizers: there the
# abused server's own work is what ASan slows ten times while the control's server idles,
# and the share measures ASan (one HTTP/1 flood of huge bodies read 0.44 on a quiet
# machine, 0.21 beside the strict tests); the bystander must still be answered, and right.
SERVED_SHARE = 0.5
CLIENT_TIMEOUT_MS = 3000                 # how long a slow sender may keep its connection

BYSTANDER = r"""
import http.client, json, select, sys, time
port = int(sys.argv[1])
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
conn.request("GET", "/notes/1")          # connected and answered before the abuse begins
conn.getresponse().read()
lat, bad = [], []
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0.02)[0]:
    t0 = time.perf_counter()
    try:
        conn.request("GET", "/notes/1")
        res = conn.getresponse()
        res.read()
        if res.status != 200:
            bad.append(res.status)
    except OSError as e:
        bad.append(repr(e))
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    lat.append((time.perf_counter() - t0) * 1000)
print(json.dumps({"n": len(lat), "bad": bad, "max_ms": max(lat) if lat else None}), flush=True)
"""


class Bystander:
    """A well-behaved HTTP/1.1 client in a process of its own."""

    def __init__(self, port):
        self.p = subprocess.Popen([sys.executable, "-c", BYSTANDER, str(port)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "ready"

    def finish(self):
        self.p.stdin.close()
        out = json.loads(self.p.stdout.readline())
        self.p.wait(30)
        self.p.stdout.close()
        return out


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


class Drain(threading.Thread):
    """Reads and counts what the server sends on a socket, so it never waits on us."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock, self.bytes, self.stop = sock, 0, threading.Event()
        sock.settimeout(0.1)
        self.start()

    def run(self):
        while not self.stop.is_set():
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            self.bytes += len(data)

    def finish(self):
        self.stop.set()
        self.join(5)


def h2c_connection(port):
    """(socket, H2Connection) after the preface and SETTINGS, prior knowledge."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    c.initiate_connection()
    s.sendall(c.data_to_send())
    return s, c


def peak_rss_reset(pid):
    """Starts measuring the peak RSS of `pid` from now (Linux: 5 into clear_refs resets
    VmHWM, as root); returns False where that is not allowed."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss(pid):
    """VmHWM, the highest RSS of `pid` since the last peak_rss_reset, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def bytes_read(pid):
    """rchar of /proc/PID/io: every byte `pid` has read, sockets included."""
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def metric_sum(text, name, label=""):
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and label in line)


class AbuseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("abuse")
        cls.server = Notesd(cls.db_url, ["--h2c"], env={"CLIENT_TIMEOUT_MS": str(CLIENT_TIMEOUT_MS)})
        cls.pid = cls.server.proc.pid
        cls.twin = Notesd(cls.db_url)      # the control bystander's server, never abused

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, f"notesd exited with {code}: {cls.server.output}"
        code = cls.twin.stop()
        assert code == 0, f"the twin notesd exited with {code}: {cls.twin.output}"

    def measure(self, what, units, abuse):
        """Runs abuse() (which returns the units it really sent, or None for `units`)
        with the bystander going; checks CPU per unit and the bystander; returns a dict
        of figures, also printed."""
        metrics0 = self.server.metrics()
        cpu0, rss0, _ = proc_stat(self.pid)
        bystander, control = Bystander(self.server.port), Bystander(self.twin.port)
        t0 = time.monotonic()
        sent = abuse()
        seconds = time.monotonic() - t0
        time.sleep(0.3)                    # what the server still had to read
        seen, calm = bystander.finish(), control.finish()
        cpu1, rss1, _ = proc_stat(self.pid)
        sent = units if sent is None else sent
        fig = {"units": sent, "seconds": seconds, "cpu_us_per_unit": 1e6 * (cpu1 - cpu0) / max(sent, 1),
               "rss_growth_mib": (rss1 - rss0) / 2**20, "bystander": seen,
               "metrics_before": metrics0, "metrics_after": self.server.metrics()}
        print(f"  figure: {what}: {sent} units in {seconds:.2f} s, server CPU {fig['cpu_us_per_unit']:.1f} µs "
              f"per unit, RSS {rss0 / 2**20:.1f} -> {rss1 / 2**20:.1f} MiB; bystander {seen['n']} requests, "
              f"slowest {seen['max_ms']:.1f} ms; control {calm['n']} requests, slowest "
              f"{calm['max_ms']:.1f} ms", flush=True)
        self.assertGreater(seen["n"], 0)
        self.assertEqual(seen["bad"], [], what)                       # served
        self.assertEqual(calm["bad"], [], what)
        if not SANITIZED:
            self.assertGreaterEqual(seen["n"], SERVED_SHARE * calm["n"], what)   # not starved
        self.assertEqual(self.server.proc.poll(), None, f"notesd exited during {what}")
        return fig

    # ------------------------------------------------------------------ HTTP/2

    def rapid_reset(self, path, streams):
        """HEADERS then RST_STREAM(CANCEL) at once, `streams` times on one connection."""
        s, c = h2c_connection(self.server.port)
        drain = Drain(s)
        headers = [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "127.0.0.1")]
        sent = 0
        try:
            for i in range(streams):
                sid = c.get_next_available_stream_id()
                c.send_headers(sid, headers, end_stream=True)
                c.reset_stream(sid, 8)
                if i % 100 == 99 or i == streams - 1:
                    s.sendall(c.data_to_send())
                    sent = i + 1
        except OSError:
            pass
        drain.finish()
        s.close()
        return sent

    @unittest.skipIf(h2 is None, "python3-h2 is not installed")
    def test_rapid_reset_on_a_database_route(self):
        fig = self.measure("rapid reset on GET /notes/1", 5000, lambda: self.rapid_reset("/notes/1", 5000))
        self.assertEqual(fig["units"], 5000)
        self.assertLess(fig["cpu_us_per_unit"], US_PER_RESET_STREAM)
        # a stream reset in the same read as its HEADERS may already have had its query
        # sent (an idle connection takes it at once); the rest never reach the database
        q = (metric_sum(fig["metrics_after"], "notes_db_query_duration_seconds_count", 'statement="get_note"')
             - metric_sum(fig["metrics_before"], "notes_db_query_duration_seconds_count", 'statement="get_note"'))
        bystander_queries = fig["bystander"]["n"]
        print(f"  figure: rapid reset: {q - bystander_queries:.0f} queries for 5000 reset streams", flush=True)
        self.assertLess(q - bystander_queries, 0.2 * 5000)
        self.assertEqual(metric_sum(fig["metrics_after"], "http_requests_in_flight"), 0)

    @unittest.skipIf(h2 is None, "python3-h2 is not installed")
    def test_rapid_reset_on_delay(self):
        fig = self.measure("rapid reset on GET /delay/1000", 5000, lambda: self.rapid_reset("/delay/1000", 5000))
        self.assertEqual(fig["units"], 5000)
        self.assertLess(fig["cpu_us_per_unit"], US_PER_RESET_STREAM)
        # every timer went with its stream: nothing left in flight a second later
        time.sleep(1.1)
        self.assertEqual(metric_sum(self.server.metrics(), "http_requests_in_flight"), 0)

    def flood(self, one, frames, read=True):
        """`frames` copies of the frame `one`, after the preface, in batches of 1000."""
        s, c = h2c_connection(self.server.port)
        drain = Drain(s) if read else None
        s.settimeout(5)
        batch, sent = one * 1000, 0
        try:
            for _ in range(frames // 1000):
                s.sendall(batch)
                sent += 1000
        except OSError:                   # the server stopped reading: back-pressure
            pass
        if drain:
            drain.finish()
        s.close()
        return sent

    @unittest.skipIf(h2 is None, "python3-h2 is not installed")
    def test_ping_and_settings_floods(self):
        for name, one in (("PING", frame(0x6, 0, 0, b"notesd!!")),
                          ("SETTINGS", frame(0x4, 0, 0, struct.pack(">HI", 0x3, 100)))):
            with self.subTest(frame=name):
                fig = self.measure(f"{name} flood", 100000, lambda: self.flood(one, 100000))
                self.assertEqual(fig["units"], 100000)
                self.assertLess(fig["cpu_us_per_unit"], US_PER_FRAME)

    @unittest.skipIf(h2 is None, "python3-h2 is not installed")
    def test_ping_flood_from_a_client_that_never_reads(self):
        """The server's answers pile up; it stops reading instead of buffering without end."""
        fig = self.measure("PING flood, never reading", 2000000,
                           lambda: self.flood(frame(0x6, 0, 0, b"notesd!!"), 2000000, read=False))
        self.assertLess(fig["units"], 2000000, "the server read 34 MB of PINGs without answers being read")
        # Measured +1.5-2.1 MiB. Under the sanitizers the figure is their allocator's: every
        # write buffer freed during the flood stays resident in their quarantine (+24 to +37
        # MiB with it, -0.2 MiB with ASAN_OPTIONS=quarantine_size_mb=0).
        if not SANITIZED:
            self.assertLess(fig["rss_growth_mib"], 32)
        self.assertLess(fig["cpu_us_per_unit"], US_PER_FRAME)

    @unittest.skipIf(h2 is None, "python3-h2 is not installed")
    def test_continuation_flood(self):
        """HEADERS without END_HEADERS, then 1 KB CONTINUATION frames: the server stops the
        connection once the header block is over its limit."""
        def abuse():
            s, c = h2c_connection(self.server.port)
            drain = Drain(s)
            block = hpack.Encoder().encode([(":method", "GET"), (":path", "/notes/1"), (":scheme", "http"),
                                            (":authority", "127.0.0.1")])
            junk = hpack.Encoder().encode([("x-junk", "j" * 1000)])
            s.sendall(frame(0x1, 0x1, 1, block))       # END_STREAM, no END_HEADERS
            sent = 0
            try:
                for _ in range(20000):
                    s.sendall(frame(0x9, 0, 1, junk))
                    sent += 1
            except OSError:
                pass
            drain.finish()
            s.close()
            return sent
        fig = self.measure("CONTINUATION flood", 20000, abuse)
        self.assertLess(fig["units"], 20000, "the server read 20 MB of one header block")
        self.assertLess(fig["cpu_us_per_unit"], US_PER_CONTINUATION)
        self.assertLess(fig["rss_growth_mib"], 32)

    # ------------------------------------------------------------------ bodies over the limit

    def huge_http1_bodies(self, connections, declared, sent):
        """`connections` sockets at once, each a POST /notes head declaring `declared`
        bytes followed by `sent` bytes of body (as fast as the server reads them),
        held open until it answers; returns the answers, after reading each."""
        socks = [socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
                 for _ in range(connections)]
        head = (f"POST /notes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {declared}\r\n\r\n").encode()
        body = b"x" * sent

        def send(sock):
            try:
                sock.sendall(head + body)
            except OSError:       # answered and closed before reading it all
                pass
        senders = [threading.Thread(target=send, args=(sock,)) for sock in socks]
        for t in senders:
            t.start()
        for t in senders:
            t.join(30)
        time.sleep(0.3)
        self.pinned_rss = proc_stat(self.pid)[1]   # with every connection still held
        # Every answer, read as it comes, until each connection ends or 10 s pass (a
        # server that buffers the bodies never answers: it waits for the last byte).
        answers = {sock: b"" for sock in socks}
        open_ = set(socks)
        deadline = time.monotonic() + 10
        while open_ and time.monotonic() < deadline:
            for sock in select.select(list(open_), [], [], 0.1)[0]:
                try:
                    chunk = sock.recv(65536)
                except OSError:   # reset after the answer: the body it did not read
                    chunk = b""
                answers[sock] += chunk
                if not chunk:
                    open_.discard(sock)
        for sock in socks:
            sock.close()
        self.answers = list(answers.values())
        return connections

    def test_huge_declared_bodies_over_http1(self):
        """200 connections, each declaring 1,000,000 bytes (ten times MAX_BODY_BYTES) and
        sending 999,999 of them: refused from the head, each with notesd's 413; the
        server reads what came with the head (what the kernel had buffered) and holds
        none of it: its peak RSS stays near idle."""
        limit = 102400
        rss0 = proc_stat(self.pid)[1]
        peak = peak_rss_reset(self.pid)
        read0 = bytes_read(self.pid)
        fig = self.measure("huge declared bodies, 200 HTTP/1 connections", 200,
                           lambda: self.huge_http1_bodies(200, 1000000, 999999))
        read = (bytes_read(self.pid) - read0) / 200
        # the highest RSS during the abuse, where it can be measured; else the RSS
        # with every connection still held
        pinned = ((peak_rss(self.pid) if peak else self.pinned_rss) - rss0) / 2**20
        refused = sum(a.startswith(b"HTTP/1.1 413 ") and a.endswith(
            b'{"error":"request body larger than %d bytes"}' % limit) for a in self.answers)
        counted = (metric_sum(fig["metrics_after"], "http_requests_total", 'path="/notes",status_code="413"')
                   - metric_sum(fig["metrics_before"], "http_requests_total", 'path="/notes",status_code="413"'))
        print(f"  figure: huge declared bodies: {refused} of 200 refused with notesd's 413, {counted:.0f} "
              f"counted; {read / 1000:.0f} kB read per connection; peak RSS +{pinned:.1f} MiB",
              flush=True)
        self.assertEqual(refused, 200)
        self.assertEqual(counted, 200)
        # Under the sanitizers the figure is their allocator's: it keeps what is freed
        # resident (its quarantine), here every read buffer of every connection.
        if not SANITIZED:
            self.assertLess(pinned, 16)
        self.assertLess(fig["cpu_us_per_unit"], 4000 * SLOW)      # measured 1.6 ms; 6 ms buffering

    def huge_h2_bodies(self, connections, streams, per_stream):
        """`connections` h2c connections with `streams` streams each, a POST /notes
        declaring 10**9 bytes, then DATA as the windows allow, up to `per_stream`
        bytes a stream; returns {error code: streams reset with it} and the most sent
        on one stream, once every stream is reset or has sent its bytes."""
        headers = [(":method", "POST"), (":path", "/notes"), (":scheme", "http"),
                   (":authority", "127.0.0.1"), ("content-type", "application/json"),
                   ("content-length", str(10**9))]
        conns = []
        for _ in range(connections):
            s, c = h2c_connection(self.server.port)
            ids = []
            for _ in range(streams):
                sid = c.get_next_available_stream_id()
                c.send_headers(sid, headers)
                ids.append(sid)
            s.sendall(c.data_to_send())
            s.settimeout(0.01)
            conns.append((s, c, {sid: 0 for sid in ids}, {}))
        chunk = b"x" * 16384
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            busy = False
            for s, c, sent, reset in conns:
                try:
                    while True:
                        data = s.recv(65536)
                        if not data:
                            break
                        for ev in c.receive_data(data):
                            if isinstance(ev, h2.events.StreamReset):
                                reset[ev.stream_id] = ev.error_code
                except (socket.timeout, BlockingIOError):
                    pass
                for sid in sent:
                    if sid in reset or sent[sid] >= per_stream:
                        continue
                    busy = True
                    try:
                        n = min(len(chunk), c.local_flow_control_window(sid), c.max_outbound_frame_size)
                        if n > 0:
                            c.send_data(sid, chunk[:n])
                            sent[sid] += n
                    except h2.exceptions.StreamClosedError:
                        reset.setdefault(sid, -1)
                out = c.data_to_send()
                if out:
                    try:
                        s.sendall(out)
                    except (socket.timeout, BlockingIOError):
                        s.settimeout(5)
                        s.sendall(out)
                        s.settimeout(0.01)
            if not busy:
                break
        time.sleep(0.3)
        self.pinned_rss = proc_stat(self.pid)[1]
        codes, most = {}, 0
        for s, c, sent, reset in conns:
            for sid in sent:
                codes[reset.get(sid)] = codes.get(reset.get(sid), 0) + 1
                most = max(most, sent[sid])
            s.close()
        self.h2_result = (codes, most)
        return connections * streams

    @unittest.skipIf(h2 is None, "python3-h2 is not installed")
    def test_huge_declared_bodies_over_http2(self):
        """10 h2c connections with 10 streams each, every stream declaring 10**9 bytes
        and sending up to 1,000,000: h2o 2.2.5 calls no handler before a stream's body
        is complete, so notesd cannot answer 413; it resets each stream
        (REFUSED_STREAM) once its body passes MAX_BODY_BYTES, having held no more."""
        rss0 = proc_stat(self.pid)[1]
        peak = peak_rss_reset(self.pid)
        fig = self.measure("huge declared bodies, 100 HTTP/2 streams", 100,
                           lambda: self.huge_h2_bodies(10, 10, 1000000))
        codes, most = self.h2_result
        pinned = ((peak_rss(self.pid) if peak else self.pinned_rss) - rss0) / 2**20
        print(f"  figure: huge HTTP/2 bodies: streams by reset code {codes}; most sent on one stream "
              f"{most} bytes; peak RSS +{pinned:.1f} MiB", flush=True)
        self.assertEqual(codes, {7: 100})      # REFUSED_STREAM, every one
        # at most 100 KiB a stream, in buffers that grow by doubling (under the
        # sanitizers, their quarantine keeps what is freed resident: not asserted)
        if not SANITIZED:
            self.assertLess(pinned, 32)
        self.assertLess(fig["cpu_us_per_unit"], 5000 * SLOW)      # measured 1.4 ms; 7.7 ms buffering

    def test_how_often_curl_sends_an_http2_body_over_the_limit(self):
        """What a stock client does with the REFUSED_STREAM that libh2o 2.2.5 sends for a
        body past MAX_BODY_BYTES (notesd has no hook there: no handler runs for the stream):
        REFUSED_STREAM says the request was not processed and may be retried, so curl 7.88
        retries it on a fresh connection, five times, and gives up with exit 56, never having
        seen a status. Each try sends what the stream window lets through (about 100 KiB) before
        its reset, not the whole body; notesd counts the connections, not the requests."""
        if shutil.which("curl") is None:
            self.skipTest("no curl")
        body = os.path.join(tempfile.mkdtemp(), "body.json")
        with open(body, "wb") as f:
            f.write(b'{"title":"' + b"x" * 1000000 + b'","body":"b","tag":"t"}')
        before = self.server.metrics()
        out = subprocess.run(["curl", "-sv", "--http2-prior-knowledge", "-o", "/dev/null",
                              "-H", "content-type: application/json", "--data-binary",
                              "@" + body, f"http://127.0.0.1:{self.server.port}/notes"],
                             capture_output=True, text=True, timeout=60)
        after = self.server.metrics()
        tries = (metric_sum(after, "notes_http_connections_accepted_total") -
                 metric_sum(before, "notes_http_connections_accepted_total"))
        refused = out.stderr.count("REFUSED_STREAM")
        print(f"  figure: curl, exit {out.returncode}: {tries:.0f} "
              f"connections, each stream refused ({refused} REFUSED_STREAM seen by curl)",
              flush=True)
        self.assertEqual(out.returncode, 56)            # "Failure in receiving network data"
        self.assertEqual(tries, refused)                # one connection per try
        self.assertGreaterEqual(tries, 2)               # REFUSED_STREAM invites the retry...
        self.assertLessEqual(tries, 6)                  # ...and curl's own limit bounds it
        # no request was ever handled, so none is counted
        self.assertEqual(metric_sum(after, "http_requests_total", 'path="/notes"'),
                         metric_sum(before, "http_requests_total", 'path="/notes"'))

    def test_many_half_closed_clients(self):
        """500 connections, each a GET /delay/100 and then FIN (as `nc -N`): with
        HALF_CLOSE=abort, the default, none is answered, each is counted as
        half_closed, and nothing stays in flight."""
        def abuse():
            socks = []
            for _ in range(500):
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
                s.sendall(b"GET /delay/100 HTTP/1.1\r\nHost: x\r\n\r\n")
                s.shutdown(socket.SHUT_WR)
                socks.append(s)
            time.sleep(0.5)
            self.half_answers = 0
            for s in socks:
                s.settimeout(2)
                try:
                    self.half_answers += s.recv(65536).startswith(b"HTTP/1.1 ")
                except OSError:
                    pass
                s.close()
            return 500
        fig = self.measure("500 half-closed clients on /delay/100", 500, abuse)
        gone = (metric_sum(fig["metrics_after"], "notes_http_clients_gone_total", 'reason="half_closed"')
                - metric_sum(fig["metrics_before"], "notes_http_clients_gone_total", 'reason="half_closed"'))
        print(f"  figure: half-closed clients: {self.half_answers} answered, {gone:.0f} counted "
              f"half_closed", flush=True)
        self.assertEqual(self.half_answers, 0)
        self.assertEqual(gone, 500)
        self.assertEqual(metric_sum(fig["metrics_after"], "http_requests_in_flight"), 0)
        self.assertLess(fig["cpu_us_per_unit"], 2000 * SLOW)

    # ------------------------------------------------------------------ slow clients

    def slowhttptest(self, name, args, connections, seconds):
        tmp = tempfile.mkdtemp(prefix="notesd-slow-")
        try:
            res = subprocess.run(["slowhttptest", "-c", str(connections), "-r", str(connections), "-p", "2",
                                  "-l", str(seconds), "-g", "-o", os.path.join(tmp, "out"), *args],
                                 capture_output=True, text=True, timeout=seconds + 60)
            self.assertEqual(res.returncode, 0, res.stdout[-2000:] + res.stderr[-2000:])
            with open(os.path.join(tmp, "out.csv")) as f:
                rows = [line.strip().split(",") for line in f][1:]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        # [seconds, closed, pending, connected] once a second, and whether the test ended
        # early because the server had closed every connection
        return ([[int(x) for x in row[:4]] for row in rows if row and row[0].isdigit()],
                "No open connections left" in res.stdout)

    @unittest.skipIf(shutil.which("slowhttptest") is None, "slowhttptest is not installed")
    def test_slow_headers_and_slow_bodies_are_cut_off_at_the_client_timeout(self):
        port = self.server.port
        allowance = slack(port)
        for name, args in (
                ("slow headers", ["-H", "-i", "1", "-x", "24", "-t", "GET",
                                  "-u", f"http://127.0.0.1:{port}/notes/1"]),
                ("slow body", ["-B", "-i", "1", "-x", "10", "-s", "8192", "-t", "POST",
                               "-u", f"http://127.0.0.1:{port}/notes"])):
            with self.subTest(client=name):
                out = []
                fig = self.measure(f"{name}, 200 connections", 200,
                                   lambda: out.extend(self.slowhttptest(name, args, 200, 12)))
                rows, all_closed = out
                connected = max(r[3] for r in rows)
                self.assertGreaterEqual(connected, 150, rows)
                # the server closed them all, CLIENT_TIMEOUT_MS after they started (+ 2 s),
                # long before slowhttptest's 12 s were up
                self.assertTrue(all_closed, rows)
                cut = rows[-1][0]
                print(f"  figure: {name}: {connected} connections held, all closed by the server "
                      f"after {cut} s (CLIENT_TIMEOUT_MS {CLIENT_TIMEOUT_MS} ms)", flush=True)
                self.assertLessEqual(cut, CLIENT_TIMEOUT_MS / 1000 + 2 + allowance, rows)
                self.assertLess(fig["cpu_us_per_unit"], 2000 * SLOW)      # per slow connection
                self.assertLess(fig["rss_growth_mib"], 16)

    @unittest.skipIf(shutil.which("slowhttptest") is None, "slowhttptest is not installed")
    def test_slow_readers_hold_little_memory(self):
        """100 clients reading 32 bytes every 2 s of a 10 MB /bytes answer, with a tiny
        receive window: the server keeps them (they make progress), streaming 16 KiB at a
        time, so memory stays flat."""
        port = self.server.port
        out = []
        # the unit is one connection for one second of the test
        fig = self.measure("slow read, 100 connections for 6 s", 600, lambda: out.extend(self.slowhttptest(
            "slow read", ["-X", "-w", "512", "-y", "1024", "-n", "2", "-z", "32", "-k", "2",
                          "-u", f"http://127.0.0.1:{port}/bytes/10000000"], 100, 6)))
        rows, all_closed = out
        self.assertGreaterEqual(max(r[3] for r in rows), 80, rows)
        self.assertFalse(all_closed, "slow readers make progress; the server keeps them")
        self.assertLess(fig["rss_growth_mib"], 16)
        self.assertLess(fig["cpu_us_per_unit"], 5000 * SLOW)


if __name__ == "__main__":
    main()
