#!/usr/bin/python3
"""broken_target.py: the notes API from the same database, with one defect on purpose.

    loadtests/verification/broken_target.py --db-url postgresql://... \\
        [--host 127.0.0.1] [--port 18210] [--defect none]

A small implementation of the notes routes on Python's http.server (one thread
per connection, one psycopg2 connection per thread, the reference's SQL text),
for testing loadtests/verify: with `--defect none` it answers as the reference
does and verify passes; every other defect breaks one thing verify checks:

  id-number  a row's id as a JSON number instead of a string    -> bytes.get_note
  no-ms      created_at without milliseconds ("...T08:14:17Z")  -> bytes.get_note
  order      GET /notes?tag= lists the newest 20 oldest-first   -> bytes.list_by_tag
  no-write   PUT answers 200 with the new fields, but only reads
             the row: nothing is written                        -> notes.put
  cache      GET /notes/:id answers from memory after the first
             read of an id (PUT refreshes the entry, so answers
             stay right); the database sees fewer reads than
             requests were answered                             -> work.db_calls

Routes: GET /notes/:id, GET /notes?tag=, POST /notes, PUT /notes/:id,
GET /json, GET /status. Not for benchmarks (Python, a thread per connection),
and without a metrics port.
"""
import argparse
import datetime
import json
import os
import random
import re
import signal
import socketserver
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg2

sys.dont_write_bytecode = True   # no __pycache__ next to the scripts
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # loadtests/

from loadlib.mixes import NOTE_BODY as SEED_BODY, TAGS  # noqa: E402

DEFECTS = ("none", "id-number", "no-ms", "order", "no-write", "cache")
JSON_CT = "application/json; charset=utf-8"
TEXT_CT = "text/plain; charset=utf-8"
COLUMNS = "id, title, body, tag, created_at"
SQL_GET = f"select {COLUMNS} from notes where id = %s"
SQL_LIST = f"select {COLUMNS} from notes where tag = %s order by id desc limit 20"
SQL_INSERT = (f"insert into notes (title, body, tag, created_at) values (%s, %s, %s, now()) "
              f"returning {COLUMNS}")
SQL_UPDATE = f"update notes set title = %s, body = %s, tag = %s where id = %s returning {COLUMNS}"
ID_RE = re.compile(r"^[0-9]+$")
MAX_BIGINT = 2 ** 63 - 1


class BadRequest(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def iso(dt, defect):
    """Date.toISOString() of a timestamptz: UTC, milliseconds truncated."""
    utc = dt.astimezone(datetime.timezone.utc)
    if defect == "no-ms":
        return utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (utc.microsecond // 1000)


def js_json(value):
    """JSON.stringify: no spaces, UTF-8 as is (json's escapes agree with it)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class App:
    def __init__(self, db_url, defect):
        self.db_url, self.defect = db_url, defect
        self.local = threading.local()
        self.cache = {}
        self.cache_lock = threading.Lock()

    def db(self):
        conn = getattr(self.local, "conn", None)
        if conn is None or conn.closed:
            conn = psycopg2.connect(self.db_url, application_name="broken_target")
            conn.autocommit = True
            self.local.conn = conn
        return conn

    def query(self, sql, args):
        try:
            with self.db().cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall()
        except psycopg2.Error:
            conn = getattr(self.local, "conn", None)
            if conn is not None and conn.closed:
                self.local.conn = None
            raise

    def note(self, row):
        note_id = row[0] if self.defect == "id-number" else str(row[0])
        return {"id": note_id, "title": row[1], "body": row[2], "tag": row[3],
                "created_at": iso(row[4], self.defect)}

    # ---- handlers: each returns (status, content type, body bytes)

    def get_note(self, note_id):
        if self.defect == "cache":
            with self.cache_lock:
                hit = self.cache.get(note_id)
            if hit is not None:
                return 200, JSON_CT, hit
        rows = self.query(SQL_GET, (note_id,))
        if not rows:
            return 404, TEXT_CT, b"Not Found"
        body = js_json(self.note(rows[0]))
        if self.defect == "cache":
            with self.cache_lock:
                self.cache[note_id] = body
        return 200, JSON_CT, body

    def list_by_tag(self, tag):
        rows = self.query(SQL_LIST, (tag,))
        notes = [self.note(r) for r in rows]
        if self.defect == "order":
            notes.reverse()
        return 200, JSON_CT, js_json(notes)

    def insert(self, fields):
        rows = self.query(SQL_INSERT, fields)
        return 201, JSON_CT, js_json(self.note(rows[0]))

    def update(self, note_id, fields):
        if self.defect == "no-write":
            rows = self.query(SQL_GET, (note_id,))
            if not rows:
                return 404, TEXT_CT, b"Not Found"
            row = rows[0]
            return 200, JSON_CT, js_json(self.note((row[0], *fields, row[4])))
        rows = self.query(SQL_UPDATE, (*fields, note_id))
        if not rows:
            return 404, TEXT_CT, b"Not Found"
        body = js_json(self.note(rows[0]))
        if self.defect == "cache":
            with self.cache_lock:
                self.cache[note_id] = body
        return 200, JSON_CT, body

    @staticmethod
    def json_note():
        note_id = random.randint(1, 200000)
        tag = TAGS[note_id % 8]
        now = datetime.datetime.now(datetime.timezone.utc)
        return 200, JSON_CT, js_json({
            "id": note_id, "title": f"Note {note_id} about {tag}", "body": SEED_BODY, "tag": tag,
            "created_at": now.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (now.microsecond // 1000)})


def parse_id(text):
    if not ID_RE.match(text) or not 1 <= int(text) <= MAX_BIGINT:
        raise BadRequest(400, "id must be a positive integer")
    return int(text)


def parse_fields(headers, raw):
    ctype = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise BadRequest(415, "Content-Type must be application/json")
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadRequest(400, "body is not JSON") from None
    if not isinstance(obj, dict):
        raise BadRequest(400, "body must be an object")
    fields = tuple(obj.get(k) for k in ("title", "body", "tag"))
    if not all(isinstance(f, str) and "\x00" not in f for f in fields):
        raise BadRequest(400, "title, body and tag must be strings")
    return fields


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes; without TCP_NODELAY the second
    # waits for the client's delayed ACK (40 ms)
    disable_nagle_algorithm = True
    app = None  # set in main()

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, ctype, body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def dispatch(self, method):
        raw = self.read_body() if method in ("POST", "PUT") else b""
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        try:
            if method == "GET" and path == "/status":
                return self.answer(200, JSON_CT, b'{"status":"ok"}')
            if method == "GET" and path == "/json":
                return self.answer(*self.app.json_note())
            if path == "/notes":
                if method == "GET":
                    tags = urllib.parse.parse_qs(url.query, keep_blank_values=True).get("tag", [])
                    if len(tags) != 1 or "\x00" in tags[0]:
                        raise BadRequest(400, "exactly one tag is required")
                    return self.answer(*self.app.list_by_tag(tags[0]))
                if method == "POST":
                    return self.answer(*self.app.insert(parse_fields(self.headers, raw)))
            m = re.match(r"^/notes/([^/]+)$", path)
            if m:
                if method == "GET":
                    return self.answer(*self.app.get_note(parse_id(m.group(1))))
                if method == "PUT":
                    note_id = parse_id(m.group(1))
                    return self.answer(*self.app.update(note_id, parse_fields(self.headers, raw)))
            return self.answer(404, TEXT_CT, b"Not Found")
        except BadRequest as e:
            return self.answer(e.status, JSON_CT, js_json({"error": str(e)}))
        except psycopg2.Error as e:
            return self.answer(500, JSON_CT, js_json({"error": str(e).strip()}))

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        # clients (wrk at the end of a run) close connections mid-request
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            socketserver.BaseServer.handle_error(self, request, client_address)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--db-url", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=18210)
    p.add_argument("--defect", choices=DEFECTS, default="none")
    args = p.parse_args()
    Handler.app = App(args.db_url, args.defect)
    Handler.app.query("select 1", ())  # fail fast on a bad --db-url
    server = Server((args.host, args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"broken_target: listening on http://{args.host}:{args.port}, defect {args.defect}",
          flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
