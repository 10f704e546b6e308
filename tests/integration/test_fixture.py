#!/usr/bin/env python3
"""The fixture routes, whose truth is exact: /fault/:status (every Nth
request, delays, resets, truncated bodies), /bytes/:n and /drip (the pattern,
the length, the pace, and memory that does not grow with the body), /stall
(pauses counted exactly), the accepted-connections counter; and the TLS port
(ALPN h2 and http/1.1) and h2c, which must give the bytes and the counts of
HTTP/1.1, checked with curl and h2load."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from notes_testlib import (BIN, SANITIZED, Notesd, ServerTestCase, create_database,
                           direct_only, main, poll, proc_stat, request, slack)

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
JSON_CT = "application/json; charset=utf-8"
PERIOD = 251  # byte i of /bytes and /drip is i % 251


def pattern(n):
    return (bytes(range(PERIOD)) * (n // PERIOD + 1))[:n]


def parse(text):
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and not line.startswith("#"):
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def count(samples, path, status, method="GET"):
    return samples.get(("http_requests_total", frozenset(
        {("method", method), ("path", path), ("status_code", str(status))})), 0.0)


def total(samples, name):
    return samples.get((name, frozenset()), 0.0)


def raw(port, path, timeout=10):
    """Sends one GET on a fresh connection; returns (bytes received, how it ended:
    'eof' or 'reset')."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return data, "eof"
                data += chunk
        except ConnectionResetError:
            return data, "reset"


def h2_frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def h2_get(stream, path):
    """A HEADERS frame (END_STREAM, END_HEADERS) for GET path, in HPACK literals
    without indexing or Huffman coding."""
    block = b""
    for name, value in ((b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"x"),
                        (b":path", path.encode())):
        block += b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value
    return h2_frame(0x1, 0x5, stream, block)


def h2_read_until_headers(sock, stream):
    """Reads frames until a HEADERS frame on `stream`; returns the frame types seen."""
    buf, seen = b"", []
    while True:
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            n = int.from_bytes(buf[:3], "big")
            kind, sid = buf[3], int.from_bytes(buf[5:9], "big") & 0x7fffffff
            seen.append((kind, sid))
            buf = buf[9 + n:]
            if kind == 0x1 and sid == stream:
                return seen
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed; frames seen: {seen}")
        buf += chunk


class FixtureTest(ServerTestCase):
    database = "fixture"

    def scrape(self):
        return parse(self.server.metrics())

    def get(self, path, **kw):
        return request(self.port, "GET", path, **kw)

    def assert_bad(self, path, knob):
        status, headers, body = self.get(path)
        self.assertEqual(status, 400, (path, body))
        self.assertEqual(headers["content-type"], JSON_CT)
        self.assertRegex(body.decode(), r'^\{"error":"[^"]*' + re.escape(knob), path)

    # /fault/:status

    def test_fault_answers_its_status_with_a_json_body(self):
        for status in (200, 201, 418, 429, 500, 503, 599):
            with self.subTest(status=status):
                code, headers, body = self.get(f"/fault/{status}")
                self.assertEqual((code, body), (status, b'{"status":%d}' % status))
                self.assertEqual(headers["content-type"], JSON_CT)
                self.assertEqual(headers["content-length"], str(len(body)))

    def test_fault_204_and_304_have_no_body_and_no_length(self):
        for status in (204, 304):
            with self.subTest(status=status):
                code, headers, body = self.get(f"/fault/{status}")
                self.assertEqual((code, body), (status, b""))
                self.assertNotIn("content-length", headers)

    @direct_only("pipelined requests on a raw socket")
    def test_fault_205_has_content_length_0_and_no_body(self):
        # RFC 9110 section 15.3.6: no content in a 205. The answer is followed at
        # once by the next one on the connection, so a stray body would show.
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(b"GET /fault/205 HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"HEAD /fault/205 HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        answers = data.split(b"HTTP/1.1 ")[1:]
        self.assertEqual(len(answers), 3, data)
        for answer in answers[:2]:
            head, sep, body = answer.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"205 Reset Content\r\n"), head)
            self.assertIn(b"\r\nContent-Length: 0", head)
            self.assertEqual((sep, body), (b"\r\n\r\n", b""))
        self.assertTrue(answers[2].endswith(b'{"status":"ok"}'), answers[2])

    def test_every_fourth_request_fails_exactly(self):
        before = self.scrape()
        codes = [self.get("/fault/503?every=4")[0] for _ in range(40)]
        self.assertEqual(codes.count(503), 10)
        self.assertEqual(codes.count(200), 30)
        self.assertEqual([i for i, c in enumerate(codes) if c == 503], list(range(3, 40, 4)))
        after = self.scrape()
        self.assertEqual(count(after, "/fault/:status", 503) - count(before, "/fault/:status", 503),
                         10)
        self.assertEqual(count(after, "/fault/:status", 200) - count(before, "/fault/:status", 200),
                         30)

    def test_each_status_and_every_pair_counts_on_its_own(self):
        codes_a, codes_b = [], []
        for _ in range(30):
            codes_a.append(self.get("/fault/500?every=3")[0])
            codes_b.append(self.get("/fault/502?every=5")[0])
        self.assertEqual(codes_a.count(500), 10)
        self.assertEqual(codes_b.count(502), 6)

    def test_fault_delay_ms_answers_no_earlier(self):
        t0 = time.monotonic()
        code, _, body = self.get("/fault/503?delay_ms=200")
        elapsed = time.monotonic() - t0
        self.assertEqual((code, body), (503, b'{"status":503}'))
        self.assertGreaterEqual(elapsed, 0.2)
        self.assertLess(elapsed, 5 + slack(self.port))

    @direct_only("a reset connection, which a proxy turns into an answer of its own")
    def test_reset_sends_nothing_and_counts_status_0(self):
        before = self.scrape()
        data, how = raw(self.port, "/fault/503?action=reset")
        self.assertEqual((data, how), (b"", "reset"))
        after = poll(lambda: (lambda s: s if count(s, "/fault/:status", 0) >
                              count(before, "/fault/:status", 0) else None)(self.scrape()),
                     what="the reset to be counted")
        self.assertEqual(count(after, "/fault/:status", 0) - count(before, "/fault/:status", 0), 1)
        # curl sees it as a reset too (exit 56: failure receiving data).
        res = subprocess.run(["curl", "-s", f"http://127.0.0.1:{self.port}/fault/500?action=reset"],
                             capture_output=True, timeout=30)
        self.assertEqual(res.returncode, 56, res.stderr)

    @direct_only("a body cut short, which a proxy turns into an answer of its own")
    def test_close_after_headers_promises_a_body_and_closes(self):
        data, how = raw(self.port, "/fault/502?action=close_after_headers")
        self.assertEqual(how, "eof")
        head, sep, rest = data.partition(b"\r\n\r\n")
        self.assertTrue(sep, data)
        self.assertTrue(head.startswith(b"HTTP/1.1 502 Bad Gateway\r\n"), head)
        self.assertIn(b"\r\nContent-Length: 14\r\n", head)
        self.assertEqual(rest, b"")
        # curl: exit 18, a partial transfer.
        res = subprocess.run(["curl", "-s", f"http://127.0.0.1:{self.port}"
                              "/fault/502?action=close_after_headers"], capture_output=True, timeout=30)
        self.assertEqual(res.returncode, 18, res.stderr)

    @direct_only("reset connections, which a proxy turns into answers of its own")
    def test_every_selects_which_requests_get_the_action(self):
        codes = []
        for _ in range(6):
            try:
                codes.append(self.get("/fault/504?every=3&action=reset")[0])
            except (ConnectionResetError, ConnectionError, OSError):
                codes.append("reset")
        self.assertEqual(codes, [200, 200, "reset", 200, 200, "reset"])

    def test_fault_knobs_out_of_range_are_400_naming_the_knob(self):
        for path, knob in [("/fault/199", "status"), ("/fault/600", "status"),
                           ("/fault/abc", "status"), ("/fault/5030", "status"),
                           ("/fault/503?every=0", "every"), ("/fault/503?every=x", "every"),
                           ("/fault/503?every=1000001", "every"),
                           ("/fault/503?delay_ms=60001", "delay_ms"),
                           ("/fault/503?delay_ms=-1", "delay_ms"),
                           ("/fault/503?action=explode", "action"), ("/fault/503?action", "action")]:
            with self.subTest(path=path):
                self.assert_bad(path, knob)

    # /bytes/:n

    @direct_only("Prism 5.14 reads a body as UTF-8 text and sends it on re-encoded")
    def test_bytes_are_the_pattern_with_their_length(self):
        for n in (0, 1, 250, 251, 16384, 16385, 100000):
            with self.subTest(n=n):
                code, headers, body = self.get(f"/bytes/{n}")
                self.assertEqual(code, 200)
                self.assertEqual(headers["content-type"], "application/octet-stream")
                self.assertEqual(headers["content-length"], str(n))
                self.assertEqual(body, pattern(n))
        code, headers, body = request(self.port, "HEAD", "/bytes/5000000")
        self.assertEqual((code, headers["content-length"], body), (200, "5000000", b""))

    @direct_only("notesd's memory while a raw socket reads slowly")
    def test_a_large_body_is_streamed_without_growing_memory(self):
        n = 64 << 20  # 4096 times the 16 KiB chunk
        self.get("/bytes/1000000")  # warm up the buffers of a first stream
        rss_before = proc_stat(self.server.proc.pid)[1]
        peak = rss_before
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(f"GET /bytes/{n} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += s.recv(65536)
            head, _, body = buf.partition(b"\r\n\r\n")
            self.assertIn(b"Content-Length: %d\r\n" % n, head)
            got, ok = len(body), body == pattern(len(body))
            full = pattern((1 << 20) + PERIOD)
            while got < n:
                chunk = s.recv(1 << 20)
                self.assertTrue(chunk, f"connection closed after {got} of {n} bytes")
                phase = got % PERIOD
                ok = ok and chunk == full[phase:phase + len(chunk)]
                got += len(chunk)
                # read slowly now and then, so the server has to wait for us
                if got % (8 << 20) < len(chunk):
                    peak = max(peak, proc_stat(self.server.proc.pid)[1])
                    time.sleep(0.05)
        self.assertEqual(got, n)
        self.assertTrue(ok, "the bytes differ from the pattern")
        peak = max(peak, proc_stat(self.server.proc.pid)[1])
        growth = peak - rss_before
        print(f"RSS {rss_before >> 20} MiB before, peak {peak >> 20} MiB during a {n >> 20} MiB body")
        self.assertLess(growth, 16 << 20)

    def test_bytes_limit(self):
        self.assertEqual(request(self.port, "HEAD", "/bytes/104857600")[0], 200)
        for path in ("/bytes/104857601", "/bytes/-1", "/bytes/1e3", "/bytes/99999999999999999999"):
            with self.subTest(path=path):
                self.assert_bad(path, "n must be")

    # /drip

    @direct_only("times the bytes as they arrive; a proxy reads the whole body first")
    def test_drip_sends_the_first_byte_early_and_the_last_at_the_duration(self):
        allowance = slack(self.port)
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            t0 = time.monotonic()
            s.sendall(b"GET /drip?bytes=20&duration_ms=1000 HTTP/1.1\r\nHost: x\r\n\r\n")
            buf, first, last = b"", None, None
            while True:
                head, sep, body = buf.partition(b"\r\n\r\n")
                if sep and body and first is None:
                    first = time.monotonic() - t0
                if sep and len(body) >= 20:
                    last = time.monotonic() - t0
                    break
                chunk = s.recv(4096)
                self.assertTrue(chunk)
                buf += chunk
        self.assertIn(b"Content-Length: 20\r\n", head)
        self.assertEqual(body, pattern(20))
        print(f"drip: first byte after {first * 1000:.1f} ms, last after {last * 1000:.1f} ms")
        self.assertLess(first, 0.3 + allowance)
        self.assertGreaterEqual(last, 0.99)
        self.assertLess(last, 3.0 + allowance)

    @direct_only("Prism 5.14 reads a body as UTF-8 text and sends it on re-encoded")
    def test_drip_defaults_and_limits(self):
        allowance = slack(self.port)
        t0 = time.monotonic()
        code, headers, body = self.get("/drip?duration_ms=0&bytes=100000")
        self.assertEqual((code, body), (200, pattern(100000)))
        self.assertLess(time.monotonic() - t0, 5 + allowance)
        for path, knob in [("/drip?bytes=0", "bytes"), ("/drip?bytes=10485761", "bytes"),
                           ("/drip?duration_ms=60001", "duration_ms"),
                           ("/drip?duration_ms=x", "duration_ms")]:
            with self.subTest(path=path):
                self.assert_bad(path, knob)

    # /stall

    def test_stalls_are_counted_exactly(self):
        before = self.scrape()
        code, _, body = self.get("/stall?ms=40&every_ms=200&for_ms=1000")
        self.assertEqual((code, body), (200, b'{"stall_ms":40,"every_ms":200,"for_ms":1000}'))
        # stalls at 200, 400, ..., 1000 ms: five of them
        after = poll(lambda: (lambda s: s if total(s, "notes_stalls_total") -
                              total(before, "notes_stalls_total") >= 5 else None)(self.scrape()),
                     timeout=20, what="five stalls")
        time.sleep(0.5)
        after = self.scrape()
        self.assertEqual(total(after, "notes_stalls_total") - total(before, "notes_stalls_total"), 5)
        seconds = total(after, "notes_stall_seconds_total") - total(before,
                                                                   "notes_stall_seconds_total")
        self.assertGreaterEqual(seconds, 5 * 0.040)
        self.assertLess(seconds, 5 * 0.040 + 1.0 + slack(self.port))

    def test_a_stall_holds_every_connection_of_the_loop(self):
        """A stall of 0.8 s from 1.6 s on: /status asked again and again from the start meets
        it (whenever the client runs, it cannot miss most of a second) and waits for its end."""
        self.assertEqual(self.get("/stall?ms=800&every_ms=1600&for_ms=1600")[0], 200)
        start, slowest = time.monotonic(), 0.0
        while time.monotonic() - start < 3.0:
            t0 = time.monotonic()
            self.assertEqual(self.get("/status")[0], 200)
            slowest = max(slowest, time.monotonic() - t0)
        self.assertGreater(slowest, 0.1)

    def test_stall_for_ms_0_cancels(self):
        before = self.scrape()
        self.get("/stall?ms=20&every_ms=300&for_ms=3000")
        code, _, body = self.get("/stall?for_ms=0")
        self.assertEqual((code, body), (200, b'{"stall_ms":0,"every_ms":0,"for_ms":0}'))
        time.sleep(0.8)
        self.assertEqual(total(self.scrape(), "notes_stalls_total"),
                         total(before, "notes_stalls_total"))

    def test_stall_limits(self):
        for path, knob in [("/stall?ms=0&every_ms=10&for_ms=100", "ms"),
                           ("/stall?ms=1001&every_ms=5000&for_ms=100", "ms"),
                           ("/stall?ms=100&every_ms=150&for_ms=1000", "every_ms"),
                           ("/stall?ms=10&every_ms=100&for_ms=60001", "for_ms"),
                           ("/stall?ms=10&every_ms=100", "for_ms"),
                           ("/stall?every_ms=100&for_ms=1000", "ms"),
                           ("/stall?ms=10&for_ms=1000", "every_ms")]:
            with self.subTest(path=path):
                self.assert_bad(path, knob)

    # counters

    @direct_only("counts connections, and a proxy opens its own")
    def test_accepted_connections_count_api_connections_only(self):
        before = self.scrape()
        for _ in range(5):
            self.get("/status")  # a connection each
        self.server.metrics()
        after = self.scrape()
        self.assertEqual(total(after, "notes_http_connections_accepted_total") -
                         total(before, "notes_http_connections_accepted_total"), 5)

    def test_the_fixture_routes_are_counted_under_their_templates(self):
        before = self.scrape()
        self.get("/bytes/10")
        self.get("/drip?bytes=2&duration_ms=0")
        self.get("/fault/418")
        self.get("/stall?for_ms=0")
        self.get("/bytes/x")
        after = self.scrape()
        for path, status in (("/bytes/:n", 200), ("/drip", 200), ("/fault/:status", 418),
                             ("/stall", 200), ("/bytes/:n", 400)):
            with self.subTest(path=path):
                self.assertEqual(count(after, path, status) - count(before, path, status), 1)


def make_certificate(directory):
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "2", "-subj", "/CN=localhost"], check=True,
                   capture_output=True)
    return cert, key


@direct_only("HTTP/2, TLS and h2load; Prism's proxy speaks HTTP/1.1 without TLS")
class Http2Test(unittest.TestCase):
    """The TLS port (ALPN h2 and http/1.1) and h2c on the API port: the bytes
    and the counts of HTTP/1.1."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="notesd-tls-")
        cls.cert, cls.key = make_certificate(cls.tmp)
        cls.db_url = create_database("fixture_h2")
        # Both ports are the kernel's picks, read back from the start-up line.
        cls.server = Notesd(cls.db_url, ["--tls-port", "auto", "--tls-cert", cls.cert,
                                         "--tls-key", cls.key, "--h2c"])
        cls.port, cls.tls_port = cls.server.port, cls.server.tls_port

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert code == 0, f"notesd exited with {code}: {cls.server.output}"

    def curl(self, url, *args):
        """(HTTP version, status, body) as curl saw them."""
        res = subprocess.run(["curl", "-s", "-k", "-o", "-", "-w", "\n%{http_version} %{http_code}",
                              *args, url], capture_output=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr)
        body, _, tail = res.stdout.rpartition(b"\n")
        version, code = tail.decode().split()
        return version, int(code), body

    def variants(self, path, upgrade=True):
        seen = {
            "http/1.1": self.curl(f"http://127.0.0.1:{self.port}{path}", "--http1.1"),
            "h2c prior knowledge": self.curl(f"http://127.0.0.1:{self.port}{path}",
                                             "--http2-prior-knowledge"),
            "h2 over TLS": self.curl(f"https://127.0.0.1:{self.tls_port}{path}", "--http2"),
            "http/1.1 over TLS": self.curl(f"https://127.0.0.1:{self.tls_port}{path}", "--http1.1"),
        }
        # curl 7.88 keeps at most 32 KiB that arrive with the 101 of an h2c
        # upgrade ("connection buffer size is too small"), and h2o sends a whole
        # 64 KiB window at once: larger bodies are checked without the upgrade.
        if upgrade:
            seen["h2c upgrade"] = self.curl(f"http://127.0.0.1:{self.port}{path}", "--http2")
        return seen

    def test_every_protocol_gets_the_same_bytes(self):
        for path in ("/notes/1", "/notes/123456", "/notes?tag=js", "/notes/999999999", "/status",
                     "/", "/bytes/20000", "/bytes/300000", "/fault/503", "/notes/abc"):
            with self.subTest(path=path):
                seen = self.variants(path, upgrade=path != "/bytes/300000")
                versions = {k: v[0] for k, v in seen.items()}
                self.assertEqual(versions, {"http/1.1": "1.1", "h2c prior knowledge": "2",
                                            "h2c upgrade": "2", "h2 over TLS": "2",
                                            "http/1.1 over TLS": "1.1"}
                                 if path != "/bytes/300000" else
                                 {"http/1.1": "1.1", "h2c prior knowledge": "2",
                                  "h2 over TLS": "2", "http/1.1 over TLS": "1.1"})
                self.assertEqual(len({(v[1], v[2]) for v in seen.values()}), 1, seen)

    def test_tls_1_2_offers_forward_secrecy_only(self):
        """TLS 1.0 and 1.1 are refused, and so are TLS 1.2's static-RSA and CBC suites
        (AES128-SHA once completed a handshake); an ECDHE suite with AES-GCM is taken."""
        def handshake(*args):
            res = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{self.tls_port}",
                                  *args], input=b"", capture_output=True, timeout=60)
            m = re.search(rb"Cipher is (\S+)", res.stdout)
            return m.group(1).decode() if m and m.group(1) != b"(NONE)" else None
        for cipher in ("AES128-SHA", "AES256-SHA", "AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA"):
            with self.subTest(cipher=cipher):
                self.assertIsNone(handshake("-tls1_2", "-cipher", cipher))
        self.assertEqual(handshake("-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"),
                         "ECDHE-RSA-AES128-GCM-SHA256")
        self.assertIsNone(handshake("-tls1_1"))
        self.assertIsNotNone(handshake("-tls1_3"))

    def test_writes_over_every_protocol(self):
        """PUT answers the same row whatever the protocol; POST's rows differ only
        in id and created_at."""
        body = '{"title":"t \\u00e9","body":"b","tag":"http"}'
        args = ["-X", "PUT", "-H", "Content-Type: application/json", "--data-binary", body]
        seen = {
            name: self.curl(url, *flags, *args) for name, url, flags in (
                ("http/1.1", f"http://127.0.0.1:{self.port}/notes/42", ["--http1.1"]),
                ("h2c", f"http://127.0.0.1:{self.port}/notes/42", ["--http2-prior-knowledge"]),
                ("h2", f"https://127.0.0.1:{self.tls_port}/notes/42", ["--http2"]))}
        self.assertEqual({v[0] for v in seen.values()}, {"1.1", "2"})
        self.assertEqual(len({(v[1], v[2]) for v in seen.values()}), 1, seen)
        self.assertEqual(seen["h2"][1], 200)
        posts = [self.curl(url, *flags, "-H", "Content-Type: application/json", "--data-binary",
                           body)
                 for url, flags in ((f"http://127.0.0.1:{self.port}/notes", ["--http1.1"]),
                                    (f"https://127.0.0.1:{self.tls_port}/notes", ["--http2"]))]
        shapes = {(v[1], re.sub(rb'"id":"\d+"|"created_at":"[^"]+"', b"", v[2])) for v in posts}
        self.assertEqual(len(shapes), 1, posts)
        self.assertEqual(posts[1][1], 201)

    def test_json_has_the_same_shape_over_http2(self):
        version, code, body = self.curl(f"https://127.0.0.1:{self.tls_port}/json", "--http2")
        self.assertEqual((version, code), ("2", 200))
        self.assertRegex(body.decode(), r'^\{"id":\d+,"title":"[^"]*","body":"[^"]*",'
                                        r'"tag":"[a-z]+","created_at":"[-0-9T:.]+Z"\}$')

    def test_head_and_server_timing_over_http2(self):
        res = subprocess.run(["curl", "-s", "-k", "--http2", "-I",
                              f"https://127.0.0.1:{self.tls_port}/bytes/1000"],
                             capture_output=True, timeout=30, text=True)
        self.assertEqual(res.returncode, 0)
        self.assertIn("HTTP/2 200", res.stdout)
        self.assertIn("content-length: 1000", res.stdout)
        self.assertRegex(res.stdout, r"server-timing: total;dur=\d+\.\d{3}")

    def test_metrics_count_every_protocol_alike(self):
        before = parse(self.server.metrics())
        accepted = total(before, "notes_http_connections_accepted_total")
        self.variants("/notes/7")  # five connections, one request each
        after = parse(self.server.metrics())
        self.assertEqual(count(after, "/notes/:id", 200) - count(before, "/notes/:id", 200), 5)
        self.assertEqual(total(after, "notes_http_connections_accepted_total") - accepted, 5)

    def test_fault_actions_over_http2(self):
        res = subprocess.run(["curl", "-s", "--http2-prior-knowledge",
                              f"http://127.0.0.1:{self.port}/fault/503?action=close_after_headers"],
                             capture_output=True, timeout=30)
        self.assertEqual(res.returncode, 92)  # the stream was reset after its HEADERS
        res = subprocess.run(["curl", "-s", "-k", "--http2",
                              f"https://127.0.0.1:{self.tls_port}/fault/503?action=reset"],
                             capture_output=True, timeout=30)
        self.assertNotEqual(res.returncode, 0)
        self.assertEqual(res.stdout, b"")
        # and the server lives on
        self.assertEqual(self.curl(f"https://127.0.0.1:{self.tls_port}/status", "--http2")[1], 200)

    def test_streams_the_client_cancels_are_disposed_of(self):
        """RST_STREAM in the middle of a delay, a delayed fault, a drip and a large
        body: each request is disposed of (in flight again 0; status 0 when no
        response had started, else the status whose headers went out) and the
        connection goes on serving."""
        before = parse(self.server.metrics())
        paths = ["/delay/3000", "/drip?bytes=100&duration_ms=3000", "/bytes/100000000",
                 "/fault/503?delay_ms=3000"]
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            # SETTINGS, and a connection window that the large body cannot fill
            # (each stream keeps the default 64 KiB window, never updated here)
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(0x4, 0, 0) +
                      h2_frame(0x8, 0, 0, (1 << 30).to_bytes(4, "big")))
            for i, path in enumerate(paths):
                s.sendall(h2_get(2 * i + 1, path))
            poll(lambda: total(parse(self.server.metrics()), "http_requests_in_flight") >= 4,
                 what="four streams in flight")
            for i in range(len(paths)):
                s.sendall(h2_frame(0x3, 0, 2 * i + 1, (8).to_bytes(4, "big")))  # CANCEL
            last = 2 * len(paths) + 1
            s.sendall(h2_get(last, "/status"))
            h2_read_until_headers(s, last)
            poll(lambda: total(parse(self.server.metrics()), "http_requests_in_flight") == 0,
                 what="the cancelled streams to be disposed of")
        after = parse(self.server.metrics())
        for path, status in (("/delay/:ms", 0), ("/fault/:status", 0), ("/drip", 200),
                             ("/bytes/:n", 200)):
            with self.subTest(path=path):
                self.assertEqual(count(after, path, status) - count(before, path, status), 1)
        self.assertEqual(count(after, "/status", 200) - count(before, "/status", 200), 1)

    def test_a_reset_over_http2_counts_no_other_stream_as_a_client_gone(self):
        """/fault's reset ends the whole HTTP/2 connection: the other stream on
        it (a /delay in flight) ends with status 0, as the reset one does, and
        neither is counted in notes_http_clients_gone_total: notesd ended them."""
        def gone(samples):
            return sum(v for (name, _), v in samples.items()
                       if name == "notes_http_clients_gone_total")
        before = parse(self.server.metrics())
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(0x4, 0, 0))
            s.sendall(h2_get(1, "/delay/5000"))
            poll(lambda: total(parse(self.server.metrics()), "http_requests_in_flight") >= 1,
                 what="the delay in flight")
            s.sendall(h2_get(3, "/fault/500?action=reset"))
            try:
                while s.recv(65536):
                    pass
            except ConnectionResetError:
                pass
        poll(lambda: count(parse(self.server.metrics()), "/delay/:ms", 0)
             - count(before, "/delay/:ms", 0) == 1, what="the delay's stream to end")
        after = parse(self.server.metrics())
        self.assertEqual(count(after, "/fault/:status", 0) - count(before, "/fault/:status", 0), 1)
        self.assertEqual(gone(after) - gone(before), 0)

    def test_h2load_counts_agree_with_the_server(self):
        for label, url in (("h2", f"https://127.0.0.1:{self.tls_port}/json"),
                           ("h2c", f"http://127.0.0.1:{self.port}/json")):
            with self.subTest(protocol=label):
                before = count(parse(self.server.metrics()), "/json", 200)
                res = subprocess.run(["h2load", "-n", "400", "-c", "4", "-m", "10", url],
                                     capture_output=True, text=True, timeout=120)
                self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
                m = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded",
                              res.stdout)
                self.assertIsNotNone(m, res.stdout)
                self.assertIn("h2", res.stdout)
                self.assertEqual(int(m.group(3)), 400, res.stdout)
                after = count(parse(self.server.metrics()), "/json", 200)
                self.assertEqual(after - before, int(m.group(3)))


class TlsSettingsTest(unittest.TestCase):
    def test_bad_certificate_or_key_is_one_line_and_exit_2(self):
        tmp = tempfile.mkdtemp(prefix="notesd-tls-")
        try:
            cert, key = make_certificate(tmp)
            os.mkdir(os.path.join(tmp, "other"))
            _, other_key = make_certificate(os.path.join(tmp, "other"))
            env = {k: v for k, v in os.environ.items() if k not in ("PORT", "DB_URL")}
            env.update({"DB_URL": "postgresql://u@127.0.0.1:1/x", "PORT": "0",
                        "METRICS_PORT": "0", "ASAN_OPTIONS": "detect_leaks=0"})
            tls = ["--tls-port", "auto"]
            cases = [
                (tls + ["--tls-cert", "/nonexistent.pem", "--tls-key", key], "TLS_CERT"),
                (tls + ["--tls-cert", cert, "--tls-key", "/nonexistent.pem"], "TLS_KEY"),
                (tls + ["--tls-cert", key, "--tls-key", key], "TLS_CERT"),
                (tls + ["--tls-cert", cert, "--tls-key", other_key], "TLS_KEY"),
                (tls + ["--tls-cert", cert], "TLS_KEY"),
            ]
            for args, words in cases:
                with self.subTest(args=args):
                    res = subprocess.run([BIN, *args], env=env, capture_output=True, text=True,
                                         timeout=10)
                    self.assertEqual(res.returncode, 2, res.stderr)
                    self.assertIn(words, res.stderr)
                    self.assertEqual(len(res.stderr.strip().splitlines()), 1, res.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
