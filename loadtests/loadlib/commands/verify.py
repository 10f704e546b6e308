"""verify: does a target implement the notes API as specified, and did it do the work?

    loadtests/verify --base-url http://127.0.0.1:8080 \\
                     --db-url postgresql://postgres@127.0.0.1:54329/notes \\
                     [--metrics-url http://127.0.0.1:9091/metrics] \\
                     [--load-seconds 5] [--connections 16] [--max-id 200000] [--json OUT]

Checks, one line each (name, PASS/FAIL/SKIP, detail); exit status 0 when every
check passes, 1 when any fails, 2 when the target or the database cannot be
reached or the arguments are wrong:

  routes.*      status and Content-Type of every request kind the load sends
  bytes.*       byte-exact bodies for known rows, built here from the database
  json.*        GET /json: shape, id and tag rule, a created_at that is "now"
  notes.*       404 for a missing id, POST and PUT really written to the database
  bad_input.*   malformed ids and bodies: any 4xx or 5xx, and nothing written
  work.*        a short wrk load (loadtests/wrk/notes.lua, MODE=mixed) against
                pg_stat_statements calls and, with --metrics-url, the target's
                own http_requests_total

Every expected body is built here from rows read with psycopg2, following
JSON.stringify and node-postgres: keys id,title,body,tag,created_at, no spaces,
id a string, created_at = Date.toISOString() of the value truncated to ms.

Side effects on the database: the checks insert two rows and update them, the
load inserts and updates rows as the benchmark's mixed mode does, and
pg_stat_statements is reset. Reseed (`sql/localdb.sh reset`) before a
benchmark run. Needs Debian's python3 with python3-psycopg2, and wrk. The load
only runs against loopback addresses.
"""
import argparse
import datetime
import json
import math
import os
import random
import re
import socket
import sys
import time
import urllib.parse

from loadlib import httpc, mixes, prom
from loadlib.netcheck import is_loopback
from loadlib.server import LOADTESTS
from loadlib.tools import wrk as wrk_tool
from loadlib.tools.run import run_measured

try:
    import psycopg2
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("verify: psycopg2 is missing; run with Debian's /usr/bin/python3 "
             "(apt-get install python3-psycopg2)")

NOTES_LUA = os.path.join(LOADTESTS, "wrk", "notes.lua")

TAGS = mixes.TAGS
SEED_BODY = mixes.NOTE_BODY
SEED_ROWS = 200000
JSON_CT = "application/json; charset=utf-8"
ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
KINDS = ("get_note", "list_by_tag", "insert_note", "update_note")

# The reference's statements as pg_stat_statements shows them: constants
# become $n (`limit 20` -> `limit $2`), and a named prepared statement keeps
# the text of its PREPARE. Whitespace is collapsed and case folded first.
_COLS = r"id, title, body, tag, created_at"
STATEMENTS = {
    "get_note": rf"select {_COLS} from notes where id = \$1",
    "list_by_tag": rf"select {_COLS} from notes where tag = \$1 order by id desc limit (\$2|20)",
    "insert_note": rf"insert into notes \(title, body, tag, created_at\) values "
                   rf"\(\$1, \$2, \$3, now\(\)\) returning {_COLS}",
    "update_note": rf"update notes set title = \$1, body = \$2, tag = \$3 where id = \$4 "
                   rf"returning {_COLS}",
}
STATEMENT_RES = {k: re.compile(r"^(prepare \S+ as )?" + v + r"$") for k, v in STATEMENTS.items()}
# metrics route templates -> request kind
METRIC_KINDS = {("GET", "/notes/:id"): "get_note", ("GET", "/notes"): "list_by_tag",
                ("POST", "/notes"): "insert_note", ("PUT", "/notes/:id"): "update_note"}

ROW_SQL = ("select id::text, title, body, tag, "
           "(extract(epoch from created_at) * 1000000)::bigint from notes")


# ------------------------------------------------------------------ JSON.stringify

def js_string(s):
    """JSON.stringify of a string: \\" \\\\ \\b \\f \\n \\r \\t, other C0 controls
    and lone surrogates as \\u00xx (lower-case hex); everything else as is."""
    out = ['"']
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
             "\t": "\\t"}
    for ch in s:
        o = ord(ch)
        if ch in short:
            out.append(short[ch])
        elif o < 0x20 or 0xD800 <= o <= 0xDFFF:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def js_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return js_string(v)
    if isinstance(v, list):
        return "[" + ",".join(js_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(js_string(k) + ":" + js_value(x) for k, x in v.items()) + "}"
    raise TypeError(f"cannot render {type(v).__name__}")


def js_bytes(v):
    return js_value(v).encode("utf-8")


def iso_ms(epoch_us):
    """Date.prototype.toISOString() of epoch microseconds truncated to ms."""
    ms = epoch_us // 1000
    dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (
        dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, ms % 1000)


def note_from_row(row):
    return {"id": row[0], "title": row[1], "body": row[2], "tag": row[3],
            "created_at": iso_ms(row[4])}


# ------------------------------------------------------------------ target and database

class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def ctype(self):
        return self.headers.get("content-type", "")

    def short(self):
        return f"{self.status} {self.ctype or '(no content-type)'}"


class Target:
    def __init__(self, base_url, timeout=15.0):
        u = urllib.parse.urlsplit(base_url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"--base-url must be http://host:port (got {base_url!r})")
        self.base_url = base_url.rstrip("/")
        self.host, self.port = u.hostname, u.port or 80
        self.prefix = u.path.rstrip("/")
        self.timeout = timeout

    def request(self, method, path, body=None, headers=None):
        return Response(*httpc.request(self.port, self.prefix + path, timeout=self.timeout, method=method,
                                       body=body, headers=headers, host=self.host))

    def get(self, path):
        return self.request("GET", path)

    def send_json(self, method, path, obj, content_type="application/json"):
        body = obj if isinstance(obj, (str, bytes)) else json.dumps(obj, ensure_ascii=False)
        return self.request(method, path, body, {"Content-Type": content_type})


class Db:
    def __init__(self, url):
        self.conn = psycopg2.connect(url, connect_timeout=10, application_name="verify")
        self.conn.autocommit = True

    def all(self, sql, args=()):
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall()

    def one(self, sql, args=()):
        rows = self.all(sql, args)
        return rows[0] if rows else None

    def row(self, note_id):
        return self.one(ROW_SQL + " where id = %s", (int(note_id),))

    def note_bytes(self, note_id):
        row = self.row(note_id)
        return None if row is None else js_bytes(note_from_row(row))

    def list_bytes(self, tag):
        rows = self.all(ROW_SQL + " where tag = %s order by notes.id desc limit 20", (tag,))
        return js_bytes([note_from_row(r) for r in rows]), [int(r[0]) for r in rows]

    def footprint(self):
        """(rows, max id): what a write would change."""
        return self.one("select count(*), coalesce(max(id), 0) from notes")

    def now_us(self):
        return self.one("select (extract(epoch from clock_timestamp()) * 1000000)::bigint")[0]


# ------------------------------------------------------------------ report

class Report:
    def __init__(self):
        self.checks = []

    def add(self, name, status, detail, **data):
        self.checks.append({"name": name, "status": status, "detail": detail, **data})
        line = f"{name:<38} {status:<4}  {detail}"
        print(line, flush=True)

    def ok(self, name, cond, detail, **data):
        self.add(name, "PASS" if cond else "FAIL", detail, **data)
        return cond

    def failed(self):
        return [c for c in self.checks if c["status"] == "FAIL"]


def first_difference(got, want, width=40):
    """A short description of where two byte strings first differ."""
    n = min(len(got), len(want))
    i = next((k for k in range(n) if got[k] != want[k]), n)
    lo = max(0, i - width // 2)
    return (f"first difference at byte {i} (got {len(got)} bytes, expected {len(want)}): "
            f"got {got[lo:i + width // 2]!r} expected {want[lo:i + width // 2]!r}")


def run_check(report, name, fn):
    """Runs one check function; an exception is a failure of that check."""
    try:
        fn()
    except OSError as e:
        report.add(name, "FAIL", f"request failed: {type(e).__name__}: {e}")
    except psycopg2.Error as e:
        report.add(name, "FAIL", f"database error: {str(e).strip()}")
    except (ValueError, KeyError, TypeError) as e:
        report.add(name, "FAIL", f"unexpected answer: {type(e).__name__}: {e}")


def expect_json_response(res, status):
    """'' when res has `status` and the JSON content type, else what is wrong."""
    problems = []
    if res.status != status:
        problems.append(f"status {res.status}, expected {status}")
    if res.ctype != JSON_CT:
        problems.append(f"Content-Type {res.ctype!r}, expected {JSON_CT!r}")
    cl = res.headers.get("content-length")
    if cl is not None and cl != str(len(res.body)):
        problems.append(f"Content-Length {cl} but {len(res.body)} body bytes")
    return "; ".join(problems)


# ------------------------------------------------------------------ the checks

class Verifier:
    def __init__(self, args, target, db, report):
        self.args, self.t, self.db, self.r = args, target, db, report
        self.nonce = "%08x" % random.getrandbits(32)
        self.posted_id = None
        self.rng = random.Random()
        self.seed_max = min(SEED_ROWS, db.footprint()[1])

    # ---- statuses and content types of what the load sends

    def check_routes(self):
        some_id = self.rng.randint(1, max(1, self.seed_max))
        body = {"title": f"verify {self.nonce} route check", "body": SEED_BODY, "tag": "js"}
        cases = [("get_note", "GET", f"/notes/{some_id}", None, 200),
                 ("list_by_tag", "GET", f"/notes?tag={self.rng.choice(TAGS)}", None, 200),
                 ("insert_note", "POST", "/notes", body, 201),
                 ("update_note", "PUT", None, body, 200),
                 ("get_json", "GET", "/json", None, 200)]
        route_id = None
        for kind, method, path, obj, status in cases:
            def one():
                nonlocal route_id
                p = path
                if kind == "update_note":
                    p = f"/notes/{route_id or some_id}"
                res = self.t.send_json(method, p, obj) if obj else self.t.request(method, p)
                problem = expect_json_response(res, status)
                if kind == "insert_note" and not problem:
                    route_id = json.loads(res.body)["id"]
                self.r.ok(f"routes.{kind}", not problem,
                          problem or f"{method} {p} -> {res.short()}")
            run_check(self.r, f"routes.{kind}", one)

    # ---- byte-exact rows

    def check_note_bytes(self):
        def run():
            max_id = self.db.footprint()[1]
            ids = [1, 2, 7, 8, 1000, 100000, 199999, 200000, max_id]
            ids += [self.rng.randint(1, max(1, self.seed_max)) for _ in range(4)]
            ids = [i for i in dict.fromkeys(ids) if i >= 1]
            checked = 0
            for note_id in ids:
                want = self.db.note_bytes(note_id)
                res = self.t.get(f"/notes/{note_id}")
                if want is None:
                    if res.status != 404:
                        return self.r.ok("bytes.get_note", False,
                                         f"/notes/{note_id} has no row but answered {res.short()}")
                    continue
                problem = expect_json_response(res, 200)
                if problem:
                    return self.r.ok("bytes.get_note", False, f"/notes/{note_id}: {problem}")
                if res.body != want:
                    return self.r.ok("bytes.get_note", False,
                                     f"/notes/{note_id}: {first_difference(res.body, want)}")
                checked += 1
            self.r.ok("bytes.get_note", checked > 0,
                      f"{checked} rows byte-exact (ids {', '.join(map(str, ids))})")
        run_check(self.r, "bytes.get_note", run)

    def check_list_bytes(self):
        def run():
            for tag in TAGS + ["no-such-tag"]:
                want, want_ids = self.db.list_bytes(tag)
                res = self.t.get(f"/notes?tag={urllib.parse.quote(tag)}")
                problem = expect_json_response(res, 200)
                if problem:
                    return self.r.ok("bytes.list_by_tag", False, f"tag={tag}: {problem}")
                if res.body != want:
                    detail = f"tag={tag}: "
                    try:
                        got_ids = [int(n["id"]) for n in json.loads(res.body)]
                        if got_ids != want_ids:
                            same = sorted(got_ids) == sorted(want_ids)
                            order = "same rows, wrong order; " if same else ""
                            detail += (f"{order}ids {got_ids[:4]}... (n={len(got_ids)}), expected "
                                       f"{want_ids[:4]}... (n={len(want_ids)}, order by id desc "
                                       f"limit 20); ")
                    except (ValueError, KeyError, TypeError):
                        pass
                    return self.r.ok("bytes.list_by_tag", False,
                                     detail + first_difference(res.body, want))
            self.r.ok("bytes.list_by_tag", True,
                      f"{len(TAGS)} tags byte-exact, newest first, 20 each; unknown tag -> []")
        run_check(self.r, "bytes.list_by_tag", run)

    # ---- GET /json

    def check_json(self):
        def shape():
            for _ in range(20):
                res = self.t.get("/json")
                problem = expect_json_response(res, 200)
                if problem:
                    return self.r.ok("json.shape", False, problem)
                obj = json.loads(res.body)
                bad = self.json_problem(obj, res.body)
                if bad:
                    return self.r.ok("json.shape", False, bad)
            self.r.ok("json.shape", True,
                      f"20 answers: id a number in 1..{SEED_ROWS}, tag = TAGS[id % 8], "
                      f"seed title/body, created_at with ms, exact JSON.stringify bytes")

        def fresh():
            a = json.loads(self.t.get("/json").body)["created_at"]
            time.sleep(0.005)
            t_b = time.time()
            b = json.loads(self.t.get("/json").body)["created_at"]
            skew = [abs(parse_iso(x) - t_b) for x in (a, b)]
            ok = a != b or min(skew) < 1.0
            self.r.ok("json.fresh", ok,
                      f"two answers 5 ms apart: {a} / {b}; off from this clock by "
                      f"{min(skew) * 1000:.0f} ms")

        run_check(self.r, "json.shape", shape)
        run_check(self.r, "json.fresh", fresh)

    @staticmethod
    def json_problem(obj, body):
        if not isinstance(obj, dict) or list(obj) != ["id", "title", "body", "tag", "created_at"]:
            return f"keys {list(obj) if isinstance(obj, dict) else type(obj).__name__}, " \
                   f"expected id,title,body,tag,created_at: {body[:120]!r}"
        nid = obj["id"]
        if not isinstance(nid, int) or isinstance(nid, bool):
            return f"id {nid!r} is not a JSON number"
        if not 1 <= nid <= SEED_ROWS:
            return f"id {nid} outside 1..{SEED_ROWS}"
        tag = TAGS[nid % 8]
        if obj["tag"] != tag:
            return f"id {nid}: tag {obj['tag']!r}, expected TAGS[{nid} % 8] = {tag!r}"
        if obj["title"] != f"Note {nid} about {tag}":
            return f"title {obj['title']!r}, expected 'Note {nid} about {tag}'"
        if obj["body"] != SEED_BODY:
            return f"body {obj['body'][:40]!r}... is not the seed body"
        if not isinstance(obj["created_at"], str) or not ISO_RE.match(obj["created_at"]):
            return f"created_at {obj['created_at']!r} is not Date.toISOString()"
        want = js_bytes(obj)
        if body != want:
            return "bytes differ from JSON.stringify: " + first_difference(body, want)
        return ""

    # ---- reads and writes

    def missing_id(self):
        return self.db.footprint()[1] + 1000000

    def check_get_missing(self):
        def run():
            mid = self.missing_id()
            res = self.t.get(f"/notes/{mid}")
            self.r.ok("notes.get_missing", res.status == 404,
                      f"GET /notes/{mid} -> {res.short()}" + ("" if res.status == 404 else
                                                              ", expected 404"))
        run_check(self.r, "notes.get_missing", run)

    def check_post(self):
        def run():
            fields = {"title": f'verify {self.nonce} post "quoted" back\\slash\ttab\nline',
                      "body": "ctl \u0001\u001f del \u007f é ü ☃ 😀 \u2028 </script>",
                      "tag": "verify-" + self.nonce}
            before = self.db.footprint()
            res = self.t.send_json("POST", "/notes", fields)
            problem = expect_json_response(res, 201)
            if problem:
                return self.r.ok("notes.post", False, problem + f"; body {res.body[:120]!r}")
            obj = json.loads(res.body)
            if not isinstance(obj.get("id"), str):
                return self.r.ok("notes.post", False, f"id {obj.get('id')!r} is not a JSON string")
            row = self.db.row(obj["id"])
            after = self.db.footprint()
            if row is None:
                return self.r.ok("notes.post", False,
                                 f"answered id {obj['id']} but the database has no such row")
            self.posted_id = int(row[0])
            got = {"title": row[1], "body": row[2], "tag": row[3]}
            if got != fields:
                return self.r.ok("notes.post", False,
                                 f"row {row[0]} holds {got!r}, sent {fields!r}")
            if after[0] != before[0] + 1:
                return self.r.ok("notes.post", False,
                                 f"row count went {before[0]} -> {after[0]}, expected +1")
            age = (self.db.now_us() - row[4]) / 1e6
            if not -5 <= age <= 60:
                return self.r.ok("notes.post", False, f"created_at is {age:.1f} s from now()")
            want = js_bytes(note_from_row(row))
            if res.body != want:
                return self.r.ok("notes.post", False, first_difference(res.body, want))
            self.r.ok("notes.post", True,
                      f"201, row {row[0]} written with exactly the sent fields (escapes, UTF-8), "
                      f"created_at now(), body byte-exact")
        run_check(self.r, "notes.post", run)

    def check_put(self):
        def run():
            note_id = self.posted_id or self.db.footprint()[1]
            old = self.db.row(note_id)
            fields = {"title": f"verify {self.nonce} put \\ \"changed\"",
                      "body": f"changed body {self.nonce} ✓",
                      "tag": "perf" if old[3] != "perf" else "http"}
            res = self.t.send_json("PUT", f"/notes/{note_id}", fields)
            problem = expect_json_response(res, 200)
            if problem:
                return self.r.ok("notes.put", False, problem + f"; body {res.body[:120]!r}")
            new = self.db.row(note_id)
            got = {"title": new[1], "body": new[2], "tag": new[3]}
            if got != fields:
                was = {"title": old[1], "body": old[2], "tag": old[3]}
                same = " (unchanged: the update was not written)" if got == was else ""
                return self.r.ok("notes.put", False,
                                 f"200 but row {note_id} in the database holds {got!r}, "
                                 f"sent {fields!r}{same}")
            if new[4] != old[4]:
                return self.r.ok("notes.put", False,
                                 f"created_at changed: {iso_ms(old[4])} -> {iso_ms(new[4])}")
            want = js_bytes(note_from_row(new))
            if res.body != want:
                return self.r.ok("notes.put", False, "answer: " + first_difference(res.body, want))
            again = self.t.get(f"/notes/{note_id}")
            if again.body != want:
                return self.r.ok("notes.put", False,
                                 f"GET after PUT: {again.short()}, " +
                                 first_difference(again.body, want))
            self.r.ok("notes.put", True,
                      f"200, row {note_id} changed in the database, created_at unchanged "
                      f"({iso_ms(new[4])}), answer and a later GET byte-exact")
        run_check(self.r, "notes.put", run)

    def check_put_missing(self):
        def run():
            mid = self.missing_id()
            before = self.db.footprint()
            fields = {"title": f"verify {self.nonce} put missing", "body": "b", "tag": "js"}
            res = self.t.send_json("PUT", f"/notes/{mid}", fields)
            written = self.written(before, fields["title"])
            ok = res.status == 404 and not written
            self.r.ok("notes.put_missing", ok,
                      f"PUT /notes/{mid} -> {res.short()}" +
                      ("" if res.status == 404 else ", expected 404") +
                      (f"; {written}" if written else ""))
        run_check(self.r, "notes.put_missing", run)

    def written(self, before, title, row_id=None, row_before=None):
        """'' when the database shows no trace of a write, else what changed."""
        after = self.db.footprint()
        changes = []
        if after != before:
            changes.append(f"rows/max id {before} -> {after}")
        n = self.db.one("select count(*) from notes where title = %s", (title,))[0]
        if n:
            changes.append(f"{n} row(s) with the sent title")
        if row_id is not None and self.db.row(row_id) != row_before:
            changes.append(f"row {row_id} changed")
        return "; ".join(changes)

    # ---- bad input

    def check_bad_input(self):
        target_id = self.posted_id or 1
        title = f"verify {self.nonce} bad input"
        good = {"title": title, "body": "b", "tag": "js"}
        good_text = json.dumps(good)
        cases = [
            ("get_id_not_a_number", "GET", "/notes/abc", None, None),
            ("get_id_overflow", "GET", "/notes/99999999999999999999", None, None),
            ("post_not_json", "POST", "/notes", '{"title": "' + title, "application/json"),
            ("post_trailing_bytes", "POST", "/notes", good_text + " x", "application/json"),
            ("post_not_an_object", "POST", "/notes", "[1,2]", "application/json"),
            ("post_missing_field", "POST", "/notes", json.dumps({"title": title, "body": "b"}),
             "application/json"),
            ("post_wrong_type", "POST", "/notes", json.dumps({"title": title, "body": "b",
                                                               "tag": 5}), "application/json"),
            ("post_not_json_content_type", "POST", "/notes", good_text, "text/plain"),
            ("put_id_not_a_number", "PUT", "/notes/abc", good_text, "application/json"),
            ("put_id_overflow", "PUT", "/notes/99999999999999999999", good_text,
             "application/json"),
            ("put_missing_field", "PUT", f"/notes/{target_id}",
             json.dumps({"title": title, "tag": "js"}), "application/json"),
            ("put_null_field", "PUT", f"/notes/{target_id}",
             json.dumps({"title": title, "body": None, "tag": "js"}), "application/json"),
        ]
        for name, method, path, body, ctype in cases:
            def one():
                before = self.db.footprint()
                row_before = self.db.row(target_id)
                headers = {"Content-Type": ctype} if ctype else {}
                res = self.t.request(method, path, body, headers)
                written = self.written(before, title, target_id, row_before)
                refused = 400 <= res.status <= 599
                detail = f"{method} {path} -> {res.short()}"
                if not refused:
                    detail += ", expected a 4xx or 5xx"
                detail += f"; {written}" if written else ", nothing written"
                self.r.ok(f"bad_input.{name}", refused and not written, detail,
                          http_status=res.status)
            run_check(self.r, f"bad_input.{name}", one)

    # ---- did the work happen?

    def stat_calls(self):
        """{kind: calls} from pg_stat_statements in this database, and the
        statements on `notes` that matched none of the four."""
        rows = self.db.all(
            "select query, sum(calls)::bigint from pg_stat_statements "
            "where dbid = (select oid from pg_database where datname = current_database()) "
            "group by query")
        calls = {k: 0 for k in KINDS}
        other = []
        for query, n in rows:
            norm = " ".join(query.split()).lower().rstrip(";")
            kind = next((k for k, rx in STATEMENT_RES.items() if rx.match(norm)), None)
            if kind:
                calls[kind] += n
            elif re.search(r"\bnotes\b", norm) and "pg_stat_statements" not in norm \
                    and "application_name" not in norm:
                other.append((norm[:100], n))
        return calls, other

    def scrape(self):
        url = self.args.metrics_url
        status, text = prom.scrape_text(url, timeout=10)
        if status != 200:
            raise OSError(f"{url} answered {status}")
        counts = {k: 0 for k in KINDS}
        others = {}
        for name, labels, value in prom.parse_lenient(text):
            if name != "http_requests_total" or not labels:
                continue
            kind = METRIC_KINDS.get((labels.get("method"), labels.get("path")))
            if kind:
                counts[kind] += int(value)
            else:
                key = f'{labels.get("method")} {labels.get("path")} {labels.get("status_code")}'
                others[key] = others.get(key, 0) + int(value)
        return counts, others

    def check_work(self):
        a = self.args
        c = a.connections
        try:
            ext = self.db.one("select extversion from pg_extension "
                              "where extname = 'pg_stat_statements'")
            if not ext:
                raise psycopg2.Error("pg_stat_statements is not installed in this database")
            self.db.all("select pg_stat_statements_reset()")
            self.stat_calls()
        except psycopg2.Error as e:
            msg = str(e).strip().splitlines()[0]
            self.r.add("work.db_calls", "FAIL",
                       f"cannot read pg_stat_statements ({msg}); it needs "
                       f"shared_preload_libraries = 'pg_stat_statements' and "
                       f"`create extension pg_stat_statements` (sql/pg_stat_statements.sql)")
            return
        # a target may answer before its statement is accounted for: let the
        # checks' last statements settle, then start the count from zero
        time.sleep(0.2)
        self.db.all("select pg_stat_statements_reset()")
        metrics_before = None
        if a.metrics_url:
            try:
                metrics_before = self.scrape()
            except OSError as e:
                self.r.add("work.metrics", "FAIL", f"cannot scrape {a.metrics_url}: {e}")
                a.metrics_url = None
        wrk, why = run_wrk(a, self.t.base_url)
        if wrk is None:
            return self.r.add("work.load", "FAIL", f"wrk printed no WRK_JSON line ({why})")
        load_ok = wrk["requests"] > 0 and wrk["non2xx"] == 0 and wrk["socket_errors"] == 0
        self.r.ok("work.load", load_ok,
                  f"wrk -t1 -c{c} -d{a.load_seconds}s MODE=mixed MAX_ID={a.max_id}: "
                  f"{wrk['requests']} requests, {wrk['rps']} req/s, p50 {wrk['p50_ms']} ms, "
                  f"p99 {wrk['p99_ms']} ms, non-2xx {wrk['non2xx']}, "
                  f"socket errors {wrk['socket_errors']}", wrk=wrk)

        # in-flight requests finish after wrk stops: wait until the counts settle
        calls, other = self.stat_calls()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.3)
            again, other = self.stat_calls()
            if again == calls:
                break
            calls = again
        client = wrk["requests"]
        db_total = sum(calls.values())
        slack = c + wrk.get("timeouts", 0)
        diff = db_total - client
        parts = " + ".join(f"{k} {calls[k]}" for k in KINDS)
        detail = (f"client {client} requests; database {db_total} calls = {parts}; "
                  f"difference {diff:+d} (allowed 0..{slack}: requests in flight at stop)")
        ok = 0 <= diff <= slack and client > 0
        by_kind = wrk_by_kind(wrk)
        if by_kind:
            # per kind: answered <= executed <= sent
            sent, answered = by_kind
            rows = []
            for k in KINDS:
                inside = answered[k] <= calls[k] <= sent[k]
                ok = ok and inside
                rows.append(f"{k} {answered[k]}..{sent[k]} {'ok' if inside else 'OUTSIDE'} "
                            f"({calls[k]})")
            detail += ("; per kind, client answered..sent (database): " + ", ".join(rows))
        else:
            detail += "; WRK_JSON has no per-kind counts, totals compared"
        if other:
            detail += f"; other statements on notes: {other[:3]}"
        self.r.ok("work.db_calls", ok, detail, client=client, db_calls=calls,
                  client_by_kind=by_kind)

        shares = load_shares("mixed")
        worst, lines = 0.0, []
        for k in KINDS:
            expect = shares[k] * client
            sigma = math.sqrt(max(client * shares[k] * (1 - shares[k]), 1.0))
            z = (calls[k] - expect) / sigma
            worst = max(worst, abs(z) - slack / sigma)
            lines.append(f"{k} {calls[k]} (mix {shares[k] * 100:.0f}% -> {expect:.0f}, "
                         f"{z:+.1f} sd)")
        self.r.ok("work.db_mix", worst <= 5.0,
                  "per-kind database calls against the mixed mode's shares: " + "; ".join(lines)
                  + " (allowed: 5 sd + in-flight)")

        if not a.metrics_url:
            self.r.add("work.metrics", "SKIP", "no --metrics-url: the target's own "
                       "http_requests_total not compared")
            return
        try:
            metrics_after = self.scrape()
        except OSError as e:
            return self.r.add("work.metrics", "FAIL", f"cannot scrape {a.metrics_url}: {e}")
        delta = {k: metrics_after[0][k] - metrics_before[0][k] for k in KINDS}
        m_total = sum(delta.values())
        other_delta = {k: n - metrics_before[1].get(k, 0) for k, n in metrics_after[1].items()
                       if n != metrics_before[1].get(k, 0)}
        problems = []
        if not 0 <= m_total - client <= slack:
            problems.append(f"metrics count {m_total} vs client {client}")
        note = ""
        if other_delta:
            # not the load's: someone else used the target meanwhile (or a
            # request of the checks was counted late); shown, not judged
            note = f"; note: requests on other routes meanwhile: {other_delta}"
        for k in KINDS:
            if abs(delta[k] - calls[k]) > slack:
                problems.append(f"{k}: metrics {delta[k]} vs database {calls[k]}")
        detail = (f"http_requests_total delta {m_total} = " +
                  " + ".join(f"{k} {delta[k]}" for k in KINDS) +
                  f"; client {client} ({m_total - client:+d}); database {db_total} "
                  f"({db_total - m_total:+d})")
        if problems:
            detail += "; " + "; ".join(problems)
        detail += note
        self.r.ok("work.metrics", not problems, detail, metrics_delta=delta)


def parse_iso(s):
    dt = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.replace(tzinfo=datetime.timezone.utc).timestamp()


def load_shares(mode):
    """Shares of the four request kinds in a mode, from loadtests/mixes.json."""
    shares = mixes.kind_shares(mode)
    return {k: shares.get(k, 0.0) for k in KINDS}


WRK_NAMES = {"GET /notes/:id": "get_note", "GET /notes?tag=": "list_by_tag",
             "POST /notes": "insert_note", "PUT /notes/:id": "update_note"}


def wrk_by_kind(wrk):
    """(sent, answered) per kind when notes.lua printed per-name counts
    (BREAKDOWN=1: "sent":{"GET /notes/:id":N,..}, "responses":{"GET /notes/:id 200":N,..}),
    else None."""
    if not isinstance(wrk.get("sent"), dict) or not isinstance(wrk.get("responses"), dict):
        return None
    sent = {k: 0 for k in KINDS}
    answered = {k: 0 for k in KINDS}
    for name, n in wrk["sent"].items():
        if name in WRK_NAMES:
            sent[WRK_NAMES[name]] += n
    for key, n in wrk["responses"].items():
        name = key.rsplit(" ", 1)[0]
        if name in WRK_NAMES:
            answered[WRK_NAMES[name]] += n
    return sent, answered


def run_wrk(args, base_url):
    wrk = args.wrk or wrk_tool.path()
    if not wrk:
        raise SystemExit(f"verify: wrk not found ({wrk_tool.INSTALL_HINT}, or --wrk PATH)")
    env = dict(os.environ, MODE="mixed", MAX_ID=str(args.max_id), BREAKDOWN="1")
    cmd = [wrk, "-t1", f"-c{args.connections}", f"-d{args.load_seconds}s", "--timeout", "5s",
           "-s", NOTES_LUA, base_url]
    res = run_measured(cmd, env=env, timeout=args.load_seconds + 60, split_stderr=True)
    data = wrk_tool.json_line(res["output"])
    if data is not None:
        data["timeouts"] = wrk_tool.timeouts(res["output"])
        return data, ""
    tail = (res["stderr"].strip() or res["output"].strip()).splitlines()[-3:]
    return None, f"wrk exited with {res['rc']}: {' | '.join(tail) or 'no output'}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--base-url", default="http://127.0.0.1:8080")
    p.add_argument("--db-url", required=True, help="the database the target uses")
    p.add_argument("--metrics-url", help="the target's /metrics (optional)")
    p.add_argument("--load-seconds", type=int, default=5)
    p.add_argument("--connections", type=int, default=16, help="wrk -c (default 16)")
    p.add_argument("--max-id", type=int, default=SEED_ROWS,
                   help="ids the load draws from (wrk MAX_ID, default 200000)")
    p.add_argument("--wrk", help="path of wrk (default: from PATH)")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    args = p.parse_args()
    if args.load_seconds < 1 or args.connections < 1 or args.max_id < 1:
        p.error("--load-seconds, --connections and --max-id must be positive")
    if args.metrics_url and not urllib.parse.urlsplit(args.metrics_url).path:
        args.metrics_url = args.metrics_url.rstrip("/") + "/metrics"

    try:
        target = Target(args.base_url)
    except ValueError as e:
        p.error(str(e))
    if not is_loopback(target.host):
        p.error(f"{target.host} is not a loopback address; verify loads only local targets")
    if args.metrics_url and not is_loopback(urllib.parse.urlsplit(args.metrics_url).hostname or ""):
        p.error("--metrics-url must be on a loopback address")
    try:
        db = Db(args.db_url)
    except psycopg2.Error as e:
        print(f"verify: cannot connect to the database: {str(e).strip()}", file=sys.stderr)
        return 2
    try:
        socket.create_connection((target.host, target.port), timeout=5).close()
    except OSError as e:
        print(f"verify: target {args.base_url} not reachable: {e}", file=sys.stderr)
        return 2

    report = Report()
    try:
        v = Verifier(args, target, db, report)
    except psycopg2.Error as e:
        print(f"verify: cannot read the notes table: {str(e).strip()}", file=sys.stderr)
        return 2
    print(f"verify {args.base_url}  (database {db.conn.get_dsn_parameters().get('host')}:"
          f"{db.conn.get_dsn_parameters().get('port')}/{db.conn.get_dsn_parameters().get('dbname')}"
          f", load {args.load_seconds} s at -c{args.connections})")
    print(f"{'check':<38} {'':<4}  detail")
    t0 = time.monotonic()
    v.check_routes()
    v.check_note_bytes()
    v.check_list_bytes()
    v.check_json()
    v.check_get_missing()
    v.check_post()
    v.check_put()
    v.check_put_missing()
    v.check_bad_input()
    v.check_work()
    failed = report.failed()
    passed = sum(1 for c in report.checks if c["status"] == "PASS")
    print(f"{passed} passed, {len(failed)} failed"
          + (f" ({', '.join(c['name'] for c in failed)})" if failed else "")
          + f" in {time.monotonic() - t0:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.base_url, "passed": not failed, "checks": report.checks},
                      f, indent=2, ensure_ascii=False)
            f.write("\n")
    return 1 if failed else 0
