#!/usr/bin/env python3
"""Bad input gets a 4xx with {"error": "..."} naming the problem, and nothing
is written: where the reference app would crash or answer 500, notesd refuses."""
import json
import os
import sys
import unittest

from notes_testlib import (PROBE_METHOD, REPO, ServerTestCase, expected_note, main,
                           raw_request, request, table_state)

sys.path.insert(0, os.path.join(REPO, "tests"))
import route_table  # noqa: E402

GOOD = {"title": "t", "body": "b", "tag": "x"}
JSON = {"Content-Type": "application/json"}

# (name, method, path, body, headers, status, words expected in the error)
CASES = [
    # ids
    ("id_zero", "GET", "/notes/0", None, None, 400, "positive integer"),
    ("id_negative", "GET", "/notes/-1", None, None, 400, "positive integer"),
    ("id_plus_sign", "GET", "/notes/+1", None, None, 400, "positive integer"),
    ("id_hex", "GET", "/notes/0x10", None, None, 400, "positive integer"),
    ("id_float", "GET", "/notes/1.5", None, None, 400, "positive integer"),
    ("id_exponent", "GET", "/notes/1e3", None, None, 400, "positive integer"),
    ("id_word", "GET", "/notes/abc", None, None, 400, "positive integer"),
    ("id_space", "GET", "/notes/%201", None, None, 400, "positive integer"),
    ("id_trailing_space", "GET", "/notes/1%20", None, None, 400, "positive integer"),
    ("id_nul", "GET", "/notes/1%00", None, None, 400, "positive integer"),
    ("id_overflow", "GET", "/notes/9223372036854775808", None, None, 400, "out of range"),
    ("id_huge", "GET", "/notes/" + "9" * 40, None, None, 400, "out of range"),
    ("put_id_bad", "PUT", "/notes/abc", GOOD, JSON, 400, "positive integer"),
    ("put_id_overflow", "PUT", "/notes/99999999999999999999", GOOD, JSON, 400, "out of range"),
    # tag query
    ("tag_missing", "GET", "/notes", None, None, 400, "'tag' is required"),
    ("tag_other_param", "GET", "/notes?tags=js", None, None, 400, "'tag' is required"),
    ("tag_twice", "GET", "/notes?tag=a&tag=b", None, None, 400, "more than once"),
    ("tag_nul", "GET", "/notes?tag=%00", None, None, 400, "UTF-8"),
    ("tag_bad_utf8", "GET", "/notes?tag=%ff", None, None, 400, "UTF-8"),
    # bodies
    ("post_not_json", "POST", "/notes", "{title:", JSON, 400, "not valid JSON"),
    ("post_empty", "POST", "/notes", "", JSON, 400, "JSON object"),
    ("post_array", "POST", "/notes", "[1,2]", JSON, 400, "JSON object"),
    ("post_string", "POST", "/notes", '"x"', JSON, 400, "JSON object"),
    ("post_null", "POST", "/notes", "null", JSON, 400, "JSON object"),
    ("post_trailing", "POST", "/notes", json.dumps(GOOD) + "x", JSON, 400, "not valid JSON"),
    ("post_missing_title", "POST", "/notes", {"body": "b", "tag": "t"}, None, 400, "'title' is required"),
    ("post_missing_body", "POST", "/notes", {"title": "t", "tag": "t"}, None, 400, "'body' is required"),
    ("post_missing_tag", "POST", "/notes", {"title": "t", "body": "b"}, None, 400, "'tag' is required"),
    ("post_null_tag", "POST", "/notes", {"title": "t", "body": "b", "tag": None}, None, 400, "'tag' is required"),
    ("post_number_title", "POST", "/notes", {"title": 1, "body": "b", "tag": "t"}, None, 400, "'title' must be a string"),
    ("post_object_body", "POST", "/notes", {"title": "t", "body": {}, "tag": "t"}, None, 400, "'body' must be a string"),
    ("post_bool_tag", "POST", "/notes", {"title": "t", "body": "b", "tag": True}, None, 400, "'tag' must be a string"),
    ("post_nul_escape", "POST", "/notes", '{"title":"a\\u0000b","body":"b","tag":"t"}', JSON, 400, "NUL"),
    ("post_raw_newline", "POST", "/notes", '{"title":"a\nb","body":"b","tag":"t"}', JSON, 400, "control character"),
    ("post_bad_utf8", "POST", "/notes", b'{"title":"\xff","body":"b","tag":"t"}', JSON, 400, "UTF-8"),
    ("post_overlong_utf8", "POST", "/notes", b'{"title":"\xc0\xaf","body":"b","tag":"t"}', JSON, 400, "UTF-8"),
    ("post_bad_escape", "POST", "/notes", '{"title":"\\x41","body":"b","tag":"t"}', JSON, 400, "not valid JSON"),
    ("post_charset_latin1", "POST", "/notes", json.dumps(GOOD), {"Content-Type": "application/json; charset=iso-8859-1"}, 415, "unsupported charset"),
    ("post_encoding_unknown", "POST", "/notes", json.dumps(GOOD), {**JSON, "Content-Encoding": "compress"}, 415, "unsupported content encoding"),
    ("post_no_content_type", "POST", "/notes", json.dumps(GOOD), {}, 415, "application/json"),
    ("post_text_plain", "POST", "/notes", json.dumps(GOOD), {"Content-Type": "text/plain"}, 415, "application/json"),
    ("post_form", "POST", "/notes", "title=a", {"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"),
    ("post_too_large", "POST", "/notes", json.dumps({"title": "x" * 103000, "body": "b", "tag": "t"}), JSON, 413, "larger than"),
    ("put_not_json", "PUT", "/notes/3", "nope", JSON, 400, "not valid JSON"),
    ("put_missing_tag", "PUT", "/notes/3", {"title": "t", "body": "b"}, None, 400, "'tag' is required"),
    ("put_text_plain", "PUT", "/notes/3", json.dumps(GOOD), {"Content-Type": "text/plain"}, 415, "application/json"),
    ("put_too_large", "PUT", "/notes/3", json.dumps({"title": "x", "body": "y" * 200000, "tag": "t"}), JSON, 413, "larger than"),
    # routes and methods
    ("unknown_route", "GET", "/nope", None, None, 404, "not found"),
    ("unknown_nested", "GET", "/notes/1/2", None, None, 404, "not found"),
    ("dot_segment", "GET", "/notes/./1", None, None, 404, "not found"),
    ("primes_too_big", "GET", "/primes?below=999999999999", None, None, 400, "below"),
    ("primes_not_number", "GET", "/primes?below=abc", None, None, 400, "below"),
    ("primes_empty", "GET", "/primes?below=", None, None, 400, "below"),
]

# 405 probes: the reserved PROBE_METHOD, which no route may ever name, and
# OPTIONS, a safe method (RFC 9110 section 9.2.1), on the routes that hold data;
# POST on routes that hold none. None of them can change a row, whatever
# methods the routes gain. The Allow header each must carry is the route's
# methods as server/routes.h lists them (tests/route_table.py), HEAD after GET.
METHOD_CASES = [
    (PROBE_METHOD, "/notes/1", "/notes/:id"),
    ("OPTIONS", "/notes/1", "/notes/:id"),
    (PROBE_METHOD, "/notes", "/notes"),
    ("OPTIONS", "/notes", "/notes"),
    ("POST", "/json", "/json"),
    ("POST", "/status", "/status"),
    ("POST", "/", "/"),
    ("POST", "/primes", "/primes"),
]


def allow_of(template):
    """The Allow header of a route's 405, from its row of server/routes.h."""
    row = next(r for r in route_table.read() if r.template == template)
    names = []
    for name in row.methods:
        names += [name, "HEAD"] if name == "GET" else [name]
    return ", ".join(names)


class ErrorsTest(ServerTestCase):
    database = "errors"

    def test_every_bad_request_gets_its_4xx_and_writes_nothing(self):
        note3 = expected_note(self.db, 3)
        for name, method, path, body, headers, status, words in CASES:
            with self.subTest(name):
                before = table_state(self.db)
                if isinstance(body, str):
                    body = body.encode()
                got_status, got_headers, got_body = request(self.port, method, path, body=body,
                                                            headers=headers)
                self.assertEqual(got_status, status, got_body)
                self.assertEqual(got_headers["content-type"], "application/json; charset=utf-8")
                error = json.loads(got_body)["error"]
                self.assertIn(words, error)
                self.assertEqual(list(json.loads(got_body)), ["error"])
                self.assertEqual(table_state(self.db), before, "a failed request wrote a row")
                self.assertEqual(expected_note(self.db, 3), note3, "a failed PUT changed the row")

    def test_unsupported_methods_get_405_with_allow(self):
        for method, path, template in METHOD_CASES:
            allow = allow_of(template)
            with self.subTest(f"{method} {path}"):
                before = table_state(self.db)
                status, headers, body = request(self.port, method, path, body=b"{}",
                                                headers={"Content-Type": "application/json"})
                self.assertEqual(status, 405, body)
                self.assertEqual(table_state(self.db), before, "a 405 probe changed a row")
                self.assertEqual(headers["allow"], allow)
                self.assertIn("error", json.loads(body))

    def test_body_of_exactly_the_limit_is_accepted(self):
        # express.json's limit is 100kb = 102400 bytes; the limit itself is allowed.
        filler = 102400 - len(json.dumps({"title": "", "body": "b", "tag": "t"}))
        body = json.dumps({"title": "x" * filler, "body": "b", "tag": "t"})
        self.assertEqual(len(body), 102400)
        status, _, resp = request(self.port, "POST", "/notes", body=body.encode(),
                                  headers={"Content-Type": "application/json"})
        self.assertEqual(status, 201, resp[:200])
        status, _, resp = request(self.port, "POST", "/notes", body=(body + " ").encode(),
                                  headers={"Content-Type": "application/json"})
        self.assertEqual(status, 413)

    def test_huge_body_is_refused_and_server_stays_up(self):
        # Far past the limit h2o itself refuses (before buffering it all).
        data = (b"POST /notes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 50000000\r\n\r\n" + b"x" * 1000)
        reply = raw_request(self.port, data)
        self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply[:100])
        self.assertEqual(request(self.port, "GET", "/status")[0], 200)

    def test_malformed_http_does_not_hurt_the_server(self):
        for data in (b"GARBAGE\r\n\r\n", b"GET /notes/1 HTTP/9.9\r\n\r\n",
                     b"GET /notes/1 HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                     b"\x00\x01\x02\r\n\r\n"):
            with self.subTest(data=data):
                raw_request(self.port, data)
                self.assertEqual(request(self.port, "GET", "/status")[0], 200)


if __name__ == "__main__":
    main()
