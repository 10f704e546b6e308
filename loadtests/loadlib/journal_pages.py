"""notesd's request journal read page by page: the one reader of GET /journal.

A page is one loop's records after `since` (docs/journal.md). This module asks for
them in CSV (`format=csv`), as many a page as the server takes (CSV_PAGE, else
NDJSON_PAGE), and falls back to NDJSON on a server that refuses the format; it reads
either by the answer's Content-Type. A 503 (the metrics port's budget for pages in
flight is spent) is asked again after a moment. It sends the journal's token
(`Authorization: Bearer`, from NOTESD_JOURNAL_TOKEN unless given) and, after the first
page, the server's `Journal-Epoch`, so that a server restarted between two pages
answers 409 and the reader raises Restarted instead of joining two processes' records. Records the ring
overwrote before they were read are counted from the NDJSON `lost` line or the
`Journal-Lost-From`/`-To` headers, never in silence.

Two shapes come out: dict records (Source.records(), what journal.read() returns) and
numpy columns (Source.columns(), what judge reads: a million records parse in about a
second, where dicts take seconds and hundreds of megabytes). Collector keeps the
columns of a run from page after page, only the fields the checks read, so a page's
text is let go as soon as it is parsed.
"""
import concurrent.futures
import io
import json
import os
import time
import urllib.parse

import numpy as np

from . import httpc

CSV_PAGE = 50000            # the most records a CSV page is asked for, if the server takes it
NDJSON_PAGE = 5000          # the most any page holds on notesd today
BUSY_TRIES, BUSY_WAIT_S = 50, 0.1   # a 503 (pages in flight over the port's budget) is retried
TOKEN_ENV = "NOTESD_JOURNAL_TOKEN"
# The record's fields as the CSV header names them (docs/journal.md, "A record").
FIELDS = ("seq", "loop", "kind", "conn", "proto", "tls", "stream", "method", "route", "status",
          "conn_at_us", "arrived_us", "started_us", "ended_us", "wait_us", "query_us",
          "answer_us", "bytes_in", "bytes_out", "trace_id", "request_id")
# What Collector keeps of each HTTP record: numbers, and words (a handful of values each,
# read as bytes of at most WORD_BYTES) as small codes into a vocabulary.
NUMBERS = ("loop", "conn", "tls", "status", "conn_at_us", "started_us", "ended_us",
           "answer_us")
WORDS = ("kind", "proto", "method", "route")
WORD_BYTES = 32


class Restarted(OSError):
    """The server's epoch changed between two pages: it restarted, and its records
    after `since` are another process's."""


class Page:
    """One page: `loop`, `next` (Journal-Next), `newest` (Journal-Newest), `loops`,
    `epoch`, `lost` (records overwritten before this read), `count` (records in it) and
    either `records` (dicts) or `columns` ({field: array})."""

    def __init__(self, loop, headers, lost, count, records=None, columns=None):
        self.loop, self.lost, self.count = loop, lost, count
        self.next = int(headers.get("journal-next", 0))
        self.newest = int(headers.get("journal-newest", 0))
        self.loops = int(headers.get("journal-loops", 1))
        self.epoch = headers.get("journal-epoch")
        self.records, self.columns = records, columns


def lost_in_headers(headers):
    """Records lost as the Journal-Lost-From/To headers announce them (0 without)."""
    a, b = headers.get("journal-lost-from"), headers.get("journal-lost-to")
    return int(b) - int(a) + 1 if a and b else 0


def parse_ndjson(body):
    """(records, lost) of an NDJSON page: its lost line counted, not returned."""
    records, lost = [], 0
    text = body.decode("utf-8", "replace").strip()
    for rec in json.loads("[" + text.replace("\n", ",") + "]") if text else []:
        if "lost" in rec:
            lost += rec["lost"]
        else:
            records.append(rec)
    return records, lost


def columns_of_records(records, want_ids=False):
    """Dict records as the columns parse_csv() gives."""
    n = len(records)
    cols = {f: np.fromiter((int(r[f]) for r in records), dtype=np.int64, count=n)
            for f in NUMBERS}
    for f in WORDS:
        cols[f] = np.array([r[f].encode() for r in records], dtype=f"S{WORD_BYTES}")
    if want_ids:
        cols["request_id"] = np.array([r.get("request_id") or "" for r in records], dtype=object)
    return cols


def parse_csv(body, want_ids=False):
    """The columns of a CSV page: its first line names the fields, one record a line,
    request_id quoted as RFC 4180 says. numpy's C reader does the work, in one pass over
    the fields kept (and one more for the request ids, when asked)."""
    text = body.decode("utf-8", "replace")
    head, _, rest = text.partition("\n")
    where = {name: i for i, name in enumerate(head.strip().split(","))}
    missing = [f for f in NUMBERS + WORDS if f not in where]
    if missing:
        raise ValueError(f"a CSV journal page without {', '.join(missing)}: {head[:200]!r}")
    if not rest.strip():
        return columns_of_records([], want_ids)
    kept = sorted(NUMBERS + WORDS, key=where.get)
    dtype = [(f, f"S{WORD_BYTES}" if f in WORDS else np.int64) for f in kept]
    table = np.loadtxt(io.StringIO(rest), delimiter=",", quotechar='"', comments=None,
                       usecols=[where[f] for f in kept], dtype=dtype, ndmin=1)
    cols = {f: table[f] for f in kept}
    if want_ids:
        cols["request_id"] = np.loadtxt(io.StringIO(rest), delimiter=",", quotechar='"',
                                        comments=None, usecols=[where["request_id"]],
                                        dtype=object, ndmin=1)
    return cols


class Source:
    """Where a journal is: the metrics port's host and port, and the token it wants.
    Remembers the server's epoch from its first page and the format it answers."""

    def __init__(self, port, host="127.0.0.1", token=None, timeout=30.0):
        self.port, self.host, self.timeout = port, host, timeout
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self.epoch = None
        self.csv = True         # until the server refuses it
        self.page = CSV_PAGE    # the records a CSV page is asked for, until refused

    @classmethod
    def from_url(cls, url, token=None):
        """A Source from the metrics port's URL (any path: http://host:9091/metrics)."""
        u = urllib.parse.urlsplit(url if "//" in url else "http://" + url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"not an http:// URL: {url!r}")
        return cls(u.port or 80, u.hostname, token)

    def get(self, loop, since, fmt, limit):
        """One GET /journal: (status, headers, body); Restarted on a changed epoch."""
        query = {"loop": loop, "since": since, "limit": limit}
        if fmt == "csv":
            query["format"] = "csv"
        if self.epoch:
            query["epoch"] = self.epoch
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        for _ in range(BUSY_TRIES):
            res = httpc.request(self.port, "/journal?" + urllib.parse.urlencode(query),
                                timeout=self.timeout, host=self.host, headers=headers)
            if res.status != 503:
                break
            time.sleep(BUSY_WAIT_S)
        if res.status == 409:
            raise Restarted(f"the server restarted (journal epoch {self.epoch}): "
                            f"{res.body[:300].decode('utf-8', 'replace')}")
        epoch = res.headers.get("journal-epoch")
        if res.status == 200 and epoch:
            if self.epoch and epoch != self.epoch:
                raise Restarted(f"the journal's epoch changed from {self.epoch} to {epoch}")
            self.epoch = epoch
        return res

    def fail(self, res):
        hint = {404: " (is notesd running with JOURNAL=N?)",
                403: f" (a reader off loopback needs the token: {TOKEN_ENV} or --journal-token)"}
        raise OSError(f"GET /journal from {self.host}:{self.port}: {res.status}"
                      f"{hint.get(res.status, '')} {res.body[:200]!r}")

    def records(self, loop, since, limit=NDJSON_PAGE):
        """One NDJSON page of dict records."""
        res = self.get(loop, since, "ndjson", limit)
        if res.status != 200:
            self.fail(res)
        records, lost = parse_ndjson(res.body)
        return Page(loop, res.headers, lost + lost_in_headers(res.headers), len(records),
                    records=records)

    def fetch(self, loop, since):
        """One page's answer, CSV where the server speaks it (as many records a page as it
        takes), NDJSON otherwise."""
        res = self.get(loop, since, "csv" if self.csv else "ndjson",
                       self.page if self.csv else NDJSON_PAGE)
        if res.status == 400 and self.csv:
            if self.page > NDJSON_PAGE:
                self.page = NDJSON_PAGE         # a server with smaller pages
            else:
                self.csv = False                # a server from before the CSV format
            return self.fetch(loop, since)
        if res.status != 200:
            self.fail(res)
        return res

    @staticmethod
    def parse(res, loop, want_ids=False):
        """The Page of an answer fetch() gave, as columns."""
        lost = lost_in_headers(res.headers)
        if res.headers.get("content-type", "").startswith("text/csv"):
            cols = parse_csv(res.body, want_ids)
        else:
            records, inline = parse_ndjson(res.body)
            lost = max(lost, inline)            # a server may announce them both ways
            cols = columns_of_records(records, want_ids)
        return Page(loop, res.headers, lost, len(cols["started_us"]), columns=cols)

    def columns(self, loop, since, want_ids=False):
        """One page as columns."""
        return self.parse(self.fetch(loop, since), loop, want_ids)

    def newest(self):
        """{loop: the newest record's seq}, from one short page per loop."""
        marks, loop, loops = {}, 0, 1
        while loop < loops:
            page = self.records(loop, 0, limit=1)
            loops, marks[loop] = page.loops, page.newest
            loop += 1
        return marks


class Collector:
    """The columns of a run's HTTP records, page after page: add(page) keeps what
    NUMBERS and WORDS name (and request ids when want_ids), as compact arrays, and
    drain() reads every page a Source has after the marks it keeps. columns() gives
    them together, in order of arrival (started_us)."""

    def __init__(self, since=None, want_ids=False):
        self.since = dict(since or {})
        self.want_ids = want_ids
        self.chunks = []
        self.vocab = {w: [] for w in WORDS}
        self.lost = 0
        self.other = {}             # records of other kinds (WebSocket messages) by kind
        self.newest = {}

    def code(self, word, values):
        """Codes of `values` (bytes) in the vocabulary of `word`, which grows as new ones
        come; a page of one value (the usual: one route, one protocol) costs one compare."""
        vocab = self.vocab[word]
        if not len(values):
            return np.array([], dtype=np.int16)
        if (values == values[0]).all():
            distinct, inverse = values[:1], np.zeros(len(values), dtype=np.intp)
        else:
            distinct, inverse = np.unique(values, return_inverse=True)
        for v in distinct:
            if v.decode() not in vocab:
                vocab.append(v.decode())
        table = np.array([vocab.index(v.decode()) for v in distinct], dtype=np.int16)
        return table[inverse]

    def add(self, page):
        self.lost += page.lost
        cols = page.columns
        http = cols["kind"] == b"http"
        every = http.all()
        if not every:
            kinds, counts = np.unique(cols["kind"][~http], return_counts=True)
            for k, c in zip(kinds, counts):
                self.other[k.decode()] = self.other.get(k.decode(), 0) + int(c)
        pick = (lambda a: a) if every else (lambda a: a[http])
        keep = {f: pick(cols[f]).astype(np.int64) for f in NUMBERS}
        keep["loop"], keep["tls"] = keep["loop"].astype(np.int16), keep["tls"].astype(np.int8)
        keep["status"] = keep["status"].astype(np.int16)
        keep.update({w: self.code(w, pick(cols[w])) for w in WORDS if w != "kind"})
        if self.want_ids:
            keep["request_id"] = pick(cols["request_id"])
        self.chunks.append(keep)

    def drain(self, source):
        """Reads every page `source` has after the marks, loop by loop, into this: the
        next page is asked for while this one is parsed (its `since` is this one's
        Journal-Next), so the server writes one while we read the other. A loop is done
        at a page that moves nothing (Journal-Next equal to its `since`)."""
        loop, loops = 0, 1
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as ahead:
            while loop < loops:
                seq = self.since.get(loop, 0)
                coming = ahead.submit(source.fetch, loop, seq)
                while True:
                    res = coming.result()
                    nxt = int(res.headers.get("journal-next", seq))
                    if nxt != seq:
                        coming = ahead.submit(source.fetch, loop, nxt)
                    page = source.parse(res, loop, self.want_ids)
                    loops = page.loops
                    self.add(page)
                    self.newest[loop] = page.newest
                    if nxt == seq:
                        break
                    seq = nxt
                self.since[loop] = seq
                loop += 1

    def behind(self, source):
        """How many records the slowest loop holds that this has not read (one short
        page per loop), to read before its ring goes round."""
        marks = source.newest()
        return max((marks[loop] - self.since.get(loop, 0) for loop in marks), default=0)

    def columns(self):
        """{field: array} of every HTTP record read, sorted by started_us, with the words'
        vocabularies under "vocab". The pages' arrays are let go field by field as the
        sorted ones are made, so the run is held about once."""
        fields = NUMBERS + tuple(w for w in WORDS if w != "kind") + \
            (("request_id",) if self.want_ids else ())
        chunks, self.chunks = self.chunks, []
        if not chunks:
            chunks = [{f: np.array([], dtype=np.int64) for f in fields}]
        order = np.argsort(np.concatenate([c["started_us"] for c in chunks]), kind="stable")
        out = {}
        for f in fields:
            out[f] = np.concatenate([c.pop(f) for c in chunks])[order]
        self.chunks = [{f: v for f, v in out.items()}]   # one chunk from now on
        out["vocab"] = {w: list(v) for w, v in self.vocab.items()}
        return out
