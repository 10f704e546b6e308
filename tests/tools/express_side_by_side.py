#!/usr/bin/env python3
"""Sends the same raw requests at the edges of HTTP framing, routing and
express.json to the Express peer app and to notesd, and prints both statuses;
exits 1 when any differs. Each server gets its own copy of the seeded database,
and the titles stored from lone surrogate escapes are read back from both.

Not part of CTest: it needs the peer's packages from npm. Run it by hand:

    (cd loadtests/peers/express && npm ci --omit=dev)
    cd build && python3 ../tests/integration/pg_fixture.py start /tmp/pg.json
    NOTESD_PGSTATE=/tmp/pg.json NOTESD_BIN=$PWD/notesd /usr/bin/python3 \\
        ../tests/tools/express_side_by_side.py
    python3 ../tests/integration/pg_fixture.py stop /tmp/pg.json

Debian's python3 with psycopg2 and brotli, and node on PATH.
"""
import gzip
import os
import socket
import subprocess
import sys
import zlib

import brotli

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import notes_testlib as t  # noqa: E402

PEER_DIR = os.path.join(t.REPO, "loadtests", "peers", "express")
STATIC_DIR = os.path.join(t.REPO, "loadtests", "static")
CT = "Content-Type: application/json"
GOOD = b'{"title":"t","body":"b","tag":"cmp"}'
EXACT = b'{"title":"' + b"x" * (102400 - 34) + b'","body":"b","tag":"t"}'


def get(path):
    return f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()


def post(headers, body):
    """POST /notes with Content-Length (unless a header line gives one) and the given lines."""
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        headers = [*headers, f"Content-Length: {len(body)}"]
    lines = "".join(h + "\r\n" for h in headers)
    return f"POST /notes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{lines}\r\n".encode() + body


def encoded(encoding, data, extra=()):
    return post([CT, f"Content-Encoding: {encoding}", *extra], data)


CASES = [
    ("any case", get("/NOTES/3")), ("trailing slash", get("/notes/3/")),
    ("list, any case", get("/Notes?tag=js")), ("/JSON", get("/JSON")), ("/status/", get("/status/")),
    ("//", get("//")), ("/notes/3//", get("/notes/3//")), ("/notes/./3", get("/notes/./3")),
    ("/notes/x/../3", get("/notes/x/../3")), ("/notes/%2e/3", get("/notes/%2e/3")),
    ("/n%6Ftes/3", get("/n%6Ftes/3")), ("/notes/%33", get("/notes/%33")),
    ("absolute form", get("http://example.com/status")), ("absolute, no path", get("http://example.com")),
    ("/STATIC/", get("/STATIC/app.min.js")), ("/static/./", get("/static/./app.min.js")),
    ("two lengths", post([CT, "Content-Length: 2", "Content-Length: 5"], b"{}xxx")),
    ("same length twice", post([CT, f"Content-Length: {len(GOOD)}", f"Content-Length: {len(GOOD)}"], GOOD)),
    ("length and chunked", post([CT, "Content-Length: 5", "Transfer-Encoding: chunked"], b"2\r\n{}\r\n0\r\n\r\n")),
    ("gzip", encoded("gzip", gzip.compress(GOOD))), ("GZIP", encoded("GZIP", gzip.compress(GOOD))),
    ("deflate", encoded("deflate", zlib.compress(GOOD))),
    ("raw deflate", encoded("deflate", zlib.compress(GOOD)[2:-4])),
    ("gzip, 2 members", encoded("gzip", gzip.compress(GOOD[:5]) + gzip.compress(GOOD[5:]))),
    ("gzip, zero padding", encoded("gzip", gzip.compress(GOOD) + b"\0\0\0")),
    ("gzip, junk after", encoded("gzip", gzip.compress(GOOD) + b"xyz")),
    ("deflate, junk after", encoded("deflate", zlib.compress(GOOD) + b"xyz")),
    ("br", encoded("br", brotli.compress(GOOD))),
    ("br, junk after", encoded("br", brotli.compress(GOOD) + b"xyz")),
    ("not br", encoded("br", GOOD)), ("br bomb", encoded("br", brotli.compress(b" " * 200000))),
    ("compress", encoded("compress", GOOD)), ("zstd (Node 20)", encoded("zstd", GOOD)),
    ("encoding twice", post([CT, "Content-Encoding: gzip", "Content-Encoding: gzip"],
                            gzip.compress(gzip.compress(GOOD)))),
    ("gzip bomb", encoded("gzip", gzip.compress(b" " * 200000))),
    ("gzip, exactly the limit", encoded("gzip", gzip.compress(EXACT))),
    ("BOM", post([CT], b"\xef\xbb\xbf" + GOOD)),
    ("charset latin1", post(["Content-Type: application/json; charset=iso-8859-1"], GOOD)),
    ("charset utf8", post(["Content-Type: application/json; charset=utf8"], GOOD)),
    ('charset "UTF-8"', post(['Content-Type: application/json; charset="UTF-8"'], GOOD)),
    ("lone surrogate", post([CT], b'{"title":"\\ud800","body":"b","tag":"cmp"}')),
    ("reversed pair", post([CT], b'{"title":"\\udc00\\ud800","body":"b","tag":"cmp"}')),
]


def exchange(port, data):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def status(raw):
    return raw.split(b" ", 2)[1].decode() if raw.startswith(b"HTTP/") else repr(raw[:20])


def stored_titles(name):
    with t.db_connect(name).cursor() as cur:
        cur.execute("select convert_to(title, 'UTF8') from notes where tag = 'cmp' and title <> 't' "
                    "order by id")
        return [bytes(r[0]) for r in cur.fetchall()]


def main():
    peer_url, notesd_url = t.create_database("side_peer"), t.create_database("side_notesd")
    peer_port = t.free_port()
    peer = subprocess.Popen(["node", "server.js"], cwd=PEER_DIR, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            env=dict(os.environ, DB_URL=peer_url, PORT=str(peer_port),
                                     HOST="127.0.0.1", METRICS_PORT=str(t.free_port()),
                                     STATIC_DIR=STATIC_DIR))
    notesd = t.Notesd(notesd_url, env={"STATIC_DIR": STATIC_DIR})

    def peer_up():
        assert peer.poll() is None, "the peer exited (npm ci in loadtests/peers/express?)"
        try:
            return t.request(peer_port, "GET", "/status")[0] == 200
        except OSError:
            return False

    try:
        t.poll(peer_up, timeout=20, what="the Express peer")
        differ = 0
        for name, data in CASES:
            a, b = status(exchange(peer_port, data)), status(exchange(notesd.port, data))
            differ += a != b
            print(f"{name:24} express {a:4} notesd {b:4}{'   <-- differs' if a != b else ''}")
        titles = stored_titles("side_peer"), stored_titles("side_notesd")
        print(f"stored from surrogate escapes: express {titles[0]}, notesd {titles[1]}")
        differ += titles[0] != titles[1]
        print(f"{len(CASES)} requests, {differ} differences")
        return 1 if differ else 0
    finally:
        peer.terminate()
        peer.wait()
        notesd.stop()


if __name__ == "__main__":
    sys.exit(main())
