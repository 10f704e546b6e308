#!/usr/bin/env python3
"""Valid requests at the edges, answered as the Express 5 reference answers
them: HTTP framing (RFC 9112), the router's matching (caseSensitive and strict
off, no dot-segment normalising), express.json's Content-Encoding (gzip, deflate, br), charset,
BOM and JSON.parse's lone surrogates; and the wording of the errors at those
edges. Where Express refuses, notesd still refuses (with a JSON reason)."""
import gzip
import json
import re
import socket
import zlib

import brotli  # Debian's python3-brotli
import h2.config  # Debian's python3-h2
import h2.connection
import h2.events

from notes_testlib import (ServerTestCase, table_state, expected_list, expected_note, main,
                           request)

JSON_CT = "application/json; charset=utf-8"
GOOD = '{"title":"t","body":"b","tag":"edges"}'
LIMIT = 102400


def exchange(port, data, timeout=10):
    """Sends raw bytes, then reads until the server closes the connection (a reset
    after its answer, as for a body it did not read, ends the reading too)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before reading it all
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                return out
            if not chunk:
                return out
            out += chunk


def status_of(raw):
    return int(raw.split(b" ", 2)[1])


def body_of(raw):
    return raw.partition(b"\r\n\r\n")[2]


def post(headers, body):
    """A POST /notes head with the given header lines, and its body."""
    head = "POST /notes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    return (head + "".join(f"{h}\r\n" for h in headers) + "\r\n").encode() + body


class FramingTest(ServerTestCase):
    database = "edges_framing"

    def test_two_different_content_lengths_get_400_and_the_connection_closes(self):
        # With the first length h2o would read "{}" as the body and then serve
        # the rest as a second request: an insert the client never framed.
        smuggled = ("POST /notes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(GOOD)}\r\n\r\n{GOOD}").encode()
        before = table_state(self.db)
        raw = exchange(self.port, post(["Content-Length: 2", f"Content-Length: {2 + len(smuggled)}"],
                                       b"{}" + smuggled))
        self.assertEqual(status_of(raw), 400, raw)
        self.assertEqual(raw.count(b"HTTP/1.1 "), 1, "one answer, then the connection closed")
        self.assertIn(b"\r\nConnection: close\r\n", raw)
        self.assertIn(b"\r\ncontent-type: application/json; charset=utf-8\r\n", raw)
        self.assertIn("Content-Length", json.loads(body_of(raw))["error"])
        self.assertEqual(table_state(self.db), before, "the smuggled request ran")

    def test_a_repeated_content_length_gets_400_even_when_the_values_agree(self):
        # Node's parser refuses it, so Express never answers such a request.
        before = table_state(self.db)
        raw = exchange(self.port, post([f"Content-Length: {len(GOOD)}",
                                        f"content-length:  {len(GOOD)}"], GOOD.encode()))
        self.assertEqual(status_of(raw), 400, raw)
        self.assertIn(b"\r\nConnection: close\r\n", raw)
        self.assertEqual(table_state(self.db), before)

    def test_content_length_with_transfer_encoding_gets_400(self):
        before = table_state(self.db)
        chunked = f"{len(GOOD):x}\r\n{GOOD}\r\n0\r\n\r\n".encode()
        raw = exchange(self.port, post(["Content-Length: 5", "Transfer-Encoding: chunked"], chunked))
        self.assertEqual(status_of(raw), 400, raw)
        self.assertIn(b"\r\nConnection: close\r\n", raw)
        self.assertIn("Transfer-Encoding", json.loads(body_of(raw))["error"])
        self.assertEqual(table_state(self.db), before)

    def test_absolute_form_is_routed_by_its_path(self):
        note3 = expected_note(self.db, 3)
        for target, status, body in (("http://example.com/status", 200, b'{"status":"ok"}'),
                                     ("HTTP://127.0.0.1:1/notes/3", 200, note3),
                                     ("https://example.com/notes/3?x=1", 200, note3),
                                     ("http://example.com/notes?tag=js", 200,
                                      expected_list(self.db, "js")),
                                     ("http://example.com", 200, b"Hello World!"),
                                     ("http://example.com?x", 200, b"Hello World!"),
                                     ("http://example.com//", 200, b"Hello World!"),
                                     ("http://example.com/nope", 404, b'{"error":"not found"}')):
            with self.subTest(target=target):
                raw = exchange(self.port, f"GET {target} HTTP/1.1\r\nHost: x\r\n"
                               "Connection: close\r\n\r\n".encode())
                self.assertEqual((status_of(raw), body_of(raw)), (status, body))


class RoutingTest(ServerTestCase):
    database = "edges_routing"

    def test_paths_match_in_any_case_and_with_one_trailing_slash(self):
        note3, js = expected_note(self.db, 3), expected_list(self.db, "js")
        for path, body in (("/NOTES/3", note3), ("/notes/3/", note3), ("/Notes/3/", note3),
                           ("/Notes?tag=js", js), ("/NOTES/?tag=js", js),
                           ("/status/", b'{"status":"ok"}'), ("/STATUS", b'{"status":"ok"}'),
                           ("/Primes/?below=10", b'{"below":10,"count":4}')):
            with self.subTest(path=path):
                status, headers, got = request(self.port, "GET", path)
                self.assertEqual((status, got), (200, body))
                self.assertEqual(headers["content-type"], JSON_CT)
        self.assertEqual(request(self.port, "GET", "//")[::2], (200, b"Hello World!"))
        status, headers, body = request(self.port, "GET", "/JSON")
        self.assertEqual((status, headers["content-type"]), (200, JSON_CT))
        self.assertEqual(list(json.loads(body)), ["id", "title", "body", "tag", "created_at"])

    def test_writes_match_in_any_case_too(self):
        status, _, body = request(self.port, "POST", "/Notes/", body=json.loads(GOOD))
        self.assertEqual(status, 201, body)
        note_id = json.loads(body)["id"]
        status, _, body = request(self.port, "PUT", f"/NOTES/{note_id}/",
                                  body={"title": "u", "body": "v", "tag": "w"})
        self.assertEqual((status, body), (200, expected_note(self.db, int(note_id))))
        self.assertEqual(json.loads(body)["title"], "u")

    def test_the_metrics_label_stays_the_route_template(self):
        def count(path):
            m = re.search(r'^http_requests_total\{method="GET",path="' + re.escape(path) +
                          r'",status_code="200"\} (\d+)$', self.server.metrics(), re.M)
            return int(m.group(1)) if m else 0
        before = count("/notes/:id"), count("/json")
        request(self.port, "GET", "/NOTES/3/")
        request(self.port, "GET", "/JSON")
        self.assertEqual((count("/notes/:id"), count("/json")), (before[0] + 1, before[1] + 1))
        page = self.server.metrics()
        self.assertNotIn("NOTES", page)
        self.assertNotIn("JSON", page)

    def test_dot_segments_are_not_normalised(self):
        # Express matches the path as sent: "." and ".." are segments like any other.
        for path in ("/notes/./3", "/notes/x/../3", "/notes/%2e/3", "/notes/%2E%2E/notes/3",
                     "/./status", "/json/.", "/x/../status", "//status"):
            with self.subTest(path=path):
                status, headers, body = request(self.port, "GET", path)
                self.assertEqual((status, body), (404, b'{"error":"not found"}'))
                self.assertEqual(headers["content-type"], JSON_CT)

    def test_a_param_is_percent_decoded_after_matching(self):
        self.assertEqual(request(self.port, "GET", "/notes/%33")[2], expected_note(self.db, 3))
        # "%2F" is not a separator when matching: one segment, which is no id
        status, _, body = request(self.port, "GET", "/notes/1%2F2")
        self.assertEqual(status, 400, body)

    def test_the_metrics_port_answers_unknown_paths_in_json(self):
        for path in ("/", "/nope", "/metricsx"):
            with self.subTest(path=path):
                status, headers, body = request(self.server.metrics_port, "GET", path)
                self.assertEqual((status, body), (404, b'{"error":"not found"}'))
                self.assertEqual(headers["content-type"], JSON_CT)
        self.assertEqual(request(self.server.metrics_port, "GET", "/Healthz/")[0], 200)


def h2_statuses(port, header_sets):
    """One HTTP/2 connection, a GET /json stream per set of extra headers (sent as they
    are, unchecked, with HPACK's incremental indexing); the statuses, in order."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    c = h2.connection.H2Connection(h2.config.H2Configuration(
        client_side=True, header_encoding=None, validate_outbound_headers=False,
        normalize_outbound_headers=False))
    c.initiate_connection()
    ids = []
    for extra in header_sets:
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"x"),
                             (b":path", b"/json"), *extra], end_stream=True)
        ids.append(sid)
    s.sendall(c.data_to_send())
    statuses, ended = {}, set()
    while len(ended) < len(ids):
        data = s.recv(65536)
        if not data:
            break
        for event in c.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                statuses[event.stream_id] = int(dict(event.headers)[b":status"])
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                ended.add(event.stream_id)
        s.sendall(c.data_to_send())
    s.close()
    return [statuses.get(sid) for sid in ids]


class HpackTest(ServerTestCase):
    """libh2o 2.2.5's HPACK decoder and a refused header value (docs/decisions.md,
    "libh2o 2.2.5"): pinned, so a change of library shows."""
    database = "edges_hpack"
    args = ("--h2c",)

    def test_a_refused_value_spoils_later_streams_that_refer_to_it(self):
        bad, good = [(b"x-request-id", b"a\x01b")], [(b"x-request-id", b"fine")]
        self.assertEqual(h2_statuses(self.port, [bad, good, []]), [400, 400, 200])
        self.assertEqual(h2_statuses(self.port, [good, good, []]), [200, 200, 200])


class BodyTest(ServerTestCase):
    database = "edges_body"

    def post(self, body, headers):
        status, _, got = request(self.port, "POST", "/notes", body=body,
                                 headers={"Content-Type": "application/json", **headers})
        return status, got

    def assert_stored(self, status, got, title="t"):
        self.assertEqual(status, 201, got)
        obj = json.loads(got)
        self.assertEqual(got, expected_note(self.db, int(obj["id"])))
        self.assertEqual(obj["title"], title)
        return obj

    def test_gzip_deflate_and_br_bodies_are_inflated(self):
        for encoding, data in (("gzip", gzip.compress(GOOD.encode())),
                               ("GZIP", gzip.compress(GOOD.encode())),
                               ("deflate", zlib.compress(GOOD.encode())),
                               ("br", brotli.compress(GOOD.encode())),
                               ("identity", GOOD.encode())):
            with self.subTest(encoding=encoding):
                self.assert_stored(*self.post(data, {"Content-Encoding": encoding}))

    def test_gzip_members_one_after_another_are_one_body(self):
        half = len(GOOD) // 2
        data = gzip.compress(GOOD[:half].encode()) + gzip.compress(GOOD[half:].encode())
        self.assert_stored(*self.post(data, {"Content-Encoding": "gzip"}))

    def test_the_limit_applies_to_the_inflated_size(self):
        filler = LIMIT - len(json.dumps({"title": "", "body": "b", "tag": "t"}))
        exact = json.dumps({"title": "x" * filler, "body": "b", "tag": "t"}).encode()
        self.assertEqual(len(exact), LIMIT)
        self.assert_stored(*self.post(gzip.compress(exact), {"Content-Encoding": "gzip"}),
                           title="x" * filler)
        self.assert_stored(*self.post(brotli.compress(exact), {"Content-Encoding": "br"}),
                           title="x" * filler)
        before = table_state(self.db)
        bomb = b'{"title":"' + b" " * 20_000_000 + b'"}'
        for encoding, data in (("gzip", gzip.compress(exact + b" ")),
                               ("gzip", gzip.compress(bomb)),  # 20 kB on the wire
                               ("br", brotli.compress(exact + b" ")),
                               ("br", brotli.compress(bomb))):  # a few dozen bytes
            with self.subTest(encoding=encoding, size=len(data)):
                status, got = self.post(data, {"Content-Encoding": encoding})
                self.assertEqual(status, 413, got)
                self.assertEqual(json.loads(got), {"error": f"request body larger than {LIMIT} bytes"})
        self.assertEqual(table_state(self.db), before)

    def test_compressed_bodies_that_do_not_inflate_get_400(self):
        whole = gzip.compress(GOOD.encode())
        for name, encoding, data in (("not gzip", "gzip", GOOD.encode()),
                                     ("truncated", "gzip", whole[:-10]),
                                     ("raw deflate", "deflate", zlib.compress(GOOD.encode())[2:-4]),
                                     ("not br", "br", GOOD.encode()),
                                     ("empty", "gzip", b"")):
            with self.subTest(name):
                status, got = self.post(data, {"Content-Encoding": encoding})
                self.assertEqual(status, 400, got)
                self.assertIn(encoding, json.loads(got)["error"])

    def test_other_encodings_get_415_as_body_parser_answers(self):
        for encoding in ("compress", "x-gzip", "gzip, gzip"):
            with self.subTest(encoding=encoding):
                status, got = self.post(GOOD.encode(), {"Content-Encoding": encoding})
                self.assertEqual(status, 415, got)
                self.assertEqual(json.loads(got),
                                 {"error": f'unsupported content encoding "{encoding}"'})

    def test_a_repeated_content_encoding_is_one_unknown_value(self):
        raw = exchange(self.port, post(["Content-Encoding: gzip", "Content-Encoding: gzip",
                                        f"Content-Length: {len(GOOD)}", "Connection: close"],
                                       GOOD.encode()))
        self.assertEqual(status_of(raw), 415, raw)
        self.assertEqual(json.loads(body_of(raw)),
                         {"error": 'unsupported content encoding "gzip, gzip"'})

    def test_a_utf8_bom_is_stripped(self):
        self.assert_stored(*self.post(b"\xef\xbb\xbf" + GOOD.encode(), {}))
        self.assert_stored(*self.post(gzip.compress(b"\xef\xbb\xbf" + GOOD.encode()),
                                      {"Content-Encoding": "gzip"}))

    def test_a_charset_other_than_utf8_gets_415(self):
        for ct, shown in (("application/json; charset=iso-8859-1", "ISO-8859-1"),
                          ("application/json; charset=utf8", "UTF8"),
                          ('application/json; charset="latin1"', "LATIN1")):
            with self.subTest(ct=ct):
                status, got = self.post(GOOD.encode(), {"Content-Type": ct})
                self.assertEqual(status, 415, got)
                self.assertEqual(json.loads(got), {"error": f'unsupported charset "{shown}"'})
        for ct in ("application/json; charset=UTF-8", 'application/json; charset="utf-8"',
                   "application/json;charset=Utf-8; foo=bar"):
            with self.subTest(ct=ct):
                self.assert_stored(*self.post(GOOD.encode(), {"Content-Type": ct}))

    def test_lone_surrogates_are_stored_as_replacement_characters(self):
        for escaped, stored in (("\\ud800", "\ufffd"), ("\\udc00", "\ufffd"),
                                ("\\udc00\\ud800", "\ufffd\ufffd"), ("a\\uD800b", "a\ufffdb"),
                                ("\\ud800\\ud800\\udc00", "\ufffd\U00010000"),
                                ("\\ud83d\\ude00", "\U0001F600"), ("\\\\ud800", "\\ud800")):
            with self.subTest(escaped=escaped):
                body = '{"title":"' + escaped + '","body":"b","tag":"t"}'
                obj = self.assert_stored(*self.post(body.encode(), {}), title=stored)
                with self.db.cursor() as cur:
                    cur.execute("select convert_to(title, 'UTF8') from notes where id = %s",
                                (obj["id"],))
                    self.assertEqual(bytes(cur.fetchone()[0]), stored.encode())


class BodyLimitTest(ServerTestCase):
    """MAX_BODY_BYTES holds while the body is read: a declared Content-Length over
    it is refused from the head, a chunked body at it, with notesd's JSON 413
    (never h2o's text one), counted like every answer."""
    database = "edges_body_limit"

    def count(self, method, path, status):
        m = re.search(r'^http_requests_total\{method="%s",path="%s",status_code="%d"\} (\d+)$'
                      % (method, re.escape(path), status), self.server.metrics(), re.M)
        return int(m.group(1)) if m else 0

    def assert_refused(self, raw):
        self.assertEqual(status_of(raw), 413, raw)
        self.assertEqual(raw.count(b"HTTP/1.1 "), 1, raw)
        self.assertIn(b"\r\nConnection: close\r\n", raw)
        self.assertIn(b"\r\ncontent-type: application/json; charset=utf-8\r\n", raw)
        self.assertEqual(json.loads(body_of(raw)),
                         {"error": f"request body larger than {LIMIT} bytes"})

    def test_a_declared_length_over_the_limit_is_refused_before_the_body(self):
        # Only the head is sent: the answer must not wait for a body.
        for method, path, label, length in (("POST", "/notes", "/notes", LIMIT + 1),
                                            ("PUT", "/notes/3", "/notes/:id", 10**9),
                                            ("POST", "/json", "/json", 1000000)):
            with self.subTest(path=path, length=length):
                before = self.count(method, label, 413)
                head = (f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n")
                self.assert_refused(exchange(self.port, head.encode(), timeout=5))
                self.assertEqual(self.count(method, label, 413), before + 1)

    def test_a_body_at_the_limit_is_read(self):
        filler = LIMIT - len(json.dumps({"title": "", "body": "b", "tag": "t"}))
        exact = json.dumps({"title": "x" * filler, "body": "b", "tag": "t"}).encode()
        status, got = request(self.port, "POST", "/notes", body=exact,
                              headers={"Content-Type": "application/json"})[::2]
        self.assertEqual(status, 201, got)

    def test_a_chunked_body_is_refused_at_the_limit(self):
        chunk = b"x" * 8192
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(256))  # 2 MiB
        before = self.count("POST", "/notes", 413)
        raw = exchange(self.port, b"POST /notes HTTP/1.1\r\nHost: x\r\nContent-Type: "
                       b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + body, timeout=5)
        self.assert_refused(raw)
        self.assertEqual(self.count("POST", "/notes", 413), before + 1)

    def test_a_compressed_body_is_held_to_the_limit_on_the_wire_too(self):
        # Stored (level 0) gzip of a body of exactly the limit: a few bytes over it on
        # the wire. body-parser would inflate it and accept it; notesd refuses it from
        # the head (docs/decisions.md, "Request bodies").
        filler = LIMIT - len(json.dumps({"title": "", "body": "b", "tag": "t"}))
        exact = json.dumps({"title": "x" * filler, "body": "b", "tag": "t"}).encode()
        stored = gzip.compress(exact, compresslevel=0)
        self.assertGreater(len(stored), LIMIT)
        head = ("POST /notes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Encoding: gzip\r\nContent-Length: {len(stored)}\r\n\r\n").encode()
        self.assert_refused(exchange(self.port, head, timeout=5))


class NumbersTest(ServerTestCase):
    """Every parameter that takes a number is read by the one parser of numbers: its value
    decoded as every query-string value is, and held to its range, however small."""
    database = "edges_numbers"
    env = {"PRIMES_MAX": "5", "WS_MAX_MESSAGES": "3"}

    def test_numbers_written_as_escapes_are_decoded(self):
        status, _, body = request(self.port, "GET", "/primes?below=%35")
        self.assertEqual((status, json.loads(body)), (200, {"below": 5, "count": 2}))
        status, headers, body = request(self.port, "GET", "/sse?count=%31&delay_ms=%30")
        self.assertEqual(status, 200)
        self.assertEqual(body.count(b"id: "), 1)
        answers = [request(self.port, "GET", "/fault/418?every=%32")[0] for _ in range(4)]
        self.assertEqual(answers, [200, 418, 200, 418])
        status, _, body = request(self.port, "GET", "/drip?bytes=%33&duration_ms=%30")
        self.assertEqual((status, len(body)), (200, 3))
        status, _, body = request(self.port, "GET", "/delay/%31?jitter=%30")
        self.assertEqual((status, json.loads(body)), (200, {"delay_ms": 1}))
        status, _, body = request(self.port, "GET", "/stream/%32")
        self.assertEqual((status, body.count(b"\n")), (200, 2))
        # '+' is a space, and a space is not a digit
        status, _, body = request(self.port, "GET", "/primes?below=+5")
        self.assertEqual(status, 400)

    def test_a_max_under_nine_is_held(self):
        """PRIMES_MAX=5 and WS_MAX_MESSAGES=3: 6 and 9 are past them (a parser that computed
        (max - digit) / 10 with signed numbers let every single digit through)."""
        for below in ("5", "0"):
            self.assertEqual(request(self.port, "GET", f"/primes?below={below}")[0], 200)
        for below in ("6", "9", "%39", "10"):
            status, _, body = request(self.port, "GET", f"/primes?below={below}")
            self.assertEqual((status, json.loads(body)),
                             (400, {"error": "below must be a whole number from 0 to 5"}), below)
        status, _, body = request(self.port, "GET", "/ws/echo?max_messages=9")
        self.assertEqual((status, json.loads(body)),
                         (400, {"error": "max_messages must be a whole number from 1 to 3"}))
        # within the setting, the request is read on: not a handshake, so 426
        self.assertEqual(request(self.port, "GET", "/ws/echo?max_messages=3")[0], 426)


class WordingTest(ServerTestCase):
    database = "edges_wording"

    def test_delay_errors_name_the_value_that_is_wrong(self):
        for path, word, absent in (("/delay/70000", "delay", "jitter"),
                                   ("/delay/abc", "delay", "jitter"),
                                   ("/delay/5?jitter=70000", "jitter", "delay must")):
            with self.subTest(path=path):
                status, _, body = request(self.port, "GET", path)
                self.assertEqual(status, 400)
                error = json.loads(body)["error"]
                self.assertTrue(error.startswith(word), error)
                self.assertNotIn(absent, error)

    def test_413_names_the_limit(self):
        status, _, body = request(self.port, "POST", "/notes",
                                  body=b'{"title":"' + b"x" * LIMIT + b'"}',
                                  headers={"Content-Type": "application/json"})
        self.assertEqual((status, json.loads(body)),
                         (413, {"error": f"request body larger than {LIMIT} bytes"}))


if __name__ == "__main__":
    main()
