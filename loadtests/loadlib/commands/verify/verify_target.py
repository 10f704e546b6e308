"""verify's two ends and its report: the target's API over HTTP (Api), the
database it uses (Db, through Debian's python3-psycopg2), and the check lines
(Report) with the helpers every check uses."""
import json
import sys
import urllib.parse

from loadlib import httpc, mixes
from loadlib.commands.verify.js import js_bytes, note_from_row

try:
    import psycopg2
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("verify: psycopg2 is missing; run with Debian's /usr/bin/python3 "
             "(apt-get install python3-psycopg2)")

TAGS = mixes.TAGS
SEED_BODY = mixes.NOTE_BODY
SEED_ROWS = 200000
JSON_CT = "application/json; charset=utf-8"
KINDS = ("get_note", "list_by_tag", "insert_note", "update_note")
ROW_SQL = ("select id::text, title, body, tag, "
           "(extract(epoch from created_at) * 1000000)::bigint from notes")


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def ctype(self):
        return self.headers.get("content-type", "")

    def short(self):
        return f"{self.status} {self.ctype or '(no content-type)'}"


class Api:
    """The target's notes API at --base-url (any path prefix kept), one request per call."""

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
    """The database the target uses: its rows as the API must render them."""

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

    def footprint_and_titled(self, title):
        """((rows, max id), rows with `title`): footprint() and the count of rows a
        write with that title left, in one pass over the table instead of two."""
        rows, max_id, titled = self.one("select count(*), coalesce(max(id), 0), "
                                        "count(*) filter (where title = %s) from notes", (title,))
        return (rows, max_id), titled

    def now_us(self):
        return self.one("select (extract(epoch from clock_timestamp()) * 1000000)::bigint")[0]


class Report:
    """The checks' results, each printed as it comes: name, PASS/FAIL/SKIP, detail."""

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
