#!/usr/bin/env python3
"""Writes bad_requests.jsonl: malformed requests and the status each must get.

One JSON object a line: name, method, path, headers, body (text) or body_b64
(bytes), status. Regenerate with

    python3 tests/corpus/make_bad_requests.py > tests/corpus/bad_requests.jsonl

The file is what the tests read (integration_reliability), so a change here
shows up in review as a diff; style_corpus checks that the file is what this
writes. The 405 probes use NOTESD-PROBE, a method no route may ever name
(tests/route_table.py), and OPTIONS, a safe method: none can change a row.
"""
import base64
import gzip
import json
import zlib

JSON = {"Content-Type": "application/json"}
GOOD = '{"title":"t","body":"b","tag":"x"}'
out = []


def add(name, method, path, status, body=None, headers=None):
    entry = {"name": name, "method": method, "path": path, "headers": headers or {},
             "status": status}
    if isinstance(body, bytes):
        entry["body_b64"] = base64.b64encode(body).decode()
    elif body is not None:
        entry["body"] = body
    out.append(entry)


BAD_IDS = ["0", "00", "-1", "-0", "+1", "%2B1", "0x1", "0X1A", "1e3", "1E3", "1.0", "1,0", "1_000",
           "%201", "1%20", "%091", "1%0A", "1%00", "abc", "one", "NaN", "Infinity", "null",
           "true", "%EF%BC%91", "%D9%A1", "1a", "a1", "9223372036854775808", "18446744073709551616",
           "99999999999999999999", "9" * 30, "-9223372036854775808", "%31%2E%30", "%E2%80%8B1",
           "1%E2%80%8B", "'1'", "1;select", "1'--", "%25"]
for i, bad in enumerate(BAD_IDS):
    add(f"get_bad_id_{i}", "GET", f"/notes/{bad}", 400)
    add(f"put_bad_id_{i}", "PUT", f"/notes/{bad}", 400, GOOD, JSON)

BAD_TAG_QUERIES = ["", "?", "?tags=js", "?Tag=js", "?TAG=js", "?tag=a&tag=b", "?tag&tag",
                   "?tag=%00", "?tag=a%00b", "?tag=%ff", "?tag=%C3", "?tag=%C3%28", "?tag=%E2%82",
                   "?tag=%ED%A0%80", "?tag=%F4%90%80%80", "?tag=%C0%AF", "?tag=%80",
                   "?ta%67=a&tag=b", "?x=1", "?=js", "?tag=%fe%ff"]
for i, q in enumerate(BAD_TAG_QUERIES):
    add(f"list_bad_query_{i}", "GET", f"/notes{q}", 400)

BAD_BODIES = [
    ("empty", ""), ("space", " "), ("not_json", "hello"), ("half_object", '{"title":'),
    ("single_quotes", "{'title':'t','body':'b','tag':'x'}"), ("unquoted_keys", "{title:1}"),
    ("trailing_comma", '{"title":"t","body":"b","tag":"x",}'), ("trailing_garbage", GOOD + "x"),
    ("two_objects", GOOD + GOOD), ("array", "[]"), ("array_of_object", "[" + GOOD + "]"),
    ("string", '"text"'), ("number", "42"), ("true", "true"), ("null", "null"),
    ("missing_title", '{"body":"b","tag":"x"}'), ("missing_body", '{"title":"t","tag":"x"}'),
    ("missing_tag", '{"title":"t","body":"b"}'), ("empty_object", "{}"),
    ("null_title", '{"title":null,"body":"b","tag":"x"}'),
    ("number_title", '{"title":1,"body":"b","tag":"x"}'),
    ("array_body", '{"title":"t","body":[],"tag":"x"}'),
    ("object_tag", '{"title":"t","body":"b","tag":{}}'),
    ("bool_tag", '{"title":"t","body":"b","tag":false}'),
    ("case_keys", '{"Title":"t","Body":"b","Tag":"x"}'),
    ("nul_escape_title", '{"title":"\\u0000","body":"b","tag":"x"}'),
    ("nul_escape_tag", '{"title":"t","body":"b","tag":"x\\u0000y"}'),
    ("raw_newline", '{"title":"a\nb","body":"b","tag":"x"}'),
    ("raw_tab", '{"title":"a\tb","body":"b","tag":"x"}'),
    ("raw_control", '{"title":"a\x01b","body":"b","tag":"x"}'),
    ("bad_escape", '{"title":"\\q","body":"b","tag":"x"}'),
    ("short_unicode_escape", '{"title":"\\u12","body":"b","tag":"x"}'),
    ("nan", '{"title":NaN,"body":"b","tag":"x"}'),
    ("comment", '{"title":"t",/*c*/"body":"b","tag":"x"}'),
    ("deep_nesting", "[" * 2000 + "]" * 2000),
]
BAD_BYTES = [
    ("invalid_utf8", b'{"title":"\xff","body":"b","tag":"x"}'),
    ("overlong_utf8", b'{"title":"\xc0\xaf","body":"b","tag":"x"}'),
    ("surrogate_utf8", b'{"title":"\xed\xa0\x80","body":"b","tag":"x"}'),
    ("truncated_utf8", b'{"title":"\xe2\x82","body":"b","tag":"x"}'),
    ("raw_nul", b'{"title":"a\x00b","body":"b","tag":"x"}'),
    ("utf16_bom", '{"title":"t","body":"b","tag":"x"}'.encode("utf-16")),
]
for method, path in (("POST", "/notes"), ("PUT", "/notes/5")):
    for name, body in BAD_BODIES + BAD_BYTES:
        add(f"{method.lower()}_{name}", method, path, 400, body, JSON)

BAD_TYPES = [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
             "text/json", "application/jsonp", "application/xml", "json", "*/*", "application/json-seq",
             "application/vnd.notes+json", "application/problem+json"]
for method, path in (("POST", "/notes"), ("PUT", "/notes/5")):
    for i, ct in enumerate(BAD_TYPES):
        add(f"{method.lower()}_content_type_{i}", method, path, 415, GOOD,
            {} if ct is None else {"Content-Type": ct})
    add(f"{method.lower()}_too_large", method, path, 413,
        '{"title":"' + "x" * 102400 + '","body":"b","tag":"x"}', JSON)
    add(f"{method.lower()}_too_large_2", method, path, 413, " " * 102401, JSON)
    # express.json's charset and Content-Encoding rules, and the limit on the inflated size
    for i, ct in enumerate(["application/json; charset=iso-8859-1", "application/json; charset=utf8",
                            "application/json; charset=us-ascii"]):
        add(f"{method.lower()}_charset_{i}", method, path, 415, GOOD, {"Content-Type": ct})
    for i, ce in enumerate(["compress", "x-gzip", "gzip, gzip", "chunked"]):
        add(f"{method.lower()}_content_encoding_{i}", method, path, 415, GOOD,
            {**JSON, "Content-Encoding": ce})
    add(f"{method.lower()}_gzip_not_gzip", method, path, 400, GOOD,
        {**JSON, "Content-Encoding": "gzip"})
    add(f"{method.lower()}_gzip_truncated", method, path, 400, gzip.compress(GOOD.encode(), mtime=0)[:-9],
        {**JSON, "Content-Encoding": "gzip"})
    add(f"{method.lower()}_deflate_raw", method, path, 400,
        zlib.compress(GOOD.encode())[2:-4], {**JSON, "Content-Encoding": "deflate"})
    add(f"{method.lower()}_gzip_bomb", method, path, 413,
        gzip.compress(b'{"title":"' + b" " * 4_000_000 + b'"}', mtime=0),
        {**JSON, "Content-Encoding": "gzip"})

for i, path in enumerate(["/nope", "/notes/1/2", "/notes/1//", "/note", "/notesx", "/json/x",
                          "/statusx", "/primesx", "/metrics", "/healthz", "/readyz",
                          "/static", "/static/", "/static/none.js", "/static/../README.md",
                          "/%2e%2e/README.md", "/static/%00", "/notes/./1", "/notes/x/../1",
                          "/notes/%2e/1", "/json/.", "/./status", "//status"]):
    add(f"unknown_path_{i}", "GET", path, 404)
for i, (method, path) in enumerate([("NOTESD-PROBE", "/notes/1"), ("OPTIONS", "/notes/1"),
                                     ("NOTESD-PROBE", "/notes"), ("OPTIONS", "/notes"),
                                     ("POST", "/json"), ("PUT", "/status"), ("OPTIONS", "/"),
                                     ("POST", "/primes"), ("POST", "/static/app.min.js"),
                                     ("NOTESD-PROBE", "/static/app.min.js")]):
    add(f"method_{i}", method, path, 405, "{}", JSON)
for i, q in enumerate(["?below=abc", "?below=-1", "?below=1.5", "?below=", "?below=100000000",
                       "?below=99999999999999999999999", "?below=1e5"]):
    add(f"primes_bad_{i}", "GET", f"/primes{q}", 400)

for entry in out:
    print(json.dumps(entry))
