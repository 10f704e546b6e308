"""verify's checks of the API itself, one function per check, each adding its
lines to the report: the statuses and content types of every request kind the load
sends (routes.*), byte-exact bodies of known rows (bytes.*), GET /json (json.*),
reads and writes against the database's rows (notes.*), malformed input refused
with nothing written (bad_input.*). They share a Checks: the target, the database,
the report and what one check leaves for the next (the posted row)."""
import json
import random
import re
import time
import urllib.parse

from loadlib.commands.verify.js import iso_ms, js_bytes, note_from_row, parse_iso
from loadlib.commands.verify.verify_target import (
    SEED_BODY, SEED_ROWS, TAGS, expect_json_response, first_difference, run_check)

ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


class Checks:
    """What the checks share: the target's API (t), the database (db), the report (r),
    a nonce that marks this run's rows, and the row check_post() wrote."""

    def __init__(self, args, target, db, report):
        self.args, self.t, self.db, self.r = args, target, db, report
        self.nonce = "%08x" % random.getrandbits(32)
        self.posted_id = None
        self.rng = random.Random()
        self.seed_max = min(SEED_ROWS, db.footprint()[1])


# -------------------- statuses and content types of what the load sends

def check_routes(c):
    some_id = c.rng.randint(1, max(1, c.seed_max))
    body = {"title": f"verify {c.nonce} route check", "body": SEED_BODY, "tag": "js"}
    cases = [("get_note", "GET", f"/notes/{some_id}", None, 200),
             ("list_by_tag", "GET", f"/notes?tag={c.rng.choice(TAGS)}", None, 200),
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
            res = c.t.send_json(method, p, obj) if obj else c.t.request(method, p)
            problem = expect_json_response(res, status)
            if kind == "insert_note" and not problem:
                route_id = json.loads(res.body)["id"]
            c.r.ok(f"routes.{kind}", not problem,
                   problem or f"{method} {p} -> {res.short()}")
        run_check(c.r, f"routes.{kind}", one)


# -------------------- byte-exact rows

def check_note_bytes(c):
    def run():
        max_id = c.db.footprint()[1]
        ids = [1, 2, 7, 8, 1000, 100000, 199999, 200000, max_id]
        ids += [c.rng.randint(1, max(1, c.seed_max)) for _ in range(4)]
        ids = [i for i in dict.fromkeys(ids) if i >= 1]
        checked = 0
        for note_id in ids:
            want = c.db.note_bytes(note_id)
            res = c.t.get(f"/notes/{note_id}")
            if want is None:
                if res.status != 404:
                    return c.r.ok("bytes.get_note", False,
                                  f"/notes/{note_id} has no row but answered {res.short()}")
                continue
            problem = expect_json_response(res, 200)
            if problem:
                return c.r.ok("bytes.get_note", False, f"/notes/{note_id}: {problem}")
            if res.body != want:
                return c.r.ok("bytes.get_note", False,
                              f"/notes/{note_id}: {first_difference(res.body, want)}")
            checked += 1
        c.r.ok("bytes.get_note", checked > 0,
               f"{checked} rows byte-exact (ids {', '.join(map(str, ids))})")
    run_check(c.r, "bytes.get_note", run)


def check_list_bytes(c):
    def run():
        for tag in TAGS + ["no-such-tag"]:
            want, want_ids = c.db.list_bytes(tag)
            res = c.t.get(f"/notes?tag={urllib.parse.quote(tag)}")
            problem = expect_json_response(res, 200)
            if problem:
                return c.r.ok("bytes.list_by_tag", False, f"tag={tag}: {problem}")
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
                return c.r.ok("bytes.list_by_tag", False,
                              detail + first_difference(res.body, want))
        c.r.ok("bytes.list_by_tag", True,
               f"{len(TAGS)} tags byte-exact, newest first, 20 each; unknown tag -> []")
    run_check(c.r, "bytes.list_by_tag", run)


# -------------------- GET /json

def check_json(c):
    def shape():
        for _ in range(20):
            res = c.t.get("/json")
            problem = expect_json_response(res, 200)
            if problem:
                return c.r.ok("json.shape", False, problem)
            obj = json.loads(res.body)
            bad = json_problem(obj, res.body)
            if bad:
                return c.r.ok("json.shape", False, bad)
        c.r.ok("json.shape", True,
               f"20 answers: id a number in 1..{SEED_ROWS}, tag = TAGS[id % 8], "
               f"seed title/body, created_at with ms, exact JSON.stringify bytes")

    def fresh():
        a = json.loads(c.t.get("/json").body)["created_at"]
        time.sleep(0.005)
        t_b = time.time()
        b = json.loads(c.t.get("/json").body)["created_at"]
        skew = [abs(parse_iso(x) - t_b) for x in (a, b)]
        ok = a != b or min(skew) < 1.0
        c.r.ok("json.fresh", ok,
               f"two answers 5 ms apart: {a} / {b}; off from this clock by "
               f"{min(skew) * 1000:.0f} ms")

    run_check(c.r, "json.shape", shape)
    run_check(c.r, "json.fresh", fresh)


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


# -------------------- reads and writes

def missing_id(c):
    return c.db.footprint()[1] + 1000000


def check_get_missing(c):
    def run():
        mid = missing_id(c)
        res = c.t.get(f"/notes/{mid}")
        c.r.ok("notes.get_missing", res.status == 404,
               f"GET /notes/{mid} -> {res.short()}" + ("" if res.status == 404 else
                                                       ", expected 404"))
    run_check(c.r, "notes.get_missing", run)


def check_post(c):
    def run():
        fields = {"title": f'verify {c.nonce} post "quoted" back\\slash\ttab\nline',
                  "body": "ctl \u0001\u001f del \u007f é ü ☃ 😀 \u2028 </script>",
                  "tag": "verify-" + c.nonce}
        before = c.db.footprint()
        res = c.t.send_json("POST", "/notes", fields)
        problem = expect_json_response(res, 201)
        if problem:
            return c.r.ok("notes.post", False, problem + f"; body {res.body[:120]!r}")
        obj = json.loads(res.body)
        if not isinstance(obj.get("id"), str):
            return c.r.ok("notes.post", False, f"id {obj.get('id')!r} is not a JSON string")
        row = c.db.row(obj["id"])
        after = c.db.footprint()
        if row is None:
            return c.r.ok("notes.post", False,
                          f"answered id {obj['id']} but the database has no such row")
        c.posted_id = int(row[0])
        got = {"title": row[1], "body": row[2], "tag": row[3]}
        if got != fields:
            return c.r.ok("notes.post", False,
                          f"row {row[0]} holds {got!r}, sent {fields!r}")
        if after[0] != before[0] + 1:
            return c.r.ok("notes.post", False,
                          f"row count went {before[0]} -> {after[0]}, expected +1")
        age = (c.db.now_us() - row[4]) / 1e6
        if not -5 <= age <= 60:
            return c.r.ok("notes.post", False, f"created_at is {age:.1f} s from now()")
        want = js_bytes(note_from_row(row))
        if res.body != want:
            return c.r.ok("notes.post", False, first_difference(res.body, want))
        c.r.ok("notes.post", True,
               f"201, row {row[0]} written with exactly the sent fields (escapes, UTF-8), "
               f"created_at now(), body byte-exact")
    run_check(c.r, "notes.post", run)


def check_put(c):
    def run():
        note_id = c.posted_id or c.db.footprint()[1]
        old = c.db.row(note_id)
        fields = {"title": f"verify {c.nonce} put \\ \"changed\"",
                  "body": f"changed body {c.nonce} ✓",
                  "tag": "perf" if old[3] != "perf" else "http"}
        res = c.t.send_json("PUT", f"/notes/{note_id}", fields)
        problem = expect_json_response(res, 200)
        if problem:
            return c.r.ok("notes.put", False, problem + f"; body {res.body[:120]!r}")
        new = c.db.row(note_id)
        got = {"title": new[1], "body": new[2], "tag": new[3]}
        if got != fields:
            was = {"title": old[1], "body": old[2], "tag": old[3]}
            same = " (unchanged: the update was not written)" if got == was else ""
            return c.r.ok("notes.put", False,
                          f"200 but row {note_id} in the database holds {got!r}, "
                          f"sent {fields!r}{same}")
        if new[4] != old[4]:
            return c.r.ok("notes.put", False,
                          f"created_at changed: {iso_ms(old[4])} -> {iso_ms(new[4])}")
        want = js_bytes(note_from_row(new))
        if res.body != want:
            return c.r.ok("notes.put", False, "answer: " + first_difference(res.body, want))
        again = c.t.get(f"/notes/{note_id}")
        if again.body != want:
            return c.r.ok("notes.put", False,
                          f"GET after PUT: {again.short()}, " +
                          first_difference(again.body, want))
        c.r.ok("notes.put", True,
               f"200, row {note_id} changed in the database, created_at unchanged "
               f"({iso_ms(new[4])}), answer and a later GET byte-exact")
    run_check(c.r, "notes.put", run)


def check_put_missing(c):
    def run():
        mid = missing_id(c)
        before = c.db.footprint()
        fields = {"title": f"verify {c.nonce} put missing", "body": "b", "tag": "js"}
        res = c.t.send_json("PUT", f"/notes/{mid}", fields)
        written = trace_of_write(c, before, fields["title"])
        ok = res.status == 404 and not written
        c.r.ok("notes.put_missing", ok,
               f"PUT /notes/{mid} -> {res.short()}" +
               ("" if res.status == 404 else ", expected 404") +
               (f"; {written}" if written else ""))
    run_check(c.r, "notes.put_missing", run)


def trace_of_write(c, before, title, row_id=None, row_before=None):
    """'' when the database shows no trace of a write, else what changed."""
    after, n = c.db.footprint_and_titled(title)
    changes = []
    if after != before:
        changes.append(f"rows/max id {before} -> {after}")
    if n:
        changes.append(f"{n} row(s) with the sent title")
    if row_id is not None and c.db.row(row_id) != row_before:
        changes.append(f"row {row_id} changed")
    return "; ".join(changes)


# -------------------- bad input

def check_bad_input(c):
    target_id = c.posted_id or 1
    title = f"verify {c.nonce} bad input"
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
            before = c.db.footprint()
            row_before = c.db.row(target_id)
            headers = {"Content-Type": ctype} if ctype else {}
            res = c.t.request(method, path, body, headers)
            written = trace_of_write(c, before, title, target_id, row_before)
            refused = 400 <= res.status <= 599
            detail = f"{method} {path} -> {res.short()}"
            if not refused:
                detail += ", expected a 4xx or 5xx"
            detail += f"; {written}" if written else ", nothing written"
            c.r.ok(f"bad_input.{name}", refused and not written, detail,
                   http_status=res.status)
        run_check(c.r, f"bad_input.{name}", one)
