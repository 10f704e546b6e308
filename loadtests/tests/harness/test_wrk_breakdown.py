#!/usr/bin/python3
"""Tests of the per-name breakdown of loadtests/wrk/notes.lua (BREAKDOWN=1), with
real wrk against a small stand-in server in this process that counts every
request it answers by method, route and status.

The stand-in keeps the notes in memory with only 40 ids, so GETs often read rows
that PUTs of the same run wrote: the case where a response can only be told
apart by the title the PUT sent.

    cd loadtests && /usr/bin/python3 -B -m tests.harness.test_wrk_breakdown
"""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import unittest

from tests import LOADTESTS

LUA = os.path.join(LOADTESTS, "wrk", "notes.lua")
TAGS = ["js", "ts", "node", "bun", "deno", "postgres", "http", "perf"]
MAX_ID = 40


def free_port(lo=18100, hi=18200):
    for port in range(hi - 1, lo - 1, -1):       # from the top, away from run.sh's first choice
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 18100-18199")


class Store:
    def __init__(self):
        self.lock = threading.Lock()
        self.titles = {}
        self.next_id = MAX_ID + 1
        self.counts = {}

    def count(self, method, route, status):
        with self.lock:
            key = f"{method} {route} {status}"
            self.counts[key] = self.counts.get(key, 0) + 1


def note(i, title):
    return {"id": str(i), "title": title, "body": "b", "tag": TAGS[i % 8], "created_at": "2026-01-01T00:00:00.000Z"}


def make_handler(store):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, route, status, value):
            body = value if isinstance(value, bytes) else json.dumps(value, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            store.count(self.command, route, status)

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n) or b"{}")

        def do_GET(self):
            path = self.path
            m = re.fullmatch(r"/notes/(\d+)", path)
            if m:
                i = int(m.group(1))
                with store.lock:
                    title = store.titles.get(i, f"Note {i} about {TAGS[i % 8]}")
                return self.reply("/notes/:id", 200, note(i, title))
            if path.startswith("/notes?tag="):
                return self.reply("/notes", 200, [note(i, f"Note {i} about x") for i in (3, 2, 1)])
            if path == "/json":
                return self.reply("/json", 200, note(7, "Note 7 about perf"))
            return self.reply("other", 404, b"Not Found")

        def do_POST(self):
            data = self.body()
            with store.lock:
                i = store.next_id
                store.next_id += 1
                store.titles[i] = data["title"]
            self.reply("/notes", 201, note(i, data["title"]))

        def do_PUT(self):
            data = self.body()
            i = int(self.path.rsplit("/", 1)[1])
            with store.lock:
                store.titles[i] = data["title"]
            self.reply("/notes/:id", 200, note(i, data["title"]))

    return Handler


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass                                      # wrk resets its connections when it stops


def wrk_json(output):
    line = [l for l in output.splitlines() if l.startswith("WRK_JSON ")][-1]
    return json.loads(line[len("WRK_JSON "):])


@unittest.skipUnless(shutil.which("wrk"), "wrk is not installed")
class Breakdown(unittest.TestCase):
    def setUp(self):
        self.store = Store()
        self.port = free_port()
        self.server = QuietServer(("127.0.0.1", self.port), make_handler(self.store))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def wrk(self, mode, breakdown=True, threads=2):
        env = {**os.environ, "MODE": mode, "MAX_ID": str(MAX_ID)}
        env.pop("BREAKDOWN", None)
        if breakdown:
            env["BREAKDOWN"] = "1"
        res = subprocess.run(["wrk", f"-t{threads}", "-c8", "-d1s", "--timeout", "5s", "-s", LUA,
                              f"http://127.0.0.1:{self.port}"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        return res.stdout

    def check_mode(self, mode, names):
        out = self.wrk(mode)
        data = wrk_json(out)
        # how many is a figure of the machine's speed (76 in a second on a loaded one): every
        # name answered at least once is checked below
        self.assertGreater(data["requests"], 0, data)
        # wrk/smoke.sh looks for these, with or without the breakdown
        line = [l for l in out.splitlines() if l.startswith("WRK_JSON ")][-1]
        self.assertIn('"non2xx":0,', line)
        self.assertTrue(line.endswith('"socket_errors":0}'), line)
        responses, sent = data["responses"], data["sent"]
        # every response is attributed, to a name of this mode, and they add up to wrk's count
        self.assertEqual(sum(responses.values()), data["requests"], responses)
        self.assertTrue(all(k.rsplit(" ", 1)[0] in names for k in responses), responses)
        self.assertEqual(set(sent), set(names), sent)
        # the server may have answered a few more (in flight when wrk stopped), never fewer,
        # and never more than were sent
        server = dict(self.store.counts)
        routes = {"GET /notes/:id": "GET /notes/:id 200", "GET /notes?tag=": "GET /notes 200",
                  "POST /notes": "POST /notes 201", "PUT /notes/:id": "PUT /notes/:id 200", "GET /json": "GET /json 200"}
        expected = {"GET /notes/:id": 200, "GET /notes?tag=": 200, "POST /notes": 201, "PUT /notes/:id": 200,
                    "GET /json": 200}
        for name in names:
            got = responses.get(f"{name} {expected[name]}", 0)
            answered = server.get(routes[name], 0)
            self.assertGreater(got, 0, name)
            self.assertLessEqual(got, answered, f"{name}: wrk {got} > server {answered}")
            self.assertLessEqual(answered - got, 8, f"{name}: wrk {got}, server {answered}")
            self.assertLessEqual(answered, sent[name], name)
        return data

    def test_read(self):
        self.check_mode("read", ["GET /notes/:id", "GET /notes?tag="])

    def test_write(self):
        self.check_mode("write", ["POST /notes", "PUT /notes/:id"])

    def test_mixed_tells_get_and_put_apart(self):
        self.check_mode("mixed", ["GET /notes/:id", "GET /notes?tag=", "POST /notes", "PUT /notes/:id"])
        # with 40 ids, GETs read titles that PUTs wrote: they must still be counted as GETs
        rewritten = sum(1 for t in self.store.titles.values() if t.startswith("Note from wrk"))
        self.assertGreater(rewritten, 10)

    def test_json(self):
        self.check_mode("json", ["GET /json"])

    def test_without_breakdown_the_line_is_unchanged(self):
        out = self.wrk("read", breakdown=False, threads=1)
        line = [l for l in out.splitlines() if l.startswith("WRK_JSON ")][-1]
        self.assertRegex(line, r'^WRK_JSON \{"mode":"read","requests":\d+,.*"non2xx":0,"socket_errors":0\}$')
        self.assertNotIn('"sent"', line)


if __name__ == "__main__":
    unittest.main(verbosity=2)
