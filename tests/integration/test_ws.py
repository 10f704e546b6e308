#!/usr/bin/env python3
"""The WebSocket routes against the real binary: /ws/echo and /ws/feed with
exact counts (messages and bytes each way, closes by reason, the handshake as a
101), every limit and its close code, the control frames RFC 6455 forbids, the
refusals of what is not a handshake, flow control under clients that do not
read (large messages, and floods of empty frames), the memory of 1,000 idle
connections, the shutdown's 1001, and Node's own WebSocket client.

The client is tests/integration/ws_client.py: RFC 6455 frames written by hand
on the standard library's sockets."""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import unittest

from notes_testlib import (REPO, SANITIZED, TSAN, Notesd, ServerTestCase, create_database, main,
                           poll, proc_stat, raw_request, request, slack)
from ws_client import (OP_BINARY, OP_CLOSE, OP_PING, OP_TEXT, Closed, HandshakeRefused,
                       WebSocket, frame)

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
# Under a sanitizer, memory is the sanitizer's (shadow memory, quarantine): the figures are
# printed, the bounds are checked in the optimised and strict builds only.
MEASURES_MEMORY = not (SANITIZED or TSAN)


def parse(text):
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and not line.startswith("#"):
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def val(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


class Delta:
    """The change of the server's counters between two scrapes."""

    def __init__(self, server):
        self.server = server
        self.before = parse(server.metrics())

    def after(self):
        self.now = parse(self.server.metrics())
        return self

    def __call__(self, name, **labels):
        return val(self.now, name, **labels) - val(self.before, name, **labels)


def ws_path(route):
    return {"echo": "/ws/echo", "feed": "/ws/feed"}[route]


class EchoTest(ServerTestCase):
    database = "ws_echo"

    def settle(self, route="/ws/echo"):
        """Waits until no WebSocket of the route is open (closes are counted when the socket
        closes, a moment after the client sees the close)."""
        poll(lambda: val(parse(self.server.metrics()), "notes_ws_connections", path=route) == 0,
             timeout=10, what="every WebSocket closed")

    def test_echo_counts_messages_and_bytes_exactly(self):
        d = Delta(self.server)
        ws = WebSocket(self.port, "/ws/echo")
        sent = 0
        messages = [f"text {i} " * i for i in range(1, 31)] + [os.urandom(i * 100) for i in
                                                                range(20)] + ["", b""]
        for m in messages:
            ws.send(m)
            opcode, data = ws.recv()
            want = m.encode() if isinstance(m, str) else m
            self.assertEqual(data, want)
            self.assertEqual(opcode, OP_TEXT if isinstance(m, str) else OP_BINARY)
            sent += len(want)
        # one message in three frames comes back whole, in one
        ws.send_fragments([b"ab", b"", b"cdef"])
        self.assertEqual(ws.recv(), (OP_TEXT, b"abcdef"))
        ws.ping(b"are you there")
        ws.send("after the ping")
        self.assertEqual(ws.recv(), (OP_TEXT, b"after the ping"))
        time.sleep(0.6)  # a connection that lives longer than its handshake
        self.assertEqual(ws.close(1000, b"bye"), 1000)
        self.settle()
        d.after()
        n = len(messages) + 2
        total = sent + 6 + len("after the ping")
        path = "/ws/echo"
        self.assertEqual(d("notes_ws_connections_opened_total", path=path), 1)
        self.assertEqual(d("notes_ws_messages_total", path=path, direction="received"), n)
        self.assertEqual(d("notes_ws_messages_total", path=path, direction="sent"), n)
        self.assertEqual(d("notes_ws_message_bytes_total", path=path, direction="received"), total)
        self.assertEqual(d("notes_ws_message_bytes_total", path=path, direction="sent"), total)
        self.assertEqual(d("notes_ws_closes_total", path=path, reason="client"), 1)
        self.assertEqual(d("notes_ws_connection_duration_seconds_count", path=path), 1)
        self.assertGreaterEqual(d("notes_ws_connection_duration_seconds_sum", path=path), 0.6)
        # the handshake is one request, answered 101, whose duration ends with the 101
        labels = dict(method="GET", path=path, status_code="101")
        self.assertEqual(d("http_requests_total", **labels), 1)
        self.assertEqual(d("http_request_duration_seconds_count", **labels), 1)
        self.assertLess(d("http_request_duration_seconds_sum", **labels), 0.3 + slack(self.port))

    def test_what_is_not_a_handshake_is_told_why(self):
        d = Delta(self.server)
        status, headers, body = request(self.port, "GET", "/ws/echo")
        self.assertEqual(status, 426)
        self.assertEqual(headers["upgrade"], "websocket")
        self.assertIn("WebSocket", json.loads(body)["error"])
        status, headers, body = request(self.port, "HEAD", "/ws/echo")
        self.assertEqual((status, body), (426, b""))
        with self.assertRaises(HandshakeRefused) as e:
            WebSocket(self.port, "/ws/echo", headers={"Sec-WebSocket-Version": "8"})
        self.assertEqual(e.exception.status, 426)
        self.assertEqual(e.exception.headers["sec-websocket-version"], "13")
        for key in ("short==", "!" * 22 + "==", None):
            with self.assertRaises(HandshakeRefused) as e:
                WebSocket(self.port, "/ws/echo", headers={"Sec-WebSocket-Key": key})
            self.assertEqual(e.exception.status, 400)
            self.assertEqual(json.loads(e.exception.body)["error"],
                             "Sec-WebSocket-Key must be 16 bytes in base64")
        # HTTP/1.0 cannot be upgraded
        answer = raw_request(self.port, b"GET /ws/echo HTTP/1.0\r\nUpgrade: websocket\r\n"
                                        b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                                        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 400 "), answer[:40])
        status, _, body = request(self.port, "POST", "/ws/echo")
        self.assertEqual(status, 405)
        with self.assertRaises(HandshakeRefused) as e:
            WebSocket(self.port, "/ws/echo?max_messages=0")
        self.assertEqual(json.loads(e.exception.body)["error"],
                         "max_messages must be a whole number from 1 to 9223372036854775807")
        with self.assertRaises(HandshakeRefused) as e:
            WebSocket(self.port, "/ws/echo?max_message_bytes=65537")  # above the setting
        self.assertEqual(e.exception.status, 400)
        d.after()
        self.assertEqual(d("http_requests_total", method="GET", path="/ws/echo",
                           status_code="426"), 2)
        self.assertEqual(d("http_requests_total", method="HEAD", path="/ws/echo",
                           status_code="426"), 1)
        self.assertEqual(d("http_requests_total", method="GET", path="/ws/echo",
                           status_code="400"), 6)
        self.assertEqual(d("notes_ws_connections_opened_total", path="/ws/echo"), 0)

    def test_a_message_too_big_closes_1009_after_the_echoes_before_it(self):
        d = Delta(self.server)
        ws = WebSocket(self.port, "/ws/echo?max_message_bytes=1000")
        # three messages and the one too big go out together; the three come back first
        ws.send_raw(frame(OP_TEXT, b"a" * 1000) + frame(OP_TEXT, b"b") + frame(OP_TEXT, b"c") +
                    frame(OP_TEXT, b"d" * 1001))
        code, reason, seen = ws.recv_close()
        self.assertEqual((code, reason), (1009, b"message too big"))
        self.assertEqual(seen, [(OP_TEXT, b"a" * 1000), (OP_TEXT, b"b"), (OP_TEXT, b"c")])
        self.assertTrue(ws.wait_eof(), "the server reset the connection instead of closing it")
        # the limit adds the frames of a fragmented message
        ws = WebSocket(self.port, "/ws/echo?max_message_bytes=1000")
        ws.send_fragments([b"x" * 600, b"y" * 400])
        self.assertEqual(ws.recv()[1], b"x" * 600 + b"y" * 400)
        ws.send_fragments([b"x" * 600, b"y" * 401])
        self.assertEqual(ws.recv_close()[0], 1009)
        ws.wait_eof()
        self.settle()
        d.after()
        self.assertEqual(d("notes_ws_closes_total", path="/ws/echo", reason="too_big"), 2)
        self.assertEqual(d("notes_ws_messages_total", path="/ws/echo", direction="sent"), 4)

    def test_a_frame_too_big_closes_1009(self):
        ws = WebSocket(self.port, "/ws/echo?max_fragment_bytes=100")
        ws.send_fragments([b"x" * 100, b"y" * 100, b"z" * 100])  # 300 bytes, no frame over 100
        self.assertEqual(ws.recv(), (OP_TEXT, b"x" * 100 + b"y" * 100 + b"z" * 100))
        ws.send(b"q" * 101)
        self.assertEqual(ws.recv_close()[0], 1009)
        ws.wait_eof()

    def test_a_huge_declared_length_is_refused_before_any_memory(self):
        rss_before = proc_stat(self.server.proc.pid)[1]
        ws = WebSocket(self.port, "/ws/echo")
        # a header that declares 2**62 bytes, and 10 of them
        ws.send_raw(frame(OP_BINARY, b"0123456789", length=1 << 62))
        self.assertEqual(ws.recv_close()[0], 1009)
        ws.wait_eof()
        if MEASURES_MEMORY:
            self.assertLess(proc_stat(self.server.proc.pid)[1] - rss_before, 4 << 20)

    def test_a_header_alone_is_enough_to_refuse_a_length(self):
        """The header of a 2**62-byte frame and not one byte of its payload: the 1009 comes
        from the header (the client's socket timeout, 10 s, would fail the wait)."""
        d = Delta(self.server)
        ws = WebSocket(self.port, "/ws/echo")
        ws.send_raw(frame(OP_BINARY, b"", length=1 << 62))
        self.assertEqual(ws.recv_close()[:2], (1009, b"message too big"))
        ws.wait_eof()
        ws = WebSocket(self.port, "/ws/echo?max_fragment_bytes=100")
        ws.send_raw(frame(OP_TEXT, b"", length=101))
        self.assertEqual(ws.recv_close()[0], 1009)
        ws.wait_eof()
        self.settle()
        d.after()
        self.assertEqual(d("notes_ws_closes_total", path="/ws/echo", reason="too_big"), 2)

    def test_the_message_past_max_messages_closes_1008_unanswered(self):
        d = Delta(self.server)
        ws = WebSocket(self.port, "/ws/echo?max_messages=3")
        for i in range(3):
            ws.send(f"m{i}")
            self.assertEqual(ws.recv(), (OP_TEXT, f"m{i}".encode()))
        ws.send("one too many")
        code, reason, seen = ws.recv_close()
        self.assertEqual((code, reason, seen), (1008, b"too many messages", []))
        ws.wait_eof()
        self.settle()
        d.after()
        self.assertEqual(d("notes_ws_messages_total", path="/ws/echo", direction="received"), 4)
        self.assertEqual(d("notes_ws_messages_total", path="/ws/echo", direction="sent"), 3)
        self.assertEqual(d("notes_ws_closes_total", path="/ws/echo", reason="message_limit"), 1)

    def test_an_idle_connection_closes_1001_and_pings_keep_it_alive(self):
        ws = WebSocket(self.port, "/ws/echo?idle_timeout_ms=400")
        opened = time.monotonic()
        for _ in range(8):  # 800 ms of pings 100 ms apart
            time.sleep(0.1)
            ws.ping()
        code, reason, _ = ws.recv_close()
        waited = time.monotonic() - opened
        self.assertEqual((code, reason), (1001, b"idle timeout"))
        self.assertGreaterEqual(waited, 0.8 + 0.4 - 0.05)
        self.assertTrue(ws.wait_eof())

    def test_frames_rfc_6455_forbids_close_1002_or_1007(self):
        d = Delta(self.server)
        for bad, code in ((frame(OP_TEXT, b"unmasked", mask=False), 1002),
                          (frame(OP_TEXT, b"\xff\xfe not UTF-8"), 1007),
                          (frame(0x0, b"a continuation of nothing"), 1002),
                          (frame(OP_TEXT, b"rsv1 without an extension", rsv=4), 1002),
                          (frame(OP_CLOSE, struct.pack("!H", 999)), 1002),
                          (frame(0x3, b"a reserved opcode"), 1002),
                          (frame(OP_TEXT, b"x", fin=False) + frame(OP_TEXT, b"y"), 1002)):
            ws = WebSocket(self.port, "/ws/echo")
            ws.send_raw(bad)
            self.assertEqual(ws.recv_close()[0], code, bad[:12])
            ws.wait_eof()
        self.settle()
        d.after()
        self.assertEqual(d("notes_ws_closes_total", path="/ws/echo", reason="protocol_error"), 7)

    def test_control_frames_rfc_6455_forbids_close_1002_counted_as_protocol_errors(self):
        """Section 5.5: a control frame is at most 125 bytes and never fragmented; 5.2: a
        64-bit length has its top bit clear; 5.5.1: a close body is empty or starts with a
        code. Each is answered with a close frame, 1002, after the echoes before it."""
        d = Delta(self.server)
        top_bit = bytes([0x82, 0xFF]) + struct.pack("!Q", 1 << 63) + b"\0\0\0\0"
        for bad in (frame(OP_PING, b"p" * 126), frame(OP_PING, b"ping", fin=False), top_bit,
                    frame(OP_CLOSE, b"\x03")):
            ws = WebSocket(self.port, "/ws/echo")
            ws.send_raw(frame(OP_TEXT, b"before") + bad + frame(OP_TEXT, b"after"))
            code, reason, seen = ws.recv_close()
            self.assertEqual((code, reason, seen), (1002, b"protocol error",
                                                    [(OP_TEXT, b"before")]), bad[:12])
            self.assertTrue(ws.wait_eof(), "a close frame, then the server's FIN")
        self.settle()
        d.after()
        self.assertEqual(d("notes_ws_closes_total", path="/ws/echo", reason="protocol_error"), 4)
        self.assertEqual(d("notes_ws_closes_total", path="/ws/echo", reason="abnormal"), 0)
        self.assertEqual(d("notes_ws_closes_total", path="/ws/echo", reason="client"), 0)

    def test_a_client_that_vanishes_is_counted_abnormal(self):
        d = Delta(self.server)
        for _ in range(3):
            ws = WebSocket(self.port, "/ws/echo")
            ws.send("hello")
            ws.recv()
            ws.abort()
        self.settle()
        d.after()
        self.assertEqual(d("notes_ws_closes_total", path="/ws/echo", reason="abnormal"), 3)
        self.assertEqual(d("notes_ws_connection_duration_seconds_count", path="/ws/echo"), 3)

    def test_a_client_that_writes_and_never_reads_is_held_back(self):
        """Flow control: 40 MB of echoes nobody reads pile up in TCP, not in notesd."""
        d = Delta(self.server)
        rss_before = proc_stat(self.server.proc.pid)[1]
        ws = WebSocket(self.port, "/ws/echo", rcvbuf=65536)
        msg = os.urandom(60000)
        ws.sock.setblocking(False)
        sent, blocked_at = 0, None
        deadline = time.monotonic() + 10
        pending = b""
        while time.monotonic() < deadline and sent < 700:
            if not pending:
                pending = frame(OP_BINARY, msg)
            try:
                n = ws.sock.send(pending)
                pending = pending[n:]
                if not pending:
                    sent += 1
            except BlockingIOError:
                if blocked_at is None:
                    blocked_at = time.monotonic()
                elif time.monotonic() - blocked_at > 1.0:
                    break  # the server stopped reading: TCP is full both ways
                time.sleep(0.01)
        self.assertLess(sent, 700, "the server kept reading a client that never reads")
        grown = proc_stat(self.server.proc.pid)[1] - rss_before
        if MEASURES_MEMORY:
            self.assertLess(grown, 4 << 20, f"RSS grew by {grown} bytes")
        # now read (the rest of the last frame goes out meanwhile): every message comes
        # back, exactly
        ws.sock.setblocking(True)
        total = sent + (1 if pending else 0)
        got = []
        reader = threading.Thread(target=lambda: got.extend(ws.recv() for _ in range(total)))
        reader.start()
        if pending:
            ws.sock.sendall(pending)
        reader.join(60)
        self.assertEqual(len(got), total)
        self.assertTrue(all(m == (OP_BINARY, msg) for m in got))
        sent = total
        self.assertEqual(ws.close(), 1000)
        self.settle()
        d.after()
        self.assertEqual(d("notes_ws_messages_total", path="/ws/echo", direction="sent"), sent)
        print(f"\n  {sent} messages of 60000 bytes before the server stopped reading; "
              f"RSS grew by {grown / 1024:.0f} KiB", flush=True)

    def test_handshake_values_are_read_without_the_whitespace_around_them(self):
        """RFC 9110 section 5.5: the spaces around a field's value are not part of it."""
        ws = WebSocket(self.port, "/ws/echo", headers={"Sec-WebSocket-Version": "13 ",
                                                        "Upgrade": "websocket\t"})
        ws.send("spaced")
        self.assertEqual(ws.recv(), (OP_TEXT, b"spaced"))
        self.assertEqual(ws.close(), 1000)

    def test_http2_cannot_be_upgraded(self):
        server = Notesd(self.db_url, args=["--h2c"])
        try:
            if shutil.which("curl") is None:
                self.skipTest("no curl")
            out = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-w", "\n%{http_code}",
                                  f"http://127.0.0.1:{server.port}/ws/echo"],
                                 capture_output=True, text=True, timeout=30).stdout
            body, code = out.rsplit("\n", 1)
            self.assertEqual(code, "400")
            self.assertIn("RFC 8441", json.loads(body)["error"])
        finally:
            self.assertEqual(server.stop(), 0)


    def test_an_extended_connect_over_http2_ends_its_connection(self):
        """RFC 8441's extended CONNECT (`:protocol: websocket`) over h2c: libh2o 2.2.5's header
        parser takes a pseudo-header it does not know for a connection error, so the whole
        connection ends with GOAWAY PROTOCOL_ERROR before notesd sees a request (notesd never
        offers SETTINGS_ENABLE_CONNECT_PROTOCOL, so a client that follows RFC 8441 does not
        send one). Other connections are not touched, and a plain GET over HTTP/2 gets 400."""
        try:
            import h2.config
            import h2.connection
            import h2.events
        except ImportError:
            self.skipTest("python3-h2 is not installed")
        server = Notesd(self.db_url, args=["--h2c"])
        try:
            before = parse(server.metrics())
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            conn = h2.connection.H2Connection(h2.config.H2Configuration(
                client_side=True, validate_outbound_headers=False))
            conn.initiate_connection()
            conn.send_headers(1, [(":method", "CONNECT"), (":protocol", "websocket"),
                                  (":scheme", "http"), (":path", "/ws/echo"),
                                  (":authority", "127.0.0.1"), ("sec-websocket-version", "13")],
                              end_stream=False)
            sock.sendall(conn.data_to_send())
            ended = None
            while ended is None:
                data = sock.recv(65536)
                if not data:
                    break
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.ConnectionTerminated):
                        ended = event.error_code
                    self.assertNotIsInstance(event, h2.events.ResponseReceived)
            sock.close()
            self.assertEqual(ended, 1)  # PROTOCOL_ERROR
            out = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-o", "/dev/null",
                                  "-w", "%{http_code}", f"http://127.0.0.1:{server.port}/ws/echo"],
                                 capture_output=True, text=True, timeout=30).stdout
            self.assertEqual(out, "400")
            after = parse(server.metrics())
            self.assertEqual(val(after, "http_requests_total", method="GET", path="/ws/echo",
                                 status_code="400") -
                             val(before, "http_requests_total", method="GET", path="/ws/echo",
                                 status_code="400"), 1)  # the GET alone
        finally:
            self.assertEqual(server.stop(), 0)


class FeedTest(ServerTestCase):
    database = "ws_feed"

    def test_the_feed_is_exact_in_count_size_order_and_time(self):
        d = Delta(self.server)
        opened = time.time()
        ws = WebSocket(self.port, "/ws/feed?rate=200&count=50&size=200")
        code, reason, seen = ws.recv_close()
        closed = time.time()
        self.assertEqual((code, reason), (1000, b"done"))
        self.assertTrue(ws.wait_eof())
        self.assertEqual(len(seen), 50)
        msgs = [json.loads(data) for _, data in seen]
        self.assertTrue(all(op == OP_TEXT and len(data) == 200 for op, data in seen))
        self.assertEqual([m["seq"] for m in msgs], list(range(1, 51)))
        self.assertTrue(all(m["of"] == 50 and set(m["pad"]) == {"x"} for m in msgs))
        # the schedule: message k leaves (k - 1) * 5 ms after the first, never earlier
        # (sent_us is the wall clock; late_us the lateness the server measured)
        first = msgs[0]["sent_us"] - msgs[0]["late_us"]
        for k, m in enumerate(msgs):
            due = first + k * 5000
            self.assertGreaterEqual(m["sent_us"] - m["late_us"], due - 2, m)
            self.assertGreaterEqual(m["sent_us"], due - 2)
        # the wall clock when it was sent, in microseconds: between the two readings
        self.assertGreaterEqual(msgs[0]["sent_us"] / 1e6, opened - 1e-6)
        self.assertLessEqual(msgs[-1]["sent_us"] / 1e6, closed)
        time.sleep(0.2)
        d.after()
        path = "/ws/feed"
        self.assertEqual(d("notes_ws_messages_total", path=path, direction="sent"), 50)
        self.assertEqual(d("notes_ws_message_bytes_total", path=path, direction="sent"), 50 * 200)
        self.assertEqual(d("notes_ws_messages_skipped_total", path=path), 0)
        self.assertEqual(d("notes_ws_closes_total", path=path, reason="done"), 1)
        self.assertEqual(d("http_requests_total", method="GET", path=path, status_code="101"), 1)

    def test_a_slow_reader_sees_gaps_the_server_counts(self):
        """The client reads nothing for a while: messages that fall due while 64 KiB wait
        for it are left out; what it then reads plus what was skipped is the whole feed,
        and the gaps in seq are exactly the skipped ones."""
        d = Delta(self.server)
        count = 800
        ws = WebSocket(self.port, f"/ws/feed?rate=1000&count={count}&size=8192", rcvbuf=16384)
        time.sleep(1.3)  # the feed runs 0.8 s; nothing is read
        code, _, seen = ws.recv_close()
        self.assertEqual(code, 1000)
        ws.wait_eof()
        time.sleep(0.2)
        d.after()
        seqs = [json.loads(data)["seq"] for _, data in seen]
        skipped = d("notes_ws_messages_skipped_total", path="/ws/feed")
        self.assertEqual(seqs, sorted(seqs))
        self.assertGreater(skipped, 0)
        self.assertEqual(len(seqs) + skipped, count)
        self.assertEqual(count - len(set(seqs)), skipped)
        self.assertEqual(d("notes_ws_messages_total", path="/ws/feed", direction="sent"),
                         len(seqs))
        print(f"\n  slow reader: {len(seqs)} of {count} received, {skipped:.0f} skipped",
              flush=True)

    def test_feed_knobs_are_checked(self):
        for query, knob in (("rate=0", "rate"), ("rate=10001", "rate"), ("count=0", "count"),
                            ("size=127", "size"), ("size=65537", "size"),
                            ("count=1000001", "count")):
            with self.assertRaises(HandshakeRefused) as e:
                WebSocket(self.port, f"/ws/feed?{query}")
            self.assertEqual(e.exception.status, 400)
            self.assertTrue(json.loads(e.exception.body)["error"].startswith(knob + " must be"))

    def test_the_feed_counts_what_the_client_sends(self):
        d = Delta(self.server)
        ws = WebSocket(self.port, "/ws/feed?rate=5&count=3")
        ws.send("ignored but counted")
        code, _, seen = ws.recv_close()
        self.assertEqual((code, len(seen)), (1000, 3))
        ws.wait_eof()
        time.sleep(0.2)
        d.after()
        self.assertEqual(d("notes_ws_messages_total", path="/ws/feed", direction="received"), 1)


def flood(port, path, frames, seconds, pid):
    """One client per frame in `frames` (a name and its bytes), each sending that frame as
    fast as TCP takes it and reading nothing, for `seconds`. Returns the server's RSS before
    and its peak during the flood (sampled every 50 ms), the frames each client got into
    TCP, and the clients, still open."""
    clients = {name: WebSocket(port, path, rcvbuf=65536) for name in frames}
    time.sleep(0.2)
    rss_before = peak = proc_stat(pid)[1]
    batches = {name: one * (65536 // len(one)) for name, one in frames.items()}
    pending = dict(batches)
    sent = dict.fromkeys(frames, 0)
    for ws in clients.values():
        ws.sock.setblocking(False)
    end = next_sample = time.monotonic()
    end += seconds
    while time.monotonic() < end:
        for name, ws in clients.items():
            try:
                n = ws.sock.send(pending[name])
                sent[name] += n
                pending[name] = pending[name][n:] or batches[name]
            except BlockingIOError:
                pass
        if time.monotonic() >= next_sample:
            peak = max(peak, proc_stat(pid)[1])
            next_sample += 0.05
            time.sleep(0.002)
    sent = {name: n // len(frames[name]) for name, n in sent.items()}
    return rss_before, peak, sent, clients


EMPTY_FRAMES = {"empty pings": frame(OP_PING, b""), "empty messages": frame(OP_TEXT, b""),
                "1-byte messages": frame(OP_TEXT, b"x")}
# What one client that sends and never reads may cost, at most: its queue (max_message_bytes
# with each frame's cost counted, and one answer past it), the message being gathered, the
# socket's input and write buffers (docs/api.md, "Flow control"); about 0.3 MiB with the
# defaults, so 4 MiB leaves room for the allocator. Under ASan (its quarantine capped at 1
# MiB, so that RSS shows what notesd holds rather than what ASan keeps) the same, doubled for
# its shadow memory and redzones.
FLOOD_BOUND_PER_CLIENT = (4 << 20) * (1 if MEASURES_MEMORY else 2)


class ResourcesTest(unittest.TestCase):
    """Many idle clients, floods of empty frames, and the shutdown with connections open."""

    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("ws_resources")

    def test_memory_per_idle_connection(self):
        n = 1000
        server = Notesd(self.db_url)
        socks = []
        try:
            # warm up: one connection's worth of allocator arenas
            warm = [WebSocket(server.port, "/ws/echo") for _ in range(10)]
            for ws in warm:
                ws.send("x")
                ws.recv()
            time.sleep(0.3)
            rss_before = proc_stat(server.proc.pid)[1]
            for _ in range(n):
                ws = WebSocket(server.port, "/ws/echo")
                socks.append(ws)
            # every one of them answers, so each is really open
            for ws in socks[::50]:
                ws.send("ping")
                self.assertEqual(ws.recv(), (OP_TEXT, b"ping"))
            time.sleep(0.3)
            samples = parse(server.metrics())
            self.assertEqual(val(samples, "notes_ws_connections", path="/ws/echo"), n + 10)
            rss_after = proc_stat(server.proc.pid)[1]
            per = (rss_after - rss_before) / n
            print(f"\n  RSS {rss_before / 2**20:.1f} MiB -> {rss_after / 2**20:.1f} MiB with "
                  f"{n} idle WebSocket connections: {per / 1024:.1f} KiB each", flush=True)
            if MEASURES_MEMORY:
                self.assertLess(per, 48 * 1024)
            for ws in socks + warm:
                ws.abort()
            poll(lambda: val(parse(server.metrics()), "notes_ws_connections", path="/ws/echo")
                 == 0, timeout=30, what="every connection closed")
            samples = parse(server.metrics())
            self.assertEqual(val(samples, "notes_ws_closes_total", path="/ws/echo",
                                 reason="abnormal"), n + 10)
        finally:
            for ws in socks:
                ws.abort()
            self.assertEqual(server.stop(), 0)

    def test_many_slow_clients_are_served_and_bounded(self):
        """200 clients that send a message every 50 ms and read their echo late, beside
        one that is served on time."""
        server = Notesd(self.db_url)
        try:
            allowance = slack(server.port)  # before the load: how busy the machine is
            clients = [WebSocket(server.port, "/ws/echo") for _ in range(200)]
            rss_before = proc_stat(server.proc.pid)[1]
            for round_ in range(10):
                for ws in clients:
                    ws.send(f"{round_}" * 1000)
                time.sleep(0.05)
            quick = WebSocket(server.port, "/ws/echo")
            t = time.monotonic()
            quick.send("now")
            self.assertEqual(quick.recv(), (OP_TEXT, b"now"))
            self.assertLess(time.monotonic() - t, 1.0 + allowance)
            for ws in clients:
                for round_ in range(10):
                    self.assertEqual(ws.recv()[1], f"{round_}".encode() * 1000)
                ws.abort()
            grown = proc_stat(server.proc.pid)[1] - rss_before
            if MEASURES_MEMORY:
                self.assertLess(grown, 24 << 20)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_clients_that_flood_and_never_read_cost_a_bounded_amount(self):
        """50 clients write 60 KB messages as fast as TCP takes them and read nothing for 3 s:
        each stops being read once 64 KiB of echoes wait for it, so what it costs is about its
        socket's receive buffer and two messages, and a polite client is served meanwhile."""
        n = 50
        server = Notesd(self.db_url)
        clients = []
        try:
            clients = [WebSocket(server.port, "/ws/echo") for _ in range(n)]
            time.sleep(0.2)
            rss_before = proc_stat(server.proc.pid)[1]
            msg = frame(OP_BINARY, os.urandom(60000))
            pending = {ws: msg for ws in clients}
            for ws in clients:
                ws.sock.setblocking(False)
            polite = WebSocket(server.port, "/ws/echo")
            slowest, echoes, end = 0.0, 0, time.monotonic() + 3
            while time.monotonic() < end:
                for ws in clients:
                    try:
                        sent = ws.sock.send(pending[ws])
                        pending[ws] = pending[ws][sent:] or msg
                    except BlockingIOError:
                        pass
                t = time.monotonic()
                polite.send("still there?")
                self.assertEqual(polite.recv(), (OP_TEXT, b"still there?"))
                slowest = max(slowest, time.monotonic() - t)
                echoes += 1
                time.sleep(0.01)
            grown = proc_stat(server.proc.pid)[1] - rss_before
            print(f"\n  {n} clients flooding without reading: RSS grew by {grown / 2**20:.1f} MiB "
                  f"({grown / n / 1024:.0f} KiB each); the polite client's slowest echo "
                  f"{slowest * 1000:.0f} ms of {echoes}", flush=True)
            # Served meanwhile: every echo came back (above), and more than one a second of the
            # flood, however busy the machine (its slowest is printed, not bounded).
            self.assertGreater(echoes, 3)
            if MEASURES_MEMORY:
                self.assertLess(grown / n, 1 << 20)
        finally:
            for ws in clients:
                ws.abort()
            self.assertEqual(server.stop(), 0)

    def flood_for_five_seconds(self, path):
        """A client per kind of empty frame floods `path` for 5 s without reading: the
        server's queue fills up at once (every frame costs WS_FRAME_COST, payload or not), it
        stops reading them, and its RSS stays within a bound per client (a build that counted
        only payload bytes grew by 450 MiB in 3 s for the pings alone)."""
        server = Notesd(self.db_url, env={"ASAN_OPTIONS": "detect_leaks=0:quarantine_size_mb=1"})
        clients = {}
        try:
            before, peak, sent, clients = flood(server.port, path, EMPTY_FRAMES, 5,
                                                server.proc.pid)
            grown = peak - before
            samples = parse(server.metrics())
            label = path.split("?")[0]
            print(f"\n  {label}, 5 s of {', '.join(f'{n:,} {k}' for k, n in sent.items())} "
                  f"into TCP, nothing read: peak RSS {before / 2**20:.1f} -> "
                  f"{peak / 2**20:.1f} MiB (+{grown / 2**20:.2f} MiB)", flush=True)
            # all three still open: held back, not closed (the queue has not been full for
            # idle_timeout_ms, 60 s)
            self.assertEqual(val(samples, "notes_ws_connections", path=label), 3)
            self.assertLess(grown, 3 * FLOOD_BOUND_PER_CLIENT)
            # reading stopped: what the server took in is a small part of what was sent
            received = val(samples, "notes_ws_messages_total", path=label, direction="received")
            self.assertLess(received, sum(sent.values()))
        finally:
            for ws in clients.values():
                ws.abort()
            self.assertEqual(server.stop(), 0)

    def test_empty_frames_from_clients_that_never_read_are_bounded_on_the_echo(self):
        self.flood_for_five_seconds("/ws/echo")

    def test_empty_frames_from_clients_that_never_read_are_bounded_on_the_feed(self):
        self.flood_for_five_seconds("/ws/feed?rate=10000&count=1000000")

    def test_a_queue_that_stays_full_closes_1008_not_reading(self):
        """A client that sends pings and never reads keeps the queue full: after
        idle_timeout_ms of that the connection is closed with 1008, counted as not_reading
        (its close frame cannot reach a client that does not read, so the socket is closed
        2 s later)."""
        server = Notesd(self.db_url)
        try:
            ws = WebSocket(server.port, "/ws/echo?idle_timeout_ms=1000", rcvbuf=65536)
            ws.sock.setblocking(False)
            batch = frame(OP_PING, b"") * 10000
            not_reading = lambda: val(parse(server.metrics()), "notes_ws_closes_total",
                                      path="/ws/echo", reason="not_reading")
            # Pings sent for as long as the server takes them, until it closes the connection.
            # When the queue is full is the server's to know: the kernel's buffers hold up to
            # about two million answered pings first (2-byte pongs), which a server under ASan on a busy machine
            # takes many seconds to read, so a client that waits blocked is not yet a sign.
            pending, give_up = batch, time.monotonic() + 60
            while time.monotonic() < give_up:
                try:
                    pending = pending[ws.sock.send(pending):] or batch
                except BlockingIOError:
                    if not_reading():
                        break
                    time.sleep(0.1)
                except ConnectionError:
                    break
            poll(lambda: not_reading() == 1, timeout=15,
                 what="the connection closed as not reading")
            samples = parse(server.metrics())
            self.assertEqual(val(samples, "notes_ws_connections", path="/ws/echo"), 0)
            self.assertEqual(val(samples, "notes_ws_closes_total", path="/ws/echo",
                                 reason="idle_timeout"), 0)
            # the socket is closed: reading what is left ends in EOF or a reset, not in the
            # client's 10 s timeout
            ws.sock.settimeout(10)
            ws.wait_eof()
        finally:
            self.assertEqual(server.stop(), 0)

    def test_a_slow_steady_feed_reader_is_served_and_a_silent_one_is_closed(self):
        """The same feed (1,000 messages of 1 KiB a second) and idle_timeout_ms to two clients,
        each on a notesd of its own so that each one's counters are its own: one reads on a
        steady schedule, a small fraction of the feed, and one reads nothing. notesd sees a
        client's reading only when the client's kernel reopens its receive window, which it
        does in steps of up to the whole receive buffer (docs/decisions.md, "WebSockets"), so
        the steady one reads twice its receive buffer (the OS default, untouched) per
        idle_timeout_ms, for twice that timeout. It is not closed: it then reads fast to the
        end of the feed (1000, done), and its gaps in seq are exactly the messages counted as
        skipped. The silent one is closed with 1008, counted as not_reading."""
        idle_s = 6
        with socket.socket() as probe:
            rcvbuf = probe.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        pace = 2 * rcvbuf / idle_s  # bytes a second
        count = 1000 * (2 * idle_s + 2)
        path = f"/ws/feed?rate=1000&count={count}&size=1024&idle_timeout_ms={idle_s * 1000}"
        steady_server, silent_server = Notesd(self.db_url), Notesd(self.db_url)
        clients = []
        try:
            steady, silent = WebSocket(steady_server.port, path), WebSocket(silent_server.port, path)
            clients = [steady, silent]
            # the steady reader takes bytes from its socket on schedule (whole frames or not);
            # recv_close parses them afterwards
            parts, taken, start = [steady.buf], 0, time.monotonic()
            while time.monotonic() < start + 2 * idle_s:
                due = int((time.monotonic() - start) * pace)
                if due > taken:
                    chunk = steady.sock.recv(min(due - taken, 65536))
                    self.assertTrue(chunk, "the server closed the steady reader's connection")
                    parts.append(chunk)
                    taken += len(chunk)
                time.sleep(0.02)
            steady.buf = b"".join(parts)
            steady_now, silent_now = parse(steady_server.metrics()), parse(silent_server.metrics())
            closes = lambda samples, reason: val(samples, "notes_ws_closes_total",
                                                 path="/ws/feed", reason=reason)
            self.assertEqual(closes(steady_now, "not_reading"), 0)
            self.assertEqual(val(steady_now, "notes_ws_connections", path="/ws/feed"), 1)
            # the silent one's queue filled at once: closed after idle_timeout_ms (its close
            # frame cannot reach it, so its socket went 2 s later)
            poll(lambda: closes(parse(silent_server.metrics()), "not_reading") == 1,
                 what="the silent reader closed as not reading")
            code, reason, seen = steady.recv_close()
            self.assertEqual((code, reason), (1000, b"done"))
            steady.wait_eof()
            poll(lambda: val(parse(steady_server.metrics()), "notes_ws_connections",
                             path="/ws/feed") == 0, what="the steady reader's connection closed")
            after = parse(steady_server.metrics())
            skipped = val(after, "notes_ws_messages_skipped_total", path="/ws/feed")
            seqs = [json.loads(data)["seq"] for _, data in seen]
            self.assertEqual(seqs, sorted(set(seqs)))
            self.assertGreater(skipped, 0)
            self.assertEqual(count - len(seqs), skipped)
            self.assertEqual(val(after, "notes_ws_messages_total", path="/ws/feed",
                                 direction="sent"), len(seqs))
            self.assertEqual(closes(after, "done"), 1)
            self.assertEqual(closes(after, "not_reading"), 0)
            print(f"\n  steady reader: {pace / 1024:.1f} KiB/s (receive buffer {rcvbuf} bytes) "
                  f"for {2 * idle_s} s with idle_timeout_ms={idle_s * 1000}: not closed; "
                  f"{len(seqs)} of {count} messages, {skipped:.0f} skipped; the silent one "
                  f"closed as not_reading", flush=True)
        finally:
            for ws in clients:
                ws.abort()
            self.assertEqual(steady_server.stop(), 0)
            self.assertEqual(silent_server.stop(), 0)

    def test_shutdown_closes_every_websocket_with_1001(self):
        server = Notesd(self.db_url, env={"SHUTDOWN_TIMEOUT_MS": "5000"})
        echo = WebSocket(server.port, "/ws/echo")
        feed = WebSocket(server.port, "/ws/feed?rate=1&count=1000")
        self.assertEqual(json.loads(feed.recv()[1])["seq"], 1)
        echo.send("before")
        self.assertEqual(echo.recv(), (OP_TEXT, b"before"))
        allowance = slack(server.port)
        t = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        for ws in (echo, feed):
            code, reason, _ = ws.recv_close()
            self.assertEqual((code, reason), (1001, b"server shutting down"))
            ws.wait_eof()
        server.proc.wait(10)  # it exits by itself once they are closed
        self.assertEqual(server.stop(), 0)
        self.assertLess(time.monotonic() - t, 4.0 + allowance)


class ThirdPartyClientTest(unittest.TestCase):
    """Node's own WebSocket client (Node 22 and later have one built in), when the pinned
    runtime is installed (loadtests/peers/install.sh)."""

    NODE = os.path.join(REPO, "loadtests", "peers", "runtimes", "node_modules", ".bin", "node")

    def test_node_websocket_echoes_and_reads_the_feed(self):
        if not os.path.exists(self.NODE):
            self.skipTest("the pinned node is not installed (loadtests/peers/install.sh)")
        server = Notesd(create_database("ws_node"))
        script = """
const [port] = process.argv.slice(1);
function run(path, onOpen) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`);
    const got = [];
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => onOpen(ws);
    ws.onmessage = (e) => { got.push(typeof e.data === 'string' ? e.data : e.data.byteLength);
                            if (path === '/ws/echo' && got.length === 100) ws.close(1000); };
    ws.onclose = (e) => resolve({code: e.code, reason: e.reason, got});
    ws.onerror = (e) => reject(new Error('websocket error'));
  });
}
(async () => {
  const echo = await run('/ws/echo', (ws) => {
    for (let i = 0; i < 50; i++) ws.send('m' + i);
    for (let i = 0; i < 50; i++) ws.send(new Uint8Array(i + 1));
  });
  const feed = await run('/ws/feed?rate=100&count=20&size=256', () => {});
  console.log(JSON.stringify({echo, feed}));
})().catch((e) => { console.error(e); process.exit(1); });
"""
        try:
            out = subprocess.run([self.NODE, "-e", script, str(server.port)],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            res = json.loads(out.stdout)
            echo, feed = res["echo"], res["feed"]
            self.assertEqual(echo["code"], 1000)
            self.assertEqual(echo["got"][:50], [f"m{i}" for i in range(50)])
            self.assertEqual(echo["got"][50:], list(range(1, 51)))
            self.assertEqual((feed["code"], feed["reason"]), (1000, "done"))
            self.assertEqual([json.loads(m)["seq"] for m in feed["got"]], list(range(1, 21)))
            samples = parse(server.metrics())
            self.assertEqual(val(samples, "notes_ws_messages_total", path="/ws/echo",
                                 direction="received"), 100)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    main()
