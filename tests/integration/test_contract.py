#!/usr/bin/env python3
"""docs/openapi.json checked both ways against the real notesd, by properties.

Hypothesis (Debian's python3-hypothesis) draws requests from the description
itself (openapi_model.py): for every operation, requests it calls valid, and
requests with one thing broken that it calls invalid. Every valid request must
get a status the operation describes, not a refusal of its input, with the
described headers and a body of a described type that matches its schema
(jsonschema, JSON Schema 2020-12); every invalid one a 4xx with a JSON
{"error": ...} body, which matches the operation's description of that status
where it has one. Then, without Hypothesis: every parameter at its edges (an
integer's bounds and one past them, numbers around the bigint and uint64 limits)
judged the same way; every path probed with methods it does not describe (405
with Allow naming exactly the described methods, unless the path answers every
method); and the database's operations under three faults: a missing table
(500), a database that refuses connections (503), a table lock held past
QUERY_TIMEOUT_MS (504).

Seeds are fixed (derandomize), so a failure comes back on the next run, and
Hypothesis prints the smallest request that fails as "Falsifying example".
"""
import collections
import concurrent.futures
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest

from hypothesis import HealthCheck, given, settings, strategies as st

import openapi_model as om
from notes_testlib import (PROBE_METHOD, SANITIZED, Notesd, create_database, db_connect, main,
                           slack)

DOC = om.load()
OPS = om.operations(DOC)
ERROR = om.validator(om.inline(DOC, DOC["components"]["schemas"]["Error"]))
# Hypothesis examples per operation, fewer under the sanitizers, whose notesd is slower.
EXAMPLES = 10 if SANITIZED else 25
SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=EXAMPLES,
                    report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])
BODY_MAX = 1 << 20  # bodies up to this are read and checked; longer ones are streams
QUERY_TIMEOUT_MS = 250
# The database's operations: those that describe its failures.
DB_OPS = [op for op in OPS if {"500", "503", "504"} <= set(op.responses)
          and op.responses["500"].ref == "DatabaseError"]


def figure(text):
    print(f"  figure: {text}", flush=True)


class Answer:
    """What came back: `outcome` is "answer", "pending" (no head within the patience:
    the request was not refused at once) or "no-response" (the connection ended
    first); `complete` says whether the whole body was read."""

    def __init__(self, outcome, status=0, headers=None, body=b"", complete=True):
        self.outcome, self.status, self.body, self.complete = outcome, status, body, complete
        self.headers = headers or {}

    def header(self, name):
        values = self.headers.get(name.lower())
        return ", ".join(values) if values else None

    def __repr__(self):
        if self.outcome != "answer":
            return self.outcome
        heads = "; ".join(f"{k}: {', '.join(v)}" for k, v in self.headers.items())
        return f"{self.status} [{heads}] {self.body[:200]!r}{'' if self.complete else ' …'}"


def exchange(port, method, target, headers, body, patience):
    """One request on a connection of its own, as bytes on a socket: nothing between
    the test and notesd decides anything (no normalised path, no retried request)."""
    head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    for k, v in headers:
        head += f"{k}: {v}\r\n"
    if body is not None:
        head += f"Content-Length: {len(body)}\r\n"
    data = head.encode() + b"\r\n" + (body or b"")
    with socket.create_connection(("127.0.0.1", port), timeout=patience) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered (and closed) before the whole request was sent: read it
        buf, deadline = b"", time.monotonic() + patience
        while b"\r\n\r\n" not in buf:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                return Answer("pending")
            except ConnectionResetError:
                return Answer("no-response")
            if not chunk:
                return Answer("no-response")
            buf += chunk
        raw, _, rest = buf.partition(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdrs = collections.defaultdict(list)
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()].append(v.strip())
        if method == "HEAD" or status < 200 or status in (204, 304):
            return Answer("answer", status, hdrs, b"", True)
        length = hdrs.get("content-length")
        if length is None or int(length[0]) > BODY_MAX:
            return Answer("answer", status, hdrs, rest, False)  # a stream: its head is checked
        length = int(length[0])
        try:
            while len(rest) < length:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        return Answer("answer", status, hdrs, rest[:length], len(rest) >= length)


class Sender:
    """Sends requests to one notesd, and counts what came back."""

    def __init__(self, server):
        self.ports = {"api": server.port, "metrics": server.metrics_port}
        # A refusal comes at once; an answer later than this was not one.
        self.patience = 1.0 + QUERY_TIMEOUT_MS / 1000 + slack(server.port)
        self.seen = collections.Counter()
        self.lock = threading.Lock()  # test_edges sends from four threads

    def send(self, req, method=None):
        op = req.op
        ans = exchange(self.ports[op.port], method or op.method, req.target(), req.headers(),
                       req.body, self.patience)
        for rule in op.prose:
            if rule.after is not None:
                exchange(self.ports[op.port], *rule.after, [], None, self.patience)
        with self.lock:
            self.seen[ans.status if ans.outcome == "answer" else ans.outcome] += 1
        return ans


def valid_test(op):
    @SETTINGS
    @given(req=om.valid_requests(op))
    def test(self, req):
        ans = self.sender.send(req)
        problems = om.check_valid_answer(op, req, ans, ERROR)
        self.assertEqual(problems, [], f"valid request {req!r} -> {ans!r}")
    test.__doc__ = f"{op}: requests the description calls valid are answered as described"
    return test


def invalid_test(op):
    @SETTINGS
    @given(req=om.invalid_requests(op))
    def test(self, req):
        ans = self.sender.send(req)
        problems = om.check_invalid_answer(op, req, ans, ERROR)
        self.assertEqual(problems, [], f"invalid request ({om.judge(req)}) {req!r} -> {ans!r}")
    test.__doc__ = f"{op}: requests the description calls invalid get a 4xx and an Error"
    return test


class DescriptionTest(unittest.TestCase):
    """The description itself, before any request."""

    def test_every_example_matches_its_schema(self):
        """Dredd needs an example on every required parameter; the tests start from them."""
        for op in OPS:
            for p in op.params:
                if "example" in p.raw:
                    self.assertTrue(p.check.is_valid(
                        p.raw["example"]), f"{op}: {p.name}'s example {p.raw['example']!r}")
                elif p.required:
                    self.fail(f"{op}: required parameter {p.name} has no example")
            if op.body is not None:
                self.assertTrue(op.body.is_valid(op.body_example), f"{op}: the body's example")
            req = om.minimal_request(op)
            self.assertIsNone(om.judge(req), f"{op}: {req!r}")

    def test_the_prose_rules_are_the_descriptions(self):
        """PROSE (openapi_model.py) holds what only the words of the description say."""
        for rule in om.PROSE:
            item = DOC["paths"][rule.path]
            self.assertIn(rule.phrase, item["get"]["description"], rule.path)

    def test_every_schema_kind_has_a_strategy(self):
        for op in OPS:
            for loc in op.locations:
                om.values_for(loc.schema)
                om.location_text(loc, valid=False)


class ContractTest(unittest.TestCase):
    """One notesd with the defaults the description's bounds assume (THREADS 1, the
    WS_* limits, PRIMES_MAX), the journal on, and a static directory holding the file
    the description's example names."""

    database = "contract"

    @classmethod
    def setUpClass(cls):
        cls.static = tempfile.mkdtemp(prefix="notesd-contract-")
        example = DOC["paths"]["/static/{file}"]["get"]["parameters"][0].get("example", "a.css")
        os.makedirs(os.path.join(cls.static, "sub"))
        with open(os.path.join(cls.static, example), "w") as f:
            f.write("body { margin: 0 }\n")
        cls.db_url = create_database(cls.database)
        cls.server = Notesd(cls.db_url, env={"JOURNAL": "64", "STATIC_DIR": cls.static,
                                             "QUERY_TIMEOUT_MS": str(QUERY_TIMEOUT_MS)})
        cls.sender = Sender(cls.server)
        cls.started = time.monotonic()

    @classmethod
    def tearDownClass(cls):
        figure(f"{sum(cls.sender.seen.values())} requests in "
               f"{time.monotonic() - cls.started:.1f} s, answers: "
               f"{dict(sorted(cls.sender.seen.items(), key=str))}")
        code = cls.server.stop()
        shutil.rmtree(cls.static)
        assert code == 0, f"notesd exited with {code}: {cls.server.output}"

    def test_edges(self):
        """Every location at its edges, judged by the description, sent four at a time."""
        reqs = [req for op in OPS for req in om.edge_requests(op)]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(self.sender.send, reqs))
        # An invalid request still pending may have waited behind the valid ones beside it
        # (the largest /primes keep the loop busy): sent again alone, it must be refused.
        answers = [self.sender.send(req) if ans.outcome == "pending" and om.judge(req) else ans
                   for req, ans in zip(reqs, answers)]
        problems, valid = [], 0
        for req, ans in zip(reqs, answers):
            why = om.judge(req)
            valid += why is None
            found = (om.check_valid_answer(req.op, req, ans, ERROR) if why is None else
                     om.check_invalid_answer(req.op, req, ans, ERROR))
            if found:
                problems.append(f"{'valid' if why is None else 'invalid'} {req!r} -> {ans!r}: "
                                f"{'; '.join(found)}" + (f" (invalid: {why})" if why else ""))
        figure(f"edges: {len(reqs)} requests, {valid} valid, {len(reqs) - valid} invalid, "
               f"{len(problems)} not as described")
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_other_methods_get_405_naming_the_described_ones(self):
        problems = []
        for path, item in DOC["paths"].items():
            op = next(o for o in OPS if o.path == path and o.method == "GET")
            described = {m.upper() for m in om.METHODS if m in item}
            req = om.minimal_request(op)
            for method in (PROBE_METHOD, "OPTIONS"):
                ans = self.sender.send(req, method)
                if op.any_method:
                    found = om.check_valid_answer(op, req, ans, ERROR)
                else:
                    found = om.check_invalid_answer(op, req, ans, ERROR)
                    allow = {m.strip() for m in (ans.header("allow") or "").split(",")}
                    if ans.status != 405 or allow != described:
                        found.append(f"{ans.status}, Allow {allow}; expected 405, {described}")
                if found:
                    problems.append(f"{method} {req.target()} -> {ans!r}: {'; '.join(found)}")
        self.assertEqual(problems, [], "\n" + "\n".join(problems))


for _op in OPS:
    setattr(ContractTest, f"test_valid_{_op.op_id}", valid_test(_op))
    if _op.locations or _op.body is not None:
        setattr(ContractTest, f"test_invalid_{_op.op_id}", invalid_test(_op))


class DatabaseFaultTest(unittest.TestCase):
    """The database's operations under each fault it has a status for: every answer
    that status, as described (Retry-After on the 503s)."""

    database = "contract_faults"
    absent = "contract_absent"

    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database(cls.database)
        cls.db = db_connect(cls.database)
        cls.server = Notesd(cls.db_url, env={"QUERY_TIMEOUT_MS": str(QUERY_TIMEOUT_MS)})
        cls.sender = Sender(cls.server)
        admin = db_connect("postgres")
        with admin.cursor() as cur:
            cur.execute(f'drop database if exists "{cls.absent}" with (force)')
        admin.close()

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.db.close()
        assert code == 0, f"notesd exited with {code}: {cls.server.output}"

    def under_fault(self, sender, status):
        seen = collections.Counter()

        @settings(SETTINGS, max_examples=10)
        @given(req=st.sampled_from(DB_OPS).flatmap(om.valid_requests))
        def check(req):
            ans = sender.send(req)
            seen[ans.status] += 1
            problems = om.check_valid_answer(req.op, req, ans, ERROR)
            self.assertEqual((ans.status, problems), (status, []), f"{req!r} -> {ans!r}")
        check()
        figure(f"{status}: {sum(seen.values())} requests to {len(DB_OPS)} operations, {dict(seen)}")

    def test_a_missing_table_is_500(self):
        with self.db.cursor() as cur:
            cur.execute("alter table notes rename to notes_away")
        try:
            self.under_fault(self.sender, 500)
        finally:
            with self.db.cursor() as cur:
                cur.execute("alter table notes_away rename to notes")

    def test_a_lock_past_query_timeout_is_504(self):
        locker = db_connect(self.database)
        locker.autocommit = False
        locker.cursor().execute("lock table notes in access exclusive mode")
        try:
            self.under_fault(self.sender, 504)
        finally:
            locker.rollback()
            locker.close()

    def test_a_database_that_refuses_is_503(self):
        url = self.db_url.rsplit("/", 1)[0] + "/" + self.absent
        server = Notesd(url)
        try:
            self.under_fault(Sender(server), 503)
        finally:
            code = server.stop()
        self.assertEqual(code, 0, server.output)


if __name__ == "__main__":
    main()
