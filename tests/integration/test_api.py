#!/usr/bin/env python3
"""Every route of the notes API and the other seed workloads, answered as the
reference Express app answers: status, headers and exact bytes."""
import datetime
import http.client
import json
import os
import re
import shutil
import statistics
import tempfile
import threading
import time
import unittest

from notes_testlib import (TAGS, SEED_BODY, Notesd, table_state, create_database, db_connect,
                           direct_only, expected_list, expected_note, js_json, main, raw_request,
                           request, slack)

JSON_CT = "application/json; charset=utf-8"


class NotesApiTest(unittest.TestCase):
    prepared = False
    pipeline = 0
    threads = 1

    @classmethod
    def setUpClass(cls):
        name = ("api" + ("_prepared" if cls.prepared else "") +
                (f"_pipeline{cls.pipeline}" if cls.pipeline else "") + f"_t{cls.threads}")
        cls.db_url = create_database(name)
        cls.db = db_connect(name)
        cls.static_dir = tempfile.mkdtemp(prefix="notesd-static-")
        with open(os.path.join(cls.static_dir, "app.min.js"), "w") as f:
            f.write("var a=1;" * 1000)
        os.mkdir(os.path.join(cls.static_dir, "sub"))
        with open(os.path.join(cls.static_dir, "sub", "b.css"), "w") as f:
            f.write("body{}")
        cls.outside = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
        cls.outside.write("secret")
        cls.outside.close()
        os.symlink(cls.outside.name, os.path.join(cls.static_dir, "link.txt"))
        args = (["--prepared"] if cls.prepared else []) + ["--threads", str(cls.threads)]
        cls.server = Notesd(cls.db_url, args, env={"STATIC_DIR": cls.static_dir,
                                                   "PIPELINE_DEPTH": str(cls.pipeline)})
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.db.close()
        shutil.rmtree(cls.static_dir, ignore_errors=True)
        os.unlink(cls.outside.name)
        assert code == 0, f"notesd exited with {code}: {cls.server.output}"

    def get(self, path, **kw):
        return request(self.port, "GET", path, **kw)

    def assert_json(self, res, status, body):
        self.assertEqual(res[0], status, res[2])
        self.assertEqual(res[1]["content-type"], JSON_CT)
        self.assertEqual(res[1]["content-length"], str(len(res[2])))
        self.assertEqual(res[2], body)

    # GET /notes/:id

    def test_get_note_returns_the_row_as_express_renders_it(self):
        for note_id in (1, 2, 8, 123456, 200000):
            with self.subTest(id=note_id):
                res = self.get(f"/notes/{note_id}")
                self.assert_json(res, 200, expected_note(self.db, note_id))
                obj = json.loads(res[2])
                self.assertEqual(list(obj), ["id", "title", "body", "tag", "created_at"])
                self.assertIsInstance(obj["id"], str)
                self.assertRegex(obj["created_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

    def test_get_note_accepts_leading_zeros_and_percent_encoding(self):
        self.assert_json(self.get("/notes/007"), 200, expected_note(self.db, 7))
        self.assert_json(self.get("/notes/%31%32"), 200, expected_note(self.db, 12))

    def test_get_missing_note_is_express_send_status_404(self):
        status, headers, body = self.get("/notes/999999999")
        self.assertEqual((status, body), (404, b"Not Found"))
        self.assertEqual(headers["content-type"], "text/plain; charset=utf-8")

    @direct_only("Prism 5.14 reads the empty body of a HEAD answer as JSON and answers 500")
    def test_head_sends_headers_only(self):
        get = self.get("/notes/5")
        status, headers, body = request(self.port, "HEAD", "/notes/5")
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(headers["content-length"], str(len(get[2])))

    # GET /notes?tag=

    def test_list_by_tag_is_newest_twenty(self):
        for tag in TAGS:
            with self.subTest(tag=tag):
                res = self.get(f"/notes?tag={tag}")
                self.assert_json(res, 200, expected_list(self.db, tag))
                rows = json.loads(res[2])
                self.assertEqual(len(rows), 20)
                ids = [int(r["id"]) for r in rows]
                self.assertEqual(ids, sorted(ids, reverse=True))
                self.assertTrue(all(r["tag"] == tag for r in rows))

    @direct_only("one trailing slash is Express's, not OpenAPI's: /notes/ is not /notes")
    def test_list_ignores_one_trailing_slash(self):
        self.assert_json(self.get("/notes/?tag=js"), 200, expected_list(self.db, "js"))

    def test_list_unknown_tag_is_empty_array(self):
        self.assert_json(self.get("/notes?tag=nosuchtag"), 200, b"[]")

    @direct_only("Prism 5.14 takes an empty value for a missing one (allowEmptyValue ignored)")
    def test_list_empty_tag_is_empty_array(self):
        self.assert_json(self.get("/notes?tag="), 200, b"[]")

    def test_list_decodes_the_query_like_express(self):
        expected = expected_list(self.db, "js")
        self.assert_json(self.get("/notes?tag=%6A%73"), 200, expected)
        self.assert_json(self.get("/notes?x=1&tag=js&y=2"), 200, expected)
        request(self.port, "POST", "/notes", body={"title": "t", "body": "b", "tag": "a b"})
        self.assert_json(self.get("/notes?tag=a+b"), 200, expected_list(self.db, "a b"))
        self.assert_json(self.get("/notes?tag=a%20b"), 200, expected_list(self.db, "a b"))

    # POST /notes

    def test_post_inserts_and_returns_the_row(self):
        before = table_state(self.db)
        note = {"title": "Hello \"world\" \\ /", "body": "line1\nline2\ttab\u0001é€😀\u2028",
                "tag": "js"}
        sent = datetime.datetime.utcnow()
        status, headers, body = request(self.port, "POST", "/notes", body=note)
        answered = datetime.datetime.utcnow()
        self.assertEqual(status, 201, body)
        self.assertEqual(headers["content-type"], JSON_CT)
        obj = json.loads(body)
        self.assertEqual({k: obj[k] for k in ("title", "body", "tag")}, note)
        self.assertEqual(body, expected_note(self.db, int(obj["id"])))
        self.assertEqual(table_state(self.db)[0], before[0] + 1)
        # now() of the insert's transaction, cut to the millisecond: between the two readings
        created = datetime.datetime.strptime(obj["created_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
        self.assertGreaterEqual(created, sent.replace(microsecond=sent.microsecond // 1000 * 1000))
        self.assertLessEqual(created, answered)

    def test_post_ignores_extra_fields(self):
        status, _, body = request(self.port, "POST", "/notes",
                                  body={"title": "t", "body": "b", "tag": "x", "id": 1, "z": [1]})
        self.assertEqual(status, 201)
        self.assertNotEqual(json.loads(body)["id"], "1")

    def test_post_accepts_json_media_type_variants(self):
        for ct in ("application/json", "application/json; charset=utf-8",
                   "Application/JSON", "application/json;charset=UTF-8"):
            with self.subTest(ct=ct):
                status, _, body = request(self.port, "POST", "/notes",
                                          body='{"title":"t","body":"b","tag":"ct"}',
                                          headers={"Content-Type": ct})
                self.assertEqual(status, 201, body)

    # PUT /notes/:id

    def test_put_updates_and_returns_the_row(self):
        old = json.loads(self.get("/notes/42")[2])
        note = {"title": "changed", "body": "new body", "tag": "perf"}
        status, headers, body = request(self.port, "PUT", "/notes/42", body=note)
        self.assertEqual(status, 200, body)
        self.assertEqual(body, expected_note(self.db, 42))
        obj = json.loads(body)
        self.assertEqual((obj["title"], obj["body"], obj["tag"]), ("changed", "new body", "perf"))
        self.assertEqual(obj["created_at"], old["created_at"])
        self.assertEqual(self.get("/notes/42")[2], body)

    def test_put_missing_id_returns_404(self):
        before = table_state(self.db)
        status, headers, body = request(self.port, "PUT", "/notes/999999999",
                                        body={"title": "a", "body": "b", "tag": "c"})
        self.assertEqual((status, body), (404, b"Not Found"))
        self.assertEqual(table_state(self.db), before)

    # the other seed workloads

    def test_json_is_a_note_shaped_object(self):
        ids = set()
        for _ in range(50):
            sent = datetime.datetime.utcnow()
            status, headers, body = self.get("/json")
            answered = datetime.datetime.utcnow()
            self.assertEqual(status, 200)
            self.assertEqual(headers["content-type"], JSON_CT)
            obj = json.loads(body)
            self.assertEqual(list(obj), ["id", "title", "body", "tag", "created_at"])
            self.assertIsInstance(obj["id"], int)
            self.assertTrue(1 <= obj["id"] <= 200000)
            self.assertEqual(obj["tag"], TAGS[obj["id"] % 8])
            self.assertEqual(obj["title"], f"Note {obj['id']} about {obj['tag']}")
            self.assertEqual(obj["body"], SEED_BODY)
            self.assertEqual(body, js_json(obj))
            # the server's clock while it answered, cut to the millisecond
            created = datetime.datetime.strptime(obj["created_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
            self.assertGreaterEqual(created, sent.replace(microsecond=sent.microsecond // 1000 * 1000))
            self.assertLessEqual(created, answered)
            ids.add(obj["id"])
        self.assertGreater(len(ids), 40, "ids should be random")

    def test_hello_world(self):
        status, headers, body = self.get("/")
        self.assertEqual((status, body), (200, b"Hello World!"))
        self.assertEqual(headers["content-type"], "text/html; charset=utf-8")

    def test_status(self):
        self.assert_json(self.get("/status"), 200, b'{"status":"ok"}')

    def test_primes(self):
        self.assert_json(self.get("/primes?below=100"), 200, b'{"below":100,"count":25}')
        self.assert_json(self.get("/primes"), 200, b'{"below":100000,"count":9592}')
        self.assert_json(self.get("/primes?below=2"), 200, b'{"below":2,"count":0}')

    @direct_only("a file in a subdirectory: an OpenAPI path parameter holds one segment")
    def test_static_serves_files_with_their_type(self):
        status, headers, body = self.get("/static/app.min.js")
        self.assertEqual(status, 200)
        self.assertEqual(body, b"var a=1;" * 1000)
        self.assertIn("javascript", headers["content-type"])
        status, headers, body = self.get("/static/sub/b.css")
        self.assertEqual((status, body), (200, b"body{}"))
        self.assertIn("text/css", headers["content-type"])

    def test_static_never_leaves_its_directory(self):
        for path in ("/static/missing.js", "/static/link.txt", "/static/../CMakeLists.txt",
                     "/static/%2e%2e/CMakeLists.txt", "/static/sub/..%2f..%2fCMakeLists.txt",
                     "/static/sub%2f..%2f..%2fREADME.md", "/static/"):
            with self.subTest(path=path):
                status, _, body = self.get(path)
                self.assertEqual(status, 404, body)
                self.assertNotIn(b"secret", body)

    @direct_only("paths in any case (Express's router), and a 301 that Prism follows itself")
    def test_static_paths_as_express_serves_them(self):
        # The router ignores case; the file path is resolved as a file path.
        for path in ("/STATIC/app.min.js", "/Static/./app.min.js", "/static/sub/../app.min.js",
                     "/static/app%2Emin.js"):
            with self.subTest(path=path):
                status, _, body = self.get(path)
                self.assertEqual((status, body), (200, b"var a=1;" * 1000))
        # A directory: redirected to its trailing slash, and never listed.
        status, headers, _ = self.get("/static/sub")
        self.assertEqual((status, headers["location"]), (301, "/static/sub/"))
        self.assertEqual(self.get("/static/sub/")[0], 404)

    @direct_only("counts header lines on the wire, which the proxy writes anew")
    def test_static_answers_carry_server_timing_once(self):
        # Regression: the 404 and 405 of /static used to carry the header twice.
        for method, path, status in (("GET", "/static/app.min.js", 200),
                                     ("GET", "/static/missing.js", 404),
                                     ("POST", "/static/app.min.js", 405)):
            with self.subTest(method=method, path=path):
                raw = raw_request(self.port, f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
                                  "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
                head = raw.partition(b"\r\n\r\n")[0].lower()
                self.assertTrue(head.startswith(f"http/1.1 {status}".encode()), head)
                self.assertEqual(head.count(b"\r\nserver-timing:"), 1, head)

    def test_keep_alive_serves_many_requests_on_one_connection(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        for i in range(1, 21):
            status, headers, body = request(self.port, "GET", f"/notes/{i}", conn=conn)
            self.assertEqual(status, 200)
            self.assertEqual(headers.get("connection"), "keep-alive")
        conn.close()


class KnownLatencyAndTimingTest(unittest.TestCase):
    """/delay/:ms answers after a known delay; Server-Timing splits server time."""

    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("timing")
        cls.server = Notesd(cls.db_url)
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.output

    def timed(self, path):
        start = time.monotonic()
        res = request(self.port, "GET", path)
        return res, time.monotonic() - start

    @direct_only("times the answers, and the proxy adds time of its own")
    def test_delay_answers_after_the_delay(self):
        for ms in (0, 20, 100):
            with self.subTest(ms=ms):
                (status, headers, body), took = self.timed(f"/delay/{ms}")
                self.assertEqual((status, body), (200, f'{{"delay_ms":{ms}}}'.encode()))
                self.assertGreaterEqual(took, ms / 1000)
                self.assertLess(took, ms / 1000 + 0.05 + slack(self.port))

    @direct_only("times the answers, and the proxy adds time of its own")
    def test_delays_overlap_instead_of_queueing(self):
        results = []
        threads = [threading.Thread(target=lambda: results.append(self.timed("/delay/200")))
                   for _ in range(20)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - start
        # 0.2 s overlapped, 4 s in a queue: half of that is the line (twenty client threads
        # starting on a busy machine take their time too)
        self.assertLess(took, 2.0 + slack(self.port))
        self.assertEqual([r[0][0] for r in results], [200] * 20)

    @direct_only("times the answers, and the proxy adds time of its own")
    def test_jitter_is_uniform_around_the_delay(self):
        """/delay/60?jitter=40 draws from [20, 100] ms. Against plain /delay/60, timed in
        turn with it on the same machine, about half of the jittered answers come before
        the fastest plain one and half after the plain ones' median. No answer may come
        before 20 ms; how late one may come is not asserted: a busy machine makes every
        answer late, the plain ones with them."""
        plain, jittered = [], []
        for _ in range(40):
            plain.append(self.timed("/delay/60")[1])
            jittered.append(self.timed("/delay/60?jitter=40")[1])
        earlier = sum(t < min(plain) for t in jittered)
        later = sum(t > statistics.median(plain) for t in jittered)
        print(f"\n  jitter 40 ms around 60 ms: {earlier} of 40 before the fastest plain answer "
              f"({min(plain) * 1000:.1f} ms), {later} after the plain median "
              f"({statistics.median(plain) * 1000:.1f} ms)", flush=True)
        self.assertGreaterEqual(min(jittered), 0.020)
        # about 20 each: fewer than 4 of 40 where half the draws land is rarer than 1 in 10^6
        self.assertGreaterEqual(earlier, 4, "jitter should answer some before the delay")
        self.assertGreaterEqual(later, 4, "jitter should answer some after the delay")

    def test_delay_rejects_bad_values(self):
        for path in ("/delay/abc", "/delay/60001", "/delay/-1", "/delay/1?jitter=x",
                     "/delay/1?jitter=70000", "/delay/1.5", "/delay/%2D1"):
            with self.subTest(path=path):
                status, _, body = request(self.port, "GET", path)
                self.assertEqual(status, 400, body)
                self.assertIn("error", json.loads(body))
        # no :ms segment is no route, as for /bytes/ and /stream/
        for path in ("/delay/", "/delay/5/x"):
            self.assertEqual(request(self.port, "GET", path)[0], 404, path)

    def test_server_timing_splits_database_and_total_time(self):
        status, headers, _ = request(self.port, "GET", "/notes/3")
        self.assertEqual(status, 200)
        m = re.fullmatch(r"db;dur=(\d+\.\d{3}), total;dur=(\d+\.\d{3})", headers["server-timing"])
        self.assertIsNotNone(m, headers["server-timing"])
        self.assertLessEqual(float(m.group(1)), float(m.group(2)))
        for path in ("/json", "/status", "/"):
            self.assertRegex(request(self.port, "GET", path)[1]["server-timing"],
                             r"^total;dur=\d+\.\d{3}$")
        (_, headers, _), took = self.timed("/delay/30")
        total = float(headers["server-timing"].split("=")[1])
        self.assertGreaterEqual(total, 30.0)
        self.assertLess(total, took * 1000)

    def test_server_timing_can_be_turned_off(self):
        server = Notesd(self.db_url, env={"SERVER_TIMING": "0"})
        try:
            for path in ("/notes/3", "/json"):
                self.assertNotIn("server-timing", request(server.port, "GET", path)[1])
        finally:
            self.assertEqual(server.stop(), 0)


class PreparedNotesApiTest(NotesApiTest):
    """The same bytes with --prepared (named statements per connection)."""
    prepared = True


class PipelineNotesApiTest(NotesApiTest):
    """The same bytes in pipeline mode (PIPELINE_DEPTH=16: several queries in
    flight on each connection)."""
    pipeline = 16


class PreparedPipelineNotesApiTest(NotesApiTest):
    """The same bytes with --prepared in pipeline mode: the statements are
    prepared in the same pipeline as the first queries."""
    prepared = True
    pipeline = 16


class TwoLoopsNotesApiTest(NotesApiTest):
    """The same bytes with --threads 2 (two loops, each with half the pool)."""
    threads = 2


if __name__ == "__main__":
    main()
