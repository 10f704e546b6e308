#!/usr/bin/env python3
"""The request journal (JOURNAL=N, GET /journal on the metrics port): one record
per request, each counted once, in order, with the connection, protocol,
stream, route, status, timings, trace id and X-Request-Id it belongs to; pages
that neither lose nor repeat a record; a ring that goes round tells the reader
what it lost and counts what no reader had (notes_journal_dropped_total), so
the records given plus those lost always equal http_requests_total's growth."""
import http.client
import json
import re
import socket
import unittest

import h2.config
import h2.connection
import h2.events

from notes_testlib import (Notesd, ServerTestCase, create_database, main, poll, request)
from ws_client import WebSocket

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def h2_gets(port, paths, request_id):
    """GETs on one HTTP/2 connection, one stream each, all sent at once; their statuses."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                             header_encoding="utf-8"))
    c.initiate_connection()
    streams = []
    for path in paths:
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                             (":path", path), ("x-request-id", request_id)], end_stream=True)
        streams.append(sid)
    s.sendall(c.data_to_send())
    statuses, ended = {}, set()
    while len(ended) < len(streams):
        data = s.recv(65536)
        if not data:
            break
        for event in c.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                statuses[event.stream_id] = int(dict(event.headers)[":status"])
            elif isinstance(event, h2.events.StreamEnded):
                ended.add(event.stream_id)
            elif isinstance(event, h2.events.DataReceived):
                c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        s.sendall(c.data_to_send())
    s.close()
    return [statuses.get(sid) for sid in streams]


def metric(server, name):
    """The sum of a family's samples (every label set)."""
    total = 0.0
    for line in server.metrics().splitlines():
        m = SAMPLE.match(line)
        if m and m.group(1) == name:
            total += float(m.group(3))
    return total


def page(server, since=0, limit=1000, loop=None):
    """(records, lost lines, next) of one GET /journal."""
    path = f"/journal?since={since}&limit={limit}" + (f"&loop={loop}" if loop is not None else "")
    status, headers, body = request(server.metrics_port, "GET", path)
    assert status == 200, (status, body)
    assert headers["content-type"] == "application/x-ndjson", headers
    lines = [json.loads(line) for line in body.decode().splitlines()]
    return ([r for r in lines if "seq" in r], [r for r in lines if "lost" in r],
            int(headers["journal-next"]))


def read_all(server, loop=None, limit=7):
    """Every record of a loop, paged `limit` at a time; and the lost lines."""
    records, lost, since = [], [], 0
    while True:
        got, gone, since = page(server, since, limit, loop)
        records += got
        lost += gone
        if not got and not gone:
            return records, lost


class JournalTest(ServerTestCase):
    database = "journal"
    env = {"JOURNAL": "1000"}
    args = ("--h2c",)

    def test_every_request_once_with_what_it_belongs_to(self):
        before = metric(self.server, "http_requests_total")
        since = 0
        while True:  # skip what earlier requests left (the start-up probe, other tests)
            got, _, nxt = page(self.server, since, 1000)
            if not got:
                break
            since = nxt
        # Three requests on one keep-alive connection, each with its own id.
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        for i in range(3):
            self.assertEqual(request(self.port, "GET", "/json", headers={"X-Request-Id": f"ka-{i}"},
                                     conn=conn)[0], 200)
        conn.close()
        # One per connection: a database read, a write, a 404, a traced one, a long id.
        self.assertEqual(request(self.port, "GET", "/notes/7",
                                 headers={"X-Request-Id": "read"})[0], 200)
        self.assertEqual(request(self.port, "POST", "/notes",
                                 body={"title": "t", "body": "b", "tag": "x"},
                                 headers={"X-Request-Id": "write"})[0], 201)
        self.assertEqual(request(self.port, "GET", "/nowhere", headers={"X-Request-Id": "404"})[0],
                         404)
        self.assertEqual(request(self.port, "GET", "/status",
                                 headers={"traceparent": TRACE, "X-Request-Id": "traced"})[0], 200)
        long_id = "L" * 100 + '"'
        self.assertEqual(request(self.port, "GET", "/", headers={"X-Request-Id": long_id})[0], 200)
        # Three streams of one HTTP/2 connection (prior knowledge, python3-h2).
        self.assertEqual(h2_gets(self.port, ["/json", "/status", "/"], "h2"), [200, 200, 200])

        grew = metric(self.server, "http_requests_total") - before
        records, lost, nxt = [], [], since
        while True:
            got, gone, nxt = page(self.server, nxt, 4)
            records += got
            lost += gone
            if not got:
                break
        self.assertEqual(lost, [])
        self.assertEqual(len(records), grew, "a request went unrecorded, or was recorded twice")
        seqs = [r["seq"] for r in records]
        self.assertEqual(seqs, list(range(since + 1, since + 1 + len(records))))
        by_id = {}
        for r in records:
            by_id.setdefault(r.get("request_id"), []).append(r)

        keep_alive = by_id.pop("ka-0") + by_id.pop("ka-1") + by_id.pop("ka-2")
        self.assertEqual(len({r["conn"] for r in keep_alive}), 1, keep_alive)
        self.assertEqual([r["route"] for r in keep_alive], ["/json"] * 3)
        others = [by_id[k][0]["conn"] for k in ("read", "write", "404", "traced")]
        self.assertEqual(len(set(others) | {keep_alive[0]["conn"]}), 5, "connections share ids")

        read, write = by_id["read"][0], by_id["write"][0]
        self.assertEqual((read["route"], read["status"], read["method"]), ("/notes/:id", 200, "GET"))
        self.assertGreater(read["query_us"], 0)
        # answered after its query came back, and before the server's end of it
        self.assertGreaterEqual(read["answer_us"], read["query_us"])
        self.assertEqual((write["route"], write["status"], write["method"]), ("/notes", 201, "POST"))
        self.assertEqual(write["bytes_in"], len(json.dumps({"title": "t", "body": "b", "tag": "x"})))
        self.assertGreater(write["bytes_out"], 0)
        self.assertEqual((by_id["404"][0]["route"], by_id["404"][0]["status"]), ("other", 404))
        self.assertEqual(by_id["traced"][0]["trace_id"], TRACE[3:35])
        self.assertNotIn("trace_id", read)
        cut = by_id[long_id[:64]][0]
        self.assertTrue(cut["request_id_cut"])

        h2 = sorted(by_id["h2"], key=lambda r: r["stream"])
        self.assertEqual([(r["proto"], r["stream"]) for r in h2], [("h2", 1), ("h2", 3), ("h2", 5)])
        self.assertEqual(len({r["conn"] for r in h2}), 1)
        self.assertTrue(all(r["proto"] == "h1" and r["stream"] == 0 for r in keep_alive))

        for r in records:
            with self.subTest(seq=r["seq"]):
                self.assertEqual((r["kind"], r["loop"], r["tls"]), ("http", 0, False))
                self.assertLessEqual(r["conn_at_us"], r["arrived_us"])
                self.assertLessEqual(r["arrived_us"], r["started_us"])
                self.assertLessEqual(r["started_us"], r["ended_us"])
                self.assertLessEqual(r["started_us"] + r["answer_us"], r["ended_us"] + 1)

    def test_websocket_messages_have_records_of_their_own(self):
        """A WebSocket's handshake is one request (101); then every data message it
        receives (ws_in) and sends (ws_out) is a record, on the handshake's
        connection and route, with its X-Request-Id, trace id and payload size:
        the handshake's record but for its kind, bytes and times."""
        since = 0
        while True:
            got, _, nxt = page(self.server, since, 1000)
            if not got:
                break
            since = nxt
        ws = WebSocket(self.port, "/ws/echo",
                       headers={"X-Request-Id": "ws-1", "traceparent": TRACE})
        for text in ("a", "bb", "ccc"):
            ws.send(text.encode())
            self.assertEqual(ws.recv()[1], text.encode())
        ws.close()
        poll(lambda: len(page(self.server, since, 1000)[0]) >= 7, what="the seven records")
        records = page(self.server, since, 1000)[0]
        mine = [r for r in records if r.get("request_id") == "ws-1"]
        kinds = [(r["kind"], r["bytes_in"], r["bytes_out"]) for r in mine]
        self.assertEqual(kinds, [("http", 0, 0), ("ws_in", 1, 0), ("ws_out", 0, 1),
                                 ("ws_in", 2, 0), ("ws_out", 0, 2), ("ws_in", 3, 0),
                                 ("ws_out", 0, 3)])
        self.assertEqual({r["conn"] for r in mine}, {mine[0]["conn"]})
        self.assertEqual({r["route"] for r in mine}, {"/ws/echo"})
        self.assertEqual(mine[0]["status"], 101)
        self.assertEqual([r["seq"] for r in mine], sorted(r["seq"] for r in mine))
        self.assertEqual(mine[0]["trace_id"], TRACE.split("-")[1])
        own = ("seq", "kind", "bytes_in", "bytes_out", "arrived_us", "started_us", "ended_us",
               "answer_us")
        shared = {k: v for k, v in mine[0].items() if k not in own}
        for r in mine[1:]:
            with self.subTest(seq=r["seq"]):
                self.assertEqual({k: v for k, v in r.items() if k not in own}, shared)
                self.assertEqual(r["arrived_us"], r["started_us"])
                self.assertEqual(r["started_us"], r["ended_us"])
                self.assertEqual(r["answer_us"], 0)

    def test_the_metrics_port_and_bad_pages(self):
        for path in ("/journal?loop=1", "/journal?limit=0", "/journal?limit=5001",
                     "/journal?since=x"):
            with self.subTest(path=path):
                status, _, body = request(self.server.metrics_port, "GET", path)
                self.assertEqual(status, 400, body)
                self.assertIn("error", json.loads(body))
        # the metrics port's own requests are not journaled, as they are not counted
        _, _, newest = page(self.server, 0, 1)
        request(self.server.metrics_port, "GET", "/metrics")
        got, _, _ = page(self.server, newest, 10)
        self.assertFalse([r for r in got if r["route"] in ("/metrics", "/journal")])


class JournalRingTest(unittest.TestCase):
    """JOURNAL=50 and 120 requests: the ring keeps the newest 50."""

    def test_what_the_ring_lost_is_told_and_counted(self):
        url = create_database("journal_ring")
        server = Notesd(url, env={"JOURNAL": "50"})
        try:
            before = metric(server, "notes_journal_records_total")
            for i in range(120):
                self.assertEqual(request(server.port, "GET", "/json")[0], 200)
            written = metric(server, "notes_journal_records_total")
            self.assertEqual(written - before, 120)
            records, lost = read_all(server, limit=1000)
            self.assertEqual(len(records), 50)
            self.assertEqual(len(lost), 1)
            self.assertEqual(lost[0]["from"], 1)
            self.assertEqual(lost[0]["to"], written - 50)
            self.assertEqual(lost[0]["lost"] + len(records), written)
            # nobody had read them: every record overwritten is a drop
            self.assertEqual(metric(server, "notes_journal_dropped_total"), written - 50)
            self.assertEqual(metric(server, "notes_journal_capacity"), 50)
            # read again: nothing new, nothing lost
            self.assertEqual(page(server, records[-1]["seq"], 10)[:2], ([], []))
        finally:
            self.assertEqual(server.stop(), 0)

    def test_off_by_default_and_per_loop_with_threads(self):
        url = create_database("journal_loops")
        off = Notesd(url)
        try:
            status, _, body = request(off.metrics_port, "GET", "/journal")
            self.assertEqual(status, 404, body)
            self.assertIn("JOURNAL", json.loads(body)["error"])
            self.assertEqual(metric(off, "notes_journal_capacity"), 0)
        finally:
            self.assertEqual(off.stop(), 0)
        server = Notesd(url, args=("--threads", "2", "--pool-max", "4"), env={"JOURNAL": "500"})
        try:
            for i in range(40):  # a connection each: the kernel spreads them over the loops
                self.assertEqual(request(server.port, "GET", "/json")[0], 200)
            server.settled_metrics()  # every request disposed of, so journaled and counted
            total = metric(server, "http_requests_total")  # since start-up, its probes too
            seen = []
            for loop in (0, 1):
                records, lost = read_all(server, loop=loop)
                self.assertEqual(lost, [])
                self.assertTrue(all(r["loop"] == loop for r in records))
                self.assertEqual([r["seq"] for r in records], list(range(1, len(records) + 1)))
                seen += records
            # the start-up probes and the 40, each once, on one loop or the other
            self.assertEqual(len([r for r in seen if r["route"] == "/json"]), 40)
            self.assertEqual(len(seen), total)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    main()
