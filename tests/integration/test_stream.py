#!/usr/bin/env python3
"""The streaming routes over plain HTTP: /sse (every event's exact bytes, ids,
Last-Event-ID, the schedule with and without jitter, a client that leaves
mid-stream, the events counter, HTTP/2) and /stream/:n (exact bytes, chunked,
a million lines without the server's memory growing)."""
import http.client
import json
import re
import shutil
import socket
import struct
import subprocess
import time

from notes_testlib import ServerTestCase, main, poll, proc_stat, request

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
EVENT = re.compile(rb'id: (\d+)\ndata: (\{"id":(\d+),"of":(\d+),"sent_us":(\d+)\})\n\n')


def parse(text):
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and not line.startswith("#"):
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def count(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def events(body):
    """The events of an SSE body, checked to cover it byte for byte: [(id, of, sent_us)]."""
    out, at = [], 0
    for m in EVENT.finditer(body):
        assert m.start() == at, f"bytes between events at {at}: {body[at:m.start()]!r}"
        assert m.group(1) == m.group(3)
        out.append((int(m.group(1)), int(m.group(4)), int(m.group(5))))
        at = m.end()
    assert at == len(body), f"trailing bytes: {body[at:]!r}"
    return out


def exchange(port, data, timeout=30):
    """Sends raw bytes; returns all the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def get(port, path, headers=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        res = conn.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


class StreamTest(ServerTestCase):
    database = "stream"

    def scrape(self):
        return parse(self.server.metrics())

    def test_sse_sends_every_event_exactly_on_its_schedule(self):
        before = self.scrape()
        t0 = time.time()
        status, headers, body = get(self.port, "/sse?count=6&delay_ms=40")
        elapsed = time.time() - t0
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/event-stream; charset=utf-8")
        self.assertEqual(headers["cache-control"], "no-cache")
        self.assertEqual(headers["transfer-encoding"], "chunked")
        self.assertNotIn("content-length", headers)
        evs = events(body)
        self.assertEqual([e[0] for e in evs], [1, 2, 3, 4, 5, 6])
        self.assertTrue(all(e[1] == 6 for e in evs))
        # event k leaves (k - 1) * 40 ms after the handler's start, never earlier; that start
        # is after t0 (the same wall clock), and the first event may itself leave late
        for k, e in enumerate(evs):
            self.assertGreaterEqual(e[2] - t0 * 1e6, k * 40000 - 1000, evs)
        self.assertGreaterEqual(elapsed, 0.2 - 0.005)
        after = self.scrape()
        self.assertEqual(count(after, "notes_sse_events_total") -
                         count(before, "notes_sse_events_total"), 6)
        labels = dict(method="GET", path="/sse", status_code="200")
        self.assertEqual(count(after, "http_requests_total", **labels) -
                         count(before, "http_requests_total", **labels), 1)

    def test_jitter_moves_events_but_keeps_their_order_and_pace(self):
        t0 = time.time()
        _, _, body = get(self.port, "/sse?count=30&delay_ms=20&jitter=8")
        evs = events(body)
        self.assertEqual([e[0] for e in evs], list(range(1, 31)))
        sent = [e[2] for e in evs]
        self.assertEqual(sent, sorted(sent))
        # each within its nominal instant - 8 ms (never earlier; later only by the loop's
        # lateness), the instants counted from the handler's start, which is after t0
        for k, t in enumerate(sent):
            self.assertGreaterEqual(t - t0 * 1e6, k * 20000 - 8000 - 1000)
        # the moves are real: not every gap is 20 ms
        gaps = {round((b - a) / 1000) for a, b in zip(sent, sent[1:])}
        self.assertGreater(len(gaps), 3, gaps)

    def test_last_event_id_resumes_after_it(self):
        _, _, body = get(self.port, "/sse?count=5&delay_ms=10", {"Last-Event-ID": "3"})
        self.assertEqual([e[0] for e in events(body)], [4, 5])
        status, headers, body = get(self.port, "/sse?count=5", {"Last-Event-ID": "5"})
        self.assertEqual((status, body), (204, b""))
        status, _, body = get(self.port, "/sse?count=5", {"Last-Event-ID": "7"})
        self.assertEqual(status, 204)
        status, _, body = get(self.port, "/sse", {"Last-Event-ID": "three"})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(body), {"error": "Last-Event-ID must be a whole number"})

    def test_last_event_id_past_the_count_is_204_whatever_its_size(self):
        for big in ("100000000000000000000000000", "18446744073709551616", "0" * 30 + "6"):
            status, _, body = get(self.port, "/sse?count=5", {"Last-Event-ID": big})
            self.assertEqual((status, body), (204, b""), big)
        status, _, _ = get(self.port, "/sse?count=5", {"Last-Event-ID": "1" * 30 + "x"})
        self.assertEqual(status, 400)

    def test_last_event_id_is_read_without_the_whitespace_around_it(self):
        """RFC 9110 section 5.5; h2o 2.2.5 keeps the trailing spaces, so "2 " reached the
        parser as it came."""
        for value in ("2 ", "2\t", " 2", " \t2 \t"):
            answer = exchange(self.port, ("GET /sse?count=4&delay_ms=0 HTTP/1.1\r\n"
                                             "Host: x\r\nConnection: close\r\n"
                                             f"Last-Event-ID: {value}\r\n\r\n").encode())
            self.assertTrue(answer.startswith(b"HTTP/1.1 200 "), (value, answer[:60]))
            self.assertEqual(re.findall(rb"id: (\d+)\n", answer), [b"3", b"4"], repr(value))

    def test_knobs_out_of_range_are_400_naming_the_knob(self):
        for query, knob in (("count=0", "count"), ("count=100001", "count"),
                            ("delay_ms=60001", "delay_ms"), ("jitter=-1", "jitter"),
                            ("count=x", "count")):
            status, _, body = request(self.port, "GET", f"/sse?{query}")
            self.assertEqual(status, 400, query)
            self.assertTrue(json.loads(body)["error"].startswith(knob + " must be"), body)
        for n in ("x", "-1", "1000001", "1.5"):
            status, _, body = request(self.port, "GET", f"/stream/{n}")
            self.assertEqual(status, 400, n)

    def test_a_client_that_leaves_mid_stream_frees_the_request(self):
        before = self.scrape()
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            s.sendall(b"GET /sse?count=1000&delay_ms=50 HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while data.count(b"\n\n") < 3:
                data += s.recv(65536)
        # the next event's write fails; the request ends and its timer is taken back
        poll(lambda: count(self.scrape(), "http_requests_in_flight") == 0, timeout=5,
             what="the abandoned stream to end")
        time.sleep(0.3)
        sent = count(self.scrape(), "notes_sse_events_total") - count(before,
                                                                      "notes_sse_events_total")
        self.assertLess(sent, 10)

    def delta(self, before, name, **labels):
        return count(self.scrape(), name, **labels) - count(before, name, **labels)

    def test_a_client_that_leaves_between_events_is_noticed_when_it_leaves(self):
        """Events 30 s apart: a client that closes (FIN) or resets after the first one is
        noticed when it goes, not by the next event's write: the request ends well before the
        next event was due, counted as gone by how it went, a 200 whose duration ends where
        the client left."""
        for how, reason in (("closes", "half_closed"), ("resets", "reset")):
            before = self.scrape()
            opened = time.monotonic()
            s = socket.create_connection(("127.0.0.1", self.port))
            s.sendall(b"GET /sse?count=3&delay_ms=30000 HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while b"data: " not in data or not data.endswith(b"\n\n\r\n"):
                data += s.recv(65536)
            if how == "resets":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            left = time.monotonic()
            s.close()
            # a third of delay_ms: long before the next event's write could have told
            poll(lambda: count(self.scrape(), "http_requests_in_flight") == 0, timeout=10,
                 what="the stream to end when its client left")
            noticed = time.monotonic() - left
            window_s = time.monotonic() - opened  # the request's life lies inside it
            labels = dict(method="GET", path="/sse", status_code="200")
            self.assertEqual(self.delta(before, "http_requests_total", **labels), 1, how)
            self.assertEqual(self.delta(before, "notes_http_clients_gone_total", reason=reason),
                             1, how)
            self.assertLessEqual(self.delta(before, "http_request_duration_seconds_sum", **labels),
                                 window_s, how)
            self.assertEqual(self.delta(before, "notes_sse_events_total"), 1, how)
            print(f"\n  a client that {how} between events: the stream ended "
                  f"{noticed * 1000:.0f} ms later (the next event was due in 30 s)", flush=True)

    def test_a_stream_cut_short_by_its_client_is_counted_as_gone(self):
        before = self.scrape()
        s = socket.create_connection(("127.0.0.1", self.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        s.sendall(b"GET /stream/1000000 HTTP/1.1\r\nHost: x\r\n\r\n")
        got = 0
        while got < 100000:
            got += len(s.recv(65536))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        poll(lambda: count(self.scrape(), "http_requests_in_flight") == 0, timeout=10,
             what="the stream to end when its client left")
        labels = dict(method="GET", path="/stream/:n", status_code="200")
        self.assertEqual(self.delta(before, "http_requests_total", **labels), 1)
        gone = sum(self.delta(before, "notes_http_clients_gone_total", reason=r)
                   for r in ("reset", "aborted", "half_closed"))
        self.assertEqual(gone, 1)
        # a stream that ends whole is not counted
        before = self.scrape()
        self.assertEqual(get(self.port, "/stream/10")[0], 200)
        self.assertEqual(self.delta(before, "notes_http_clients_gone_total", reason="aborted"), 0)

    def test_stream_lines_are_exact(self):
        for n in (0, 1, 10, 1234):
            status, headers, body = get(self.port, f"/stream/{n}")
            self.assertEqual(status, 200)
            self.assertEqual(headers["content-type"], "application/x-ndjson; charset=utf-8")
            self.assertEqual(headers.get("transfer-encoding"), "chunked")
            want = b"".join(b'{"id":%d,"of":%d}\n' % (k, n) for k in range(1, n + 1))
            self.assertEqual(body, want)
        status, headers, body = request(self.port, "HEAD", "/stream/5")
        self.assertEqual((status, body), (200, b""))

    def test_a_million_lines_stream_without_memory(self):
        n = 1000000
        rss_before = proc_stat(self.server.proc.pid)[1]
        want_len = sum(len(b'{"id":%d,"of":%d}\n' % (k, n)) for k in range(1, n + 1))
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            s.sendall(f"GET /stream/{n} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            f = s.makefile("rb")
            status = f.readline()
            self.assertIn(b" 200 ", status)
            while f.readline() not in (b"\r\n", b""):
                pass
            body_len, lines, chunks = 0, 0, 0
            while True:
                size = int(f.readline().split(b";")[0], 16)
                if size == 0:
                    break
                chunk = f.read(size)
                f.readline()
                chunks += 1
                body_len += len(chunk)
                lines += chunk.count(b"\n")
                self.assertTrue(chunk.endswith(b"\n"))  # whole lines per chunk
        self.assertEqual((body_len, lines), (want_len, n))
        # at most 16 KiB of whole lines to h2o at a time: one HTTP chunk each
        self.assertGreaterEqual(chunks, -(-body_len // 16384))
        self.assertLessEqual(chunks, body_len // (16384 - 32) + 1)
        self.assertLess(proc_stat(self.server.proc.pid)[1] - rss_before, 4 << 20)

    def test_an_http2_client_that_leaves_between_events_is_counted_as_gone(self):
        if shutil.which("curl") is None:
            self.skipTest("no curl")
        from notes_testlib import Notesd
        server = Notesd(self.db_url, args=["--h2c"])
        try:
            before = parse(server.metrics())
            opened = time.monotonic()
            out = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "--max-time", "1",
                                  f"http://127.0.0.1:{server.port}/sse?count=3&delay_ms=30000"],
                                 capture_output=True, timeout=30)
            self.assertEqual(out.returncode, 28)  # curl's own timeout: it left
            poll(lambda: count(parse(server.metrics()), "http_requests_in_flight") == 0,
                 timeout=10, what="the stream to end when its client left")
            window_s = time.monotonic() - opened  # the stream's life lies inside it
            after = parse(server.metrics())
            labels = dict(method="GET", path="/sse", status_code="200")
            gone = sum(count(after, "notes_http_clients_gone_total", reason=r) -
                       count(before, "notes_http_clients_gone_total", reason=r)
                       for r in ("reset", "aborted", "half_closed"))
            self.assertEqual(gone, 1)
            self.assertLessEqual(count(after, "http_request_duration_seconds_sum", **labels) -
                                 count(before, "http_request_duration_seconds_sum", **labels), window_s)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_sse_over_http2_sends_the_same_events(self):
        if shutil.which("curl") is None:
            self.skipTest("no curl")
        from notes_testlib import Notesd
        server = Notesd(self.db_url, args=["--h2c"])
        try:
            out = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-D", "-",
                                  f"http://127.0.0.1:{server.port}/sse?count=4&delay_ms=10"],
                                 capture_output=True, timeout=30).stdout
            head, _, body = out.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/2 200"), head)
            self.assertEqual([e[0] for e in events(body)], [1, 2, 3, 4])
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    main()
