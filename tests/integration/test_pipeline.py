#!/usr/bin/env python3
"""Pipeline mode (--pipeline / PIPELINE_DEPTH) against a live PostgreSQL:
answers matched to their requests with many queries in flight on one
connection, a statement failing in the middle of a pipeline, a statement
timeout inside one, a terminated and a frozen backend with queries in flight,
and SIGTERM with pipelined work still running. A row held by a transaction of
the test's own keeps a pipeline full for as long as a test needs: the first
query waits for the lock, and everything sent after it waits behind it on the
same connection.

Batches: the queries a connection takes in one turn of the loop share one
sync, so one implicit transaction. HTTP/2 puts several requests in one turn
for sure (h2_batch: every stream in one write, which h2o reads and dispatches
in one callback), and notes_db_syncs_total shows they went out as one batch.
A statement failing in a batch, a batch cut off by a lost connection and a
batch with a statement that runs into its deadline: every answer is the one
its request would get alone (or a 504 or 503 that says the write did not
happen), and no write is missing or applied twice."""
import http.client
import json
import socket
import os
import random
import re
import signal
import threading
import time
import unittest

import h2.config
import h2.connection
import h2.events

from notes_testlib import (Notesd, create_database, db_connect, expected_note, main, poll,
                           request, slack)
from test_metrics import parse, value


def figure(text):
    print(f"  figure: {text}", flush=True)


def lock_row(dbname, note_id):
    """A connection in an open transaction holding note_id's row lock."""
    locker = db_connect(dbname)
    locker.autocommit = False
    locker.cursor().execute("select id from notes where id = %s for update", (note_id,))
    return locker


def notesd_backends(db):
    with db.cursor() as cur:
        cur.execute("select pid, wait_event_type from pg_stat_activity "
                    "where application_name = 'notesd' and datname = current_database()")
        return dict(cur.fetchall())


class Call(threading.Thread):
    """One request on a thread of its own; `result` is (status, headers, body)."""

    def __init__(self, port, method, path, body=None):
        super().__init__(daemon=True)
        self.args = (port, method, path)
        self.body = body
        self.result = None
        self.start()

    def run(self):
        try:
            self.result = request(*self.args, body=self.body)
        except OSError as e:
            self.result = (type(e).__name__, {}, b"")

    def answer(self, timeout=30):
        self.join(timeout)
        assert not self.is_alive(), f"{self.args[1]} {self.args[2]} got no answer"
        return self.result


def note_body(title):
    return {"title": title, "body": "pipelined body", "tag": "pipe"}


def h2_batch(port, calls, timeout=30):
    """[(method, path, body or None)] as streams of one HTTP/2 connection, every
    frame in one write, so the server reads and dispatches them in one turn;
    returns [(status, body bytes)] in the order given."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                             header_encoding="utf-8"))
    c.initiate_connection()
    streams = []
    for method, path, body in calls:
        sid = c.get_next_available_stream_id()
        headers = [(":method", method), (":scheme", "http"), (":authority", "x"),
                   (":path", path)]
        if body is None:
            c.send_headers(sid, headers, end_stream=True)
        else:
            data = json.dumps(body).encode()
            c.send_headers(sid, headers + [("content-type", "application/json"),
                                           ("content-length", str(len(data)))])
            c.send_data(sid, data, end_stream=True)
        streams.append(sid)
    s.sendall(c.data_to_send())
    statuses, bodies, ended = {}, {sid: b"" for sid in streams}, set()
    while len(ended) < len(streams):
        data = s.recv(65536)
        if not data:
            break
        for event in c.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                statuses[event.stream_id] = int(dict(event.headers)[":status"])
            elif isinstance(event, h2.events.DataReceived):
                bodies[event.stream_id] += event.data
                c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                ended.add(event.stream_id)
        s.sendall(c.data_to_send())
    s.close()
    return [(statuses.get(sid), bodies[sid]) for sid in streams]


def titled(db, title):
    """How many rows carry `title`: 1 for a write applied once."""
    with db.cursor() as cur:
        cur.execute("select count(*) from notes where title = %s", (title,))
        return cur.fetchone()[0]


class PipelineCase(unittest.TestCase):
    """Each test has a database of its own, and one notesd with POOL_MAX=1, so
    every query shares one connection."""

    env = {}
    args = ()

    def setUp(self):
        self.dbname = "pipeline_" + self._testMethodName[5:][:40]
        self.db_url = create_database(self.dbname)
        self.db = db_connect(self.dbname)
        env = {"POOL_MAX": "1", "PIPELINE_DEPTH": "16"}
        env.update(self.env)
        self.server = Notesd(self.db_url, args=self.args, env=env)
        self.port = self.server.port
        self.locker = None

    def tearDown(self):
        if self.locker is not None:
            self.locker.close()
        code = self.server.stop()
        self.db.close()
        self.assertEqual(code, 0, self.server.output)

    def metrics(self):
        return parse(self.server.metrics())

    def in_flight(self):
        return value(self.metrics(), "notes_db_pool_queries_in_flight")

    def fill_pipeline(self, locked_id, calls, gap=0.0):
        """Holds `locked_id`, sends a PUT to it (it waits for the lock on the
        database), then, `gap` seconds later, starts `calls` [(method, path, body)];
        returns the PUT and the calls once all of them are in flight on the one
        connection."""
        self.assertEqual(request(self.port, "GET", "/notes/1")[0], 200)  # opens the connection
        self.locker = lock_row(self.dbname, locked_id)
        head = Call(self.port, "PUT", f"/notes/{locked_id}", note_body(f"head-{locked_id}"))
        poll(lambda: self.in_flight() == 1, what="the PUT in flight")
        time.sleep(gap)
        rest = [Call(self.port, m, p, b) for m, p, b in calls]
        poll(lambda: self.in_flight() == 1 + len(calls), what="every query in flight")
        m = self.metrics()
        figure(f"{1 + len(calls)} queries in flight on "
               f"{value(m, 'notes_db_pool_connections'):.0f} connection(s), "
               f"{value(m, 'notes_db_pool_waiting_requests'):.0f} waiting")
        self.assertEqual(value(m, "notes_db_pool_connections"), 1)
        self.assertEqual(value(m, "notes_db_pool_waiting_requests"), 0)
        self.assertEqual(len(notesd_backends(self.db)), 1)
        return head, rest

    def release(self):
        self.locker.rollback()


class PipelineTest(PipelineCase):
    # ---- ordering ----------------------------------------------------------------------------

    def test_every_answer_is_its_own_row_under_concurrent_load(self):
        """24 clients, GETs of rows nobody writes and PUTs of rows each client
        owns, all on one connection: every body is the row its request named."""
        readable = list(range(1000, 1060))
        expected = {i: expected_note(self.db, i) for i in readable}
        errors, peak = [], [0.0]
        stop = threading.Event()

        def client(k):
            rnd = random.Random(k)
            own = 2000 + k
            for i in range(40):
                if rnd.random() < 0.3:
                    title = f"client {k} write {i}"
                    status, _, body = request(self.port, "PUT", f"/notes/{own}",
                                              body=note_body(title))
                    if status != 200 or f'"id":"{own}","title":"{title}"'.encode() not in body:
                        errors.append(("PUT", own, status, body[:80]))
                else:
                    n = rnd.choice(readable)
                    status, _, body = request(self.port, "GET", f"/notes/{n}")
                    if (status, body) != (200, expected[n]):
                        errors.append(("GET", n, status, body[:80]))

        def sampler():
            while not stop.is_set():
                peak[0] = max(peak[0], self.in_flight())

        clients = [threading.Thread(target=client, args=(k,)) for k in range(24)]
        watcher = threading.Thread(target=sampler)
        watcher.start()
        for t in clients:
            t.start()
        for t in clients:
            t.join(120)
        stop.set()
        watcher.join(30)
        m = self.metrics()
        figure(f"960 requests from 24 clients on {value(m, 'notes_db_pool_connections'):.0f} "
               f"connection; most queries in flight seen by a scrape: {peak[0]:.0f}; "
               f"mismatches: {len(errors)}")
        self.assertEqual(errors, [])
        self.assertEqual(value(m, "notes_db_connections_opened_total"), 1)
        self.assertGreater(peak[0], 1)
        self.assertEqual(value(m, "notes_db_pool_queries_in_flight"), 0)

    def test_a_full_pipeline_answers_each_request_with_its_own_row(self):
        calls = [("GET", f"/notes/{n}", None) for n in range(300, 310)]
        calls += [("PUT", f"/notes/{n}", note_body(f"behind-{n}")) for n in range(400, 404)]
        head, rest = self.fill_pipeline(71, calls)
        self.release()
        status, _, body = head.answer()
        self.assertEqual((status, body), (200, expected_note(self.db, 71)))
        self.assertIn(b'"title":"head-71"', body)
        for (method, path, _), call in zip(calls, rest):
            status, _, body = call.answer()
            n = int(path.rsplit("/", 1)[1])
            self.assertEqual((status, body), (200, expected_note(self.db, n)), path)
            if method == "PUT":
                self.assertIn(f'"title":"behind-{n}"'.encode(), body)

    # ---- a failed statement ------------------------------------------------------------------

    def test_a_statement_failing_mid_pipeline_fails_only_its_own_request(self):
        with self.db.cursor() as cur:
            cur.execute("alter table notes add constraint no_boom check (title <> 'boom')")
        calls = [("GET", "/notes/501", None), ("PUT", "/notes/502", note_body("boom")),
                 ("GET", "/notes/503", None), ("PUT", "/notes/504", note_body("fine")),
                 ("POST", "/notes", note_body("boom")), ("GET", "/notes/505", None)]
        head, rest = self.fill_pipeline(81, calls)
        self.release()
        self.assertEqual(head.answer()[0], 200)
        statuses = [c.answer()[0] for c in rest]
        figure(f"a pipeline with two failing statements: {statuses}")
        self.assertEqual(statuses, [200, 500, 200, 200, 500, 200])
        self.assertEqual(rest[1].answer()[2], b'{"error":"database error"}')
        self.assertEqual(rest[0].answer()[2], expected_note(self.db, 501))
        self.assertEqual(rest[2].answer()[2], expected_note(self.db, 503))
        self.assertIn(b'"title":"fine"', rest[3].answer()[2])
        self.assertEqual(rest[5].answer()[2], expected_note(self.db, 505))
        with self.db.cursor() as cur:
            cur.execute("select title from notes where id = 502")
            self.assertNotEqual(cur.fetchone()[0], "boom")
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
        self.assertEqual(value(m, "notes_db_connections_opened_total"), 1)


class PipelineDeadlineTest(PipelineCase):
    env = {"QUERY_TIMEOUT_MS": "1500"}

    def test_a_statement_timeout_ends_only_its_own_query(self):
        # The queries behind it are sent 0.7 s later, so their own deadlines are
        # well after the head's: what ends the head must not end them.
        calls = [("GET", f"/notes/{n}", None) for n in range(600, 606)]
        start = time.monotonic()
        head, rest = self.fill_pipeline(91, calls, gap=0.7)
        status, _, body = head.answer()
        took = time.monotonic() - start
        answers = [c.answer() for c in rest]
        figure(f"statement_timeout 1500 ms at the head of a pipeline of 7: {status} after "
               f"{took:.2f} s; behind it: {[a[0] for a in answers]}")
        self.assertEqual(status, 504, body)
        self.assertGreater(took, 1.4)
        for n, (status, _, body) in zip(range(600, 606), answers):
            self.assertEqual((status, body), (200, expected_note(self.db, n)))
        self.release()
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_query_timeouts_total"), 1)
        self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
        self.assertEqual(value(m, "notes_db_connections_opened_total"), 1)

    def test_queries_behind_a_blocked_one_get_their_504_on_time(self):
        """QUERY_TIMEOUT_MS bounds each request, not each statement: with the
        statements run one after the other, statement_timeout alone answered
        three blocked queries at 1.5, 3 and 4.5 s."""
        self.assertEqual(request(self.port, "GET", "/notes/1")[0], 200)  # opens the connection
        self.locker = db_connect(self.dbname)
        self.locker.autocommit = False
        self.locker.cursor().execute("lock table notes in access exclusive mode")
        start = time.monotonic()
        calls = [Call(self.port, "GET", f"/notes/{n}") for n in (610, 611, 612)]
        answers, took = [], []
        for c in calls:
            answers.append(c.answer())
            took.append(time.monotonic() - start)
        figure(f"3 queries behind a table lock, QUERY_TIMEOUT_MS 1500: "
               f"{[a[0] for a in answers]} after {[round(t, 2) for t in took]} s")
        self.assertEqual([a[0] for a in answers], [504] * 3)
        self.assertGreater(min(took), 1.4)
        # all of them on time together, not one deadline after another (1.5, 3 and 4.5 s)
        self.assertLess(max(took) - min(took), 0.7 + slack(self.port))
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_query_timeouts_total"), 3)
        # The server still runs them one after the other, until statement_timeout
        # ends each: the connection stays, and their results count no timeout again.
        self.release()
        poll(lambda: self.in_flight() == 0, timeout=10, what="the statements to end")
        status, _, body = request(self.port, "GET", "/notes/610")
        self.assertEqual((status, body), (200, expected_note(self.db, 610)))
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_query_timeouts_total"), 3)
        self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
        self.assertEqual(value(m, "notes_db_connections_opened_total"), 1)

    def test_a_frozen_backend_answers_every_query_in_flight_once(self):
        calls = [("GET", f"/notes/{n}", None) for n in range(700, 706)]
        self.assertEqual(request(self.port, "GET", "/notes/1")[0], 200)
        pid = list(notesd_backends(self.db))[0]
        os.kill(pid, signal.SIGSTOP)  # as root: the backend runs as postgres
        try:
            start = time.monotonic()
            rest = [Call(self.port, m, p, b) for m, p, b in calls]
            poll(lambda: self.in_flight() == len(calls), what="every query in flight")
            answers = [c.answer() for c in rest]
            took = time.monotonic() - start
            # The backstop, a second after the deadline, closes the connection.
            poll(lambda: value(self.metrics(), "notes_db_pool_connections") == 0, timeout=5,
                 what="the backstop to close the connection")
            closed = time.monotonic() - start
        finally:
            os.kill(pid, signal.SIGCONT)
        statuses = sorted(a[0] for a in answers)
        figure(f"frozen backend, QUERY_TIMEOUT_MS 1500, 6 queries in flight: {statuses} after "
               f"{took:.2f} s; connection closed after {closed:.2f} s")
        # Each query's deadline answered it; the backstop then closed the connection.
        self.assertEqual(statuses, [504] * 6)
        self.assertGreater(took, 1.4)
        self.assertLess(took, 2.4 + slack(self.port))
        self.assertGreater(closed, 2.4)  # the backstop: statement_timeout + 1 s
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_query_timeouts_total"), 6)
        self.assertEqual(value(m, "notes_db_pool_queries_in_flight"), 0)
        self.assertEqual(value(m, "http_requests_total", method="GET", path="/notes/:id",
                               status_code="504"), 6)
        status, _, body = request(self.port, "GET", "/notes/700")
        self.assertEqual((status, body), (200, expected_note(self.db, 700)))
        self.assertEqual(value(self.metrics(), "notes_db_connections_opened_total"), 2)


class PipelineOutageTest(PipelineCase):
    def test_a_terminated_backend_answers_every_query_in_flight_once(self):
        calls = [("GET", f"/notes/{n}", None) for n in range(800, 808)]
        head, rest = self.fill_pipeline(95, calls)
        pid = list(notesd_backends(self.db))[0]
        with self.db.cursor() as cur:
            cur.execute("select pg_terminate_backend(%s)", (pid,))
        answers = [head.answer()] + [c.answer() for c in rest]
        self.release()
        figure(f"pg_terminate_backend with 9 queries in flight: {[a[0] for a in answers]}")
        self.assertEqual([a[0] for a in answers], [503] * 9)
        for a in answers:
            self.assertEqual(a[1].get("retry-after"), "1")
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_connection_errors_total"), 1)
        self.assertEqual(value(m, "notes_db_pool_queries_in_flight"), 0)
        self.assertEqual(value(m, "http_requests_total", method="GET", path="/notes/:id",
                               status_code="503"), 8)
        # A new connection serves the next queries.
        for n in (800, 801):
            status, _, body = request(self.port, "GET", f"/notes/{n}")
            self.assertEqual((status, body), (200, expected_note(self.db, n)))
        self.assertEqual(value(self.metrics(), "notes_db_connections_opened_total"), 2)


class PipelineShutdownTest(PipelineCase):
    def test_sigterm_lets_pipelined_work_finish(self):
        calls = [("GET", f"/notes/{n}", None) for n in range(900, 906)]
        calls += [("PUT", f"/notes/{n}", note_body(f"drain-{n}")) for n in range(910, 913)]
        keep_alive = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.assertEqual(request(self.port, "GET", "/notes/2", conn=keep_alive)[0], 200)
        head, rest = self.fill_pipeline(97, calls)
        self.server.proc.send_signal(signal.SIGTERM)
        # Refused while draining: a new query opens nothing and runs nothing.
        status, headers, _ = request(self.port, "GET", "/notes/1", conn=keep_alive)
        keep_alive.close()
        self.assertEqual(status, 503)
        self.assertEqual(headers.get("connection", "").lower(), "close")
        self.release()
        answers = [head.answer()] + [c.answer() for c in rest]
        figure(f"SIGTERM with 10 queries in flight: {[a[0] for a in answers]}")
        self.assertEqual([a[0] for a in answers], [200] * 10)
        for (method, path, _), (status, _, body) in zip(calls, answers[1:]):
            n = int(path.rsplit("/", 1)[1])
            self.assertEqual(body, expected_note(self.db, n))
        self.assertEqual(self.server.proc.wait(30), 0)
        connected = re.findall(r"pg#\d+ connecting: connected", self.server.read_output())
        self.assertLessEqual(len(connected), 1)


class BatchCase(PipelineCase):
    """Batches on the one connection, each sent as HTTP/2 streams in one write."""

    args = ("--h2c",)

    def batch(self, calls):
        """Runs `calls` as one batch on the open, idle connection; returns the
        answers and how many syncs and resent queries it took."""
        m0 = self.metrics()
        answers = h2_batch(self.server.direct_port, calls)
        m1 = self.metrics()
        syncs, resent = (value(m1, k) - value(m0, k)
                         for k in ("notes_db_syncs_total", "notes_db_queries_resent_total"))
        figure(f"a batch of {len(calls)}: {[a[0] for a in answers]}; {syncs:.0f} sync(s), "
               f"{resent:.0f} resent")
        return answers, syncs, resent

    def open_connection(self):
        self.assertEqual(request(self.port, "GET", "/notes/1")[0], 200)
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_syncs_total"), 1)
        self.assertEqual(value(m, "notes_db_pool_idle_connections"), 1)


class BatchTest(BatchCase):
    def test_requests_of_one_turn_share_one_sync(self):
        self.open_connection()
        calls = [("GET", f"/notes/{n}", None) for n in range(300, 306)]
        calls += [("POST", "/notes", note_body(f"together-{i}")) for i in range(3)]
        calls += [("PUT", "/notes/307", note_body("together-put"))]
        answers, syncs, resent = self.batch(calls)
        self.assertEqual((syncs, resent), (1, 0))
        for n, (status, body) in zip(range(300, 306), answers):
            self.assertEqual((status, body), (200, expected_note(self.db, n)))
        for i, (status, body) in enumerate(answers[6:9]):
            self.assertEqual(status, 201)
            note_id = json.loads(body)["id"]
            self.assertEqual(body, expected_note(self.db, int(note_id)))
            self.assertEqual(titled(self.db, f"together-{i}"), 1)
        self.assertEqual(answers[9], (200, expected_note(self.db, 307)))
        self.assertIn(b'"title":"together-put"', answers[9][1])

    def test_a_statement_failing_mid_batch_fails_only_its_own_request(self):
        """The failure rolls back the writes before it in the batch and skips
        the ones after it; each of them is sent again alone and answered by
        what it does then. Each write lands once; the failed ones not at all."""
        with self.db.cursor() as cur:
            cur.execute("alter table notes add constraint no_boom check (title <> 'boom')")
        self.open_connection()
        calls = [("GET", "/notes/501", None), ("POST", "/notes", note_body("mid-a")),
                 ("PUT", "/notes/502", note_body("boom")), ("POST", "/notes", note_body("mid-b")),
                 ("PUT", "/notes/504", note_body("fine")), ("GET", "/notes/505", None),
                 ("POST", "/notes", note_body("boom"))]
        answers, syncs, resent = self.batch(calls)
        self.assertEqual([a[0] for a in answers], [200, 201, 500, 201, 200, 200, 500])
        self.assertEqual(answers[0][1], expected_note(self.db, 501))
        self.assertEqual(answers[2][1], b'{"error":"database error"}')
        self.assertEqual(answers[4][1], expected_note(self.db, 504))
        self.assertIn(b'"title":"fine"', answers[4][1])
        self.assertEqual(answers[5][1], expected_note(self.db, 505))
        self.assertEqual(answers[6][1], b'{"error":"database error"}')
        for title, answer in (("mid-a", answers[1]), ("mid-b", answers[3])):
            self.assertEqual(titled(self.db, title), 1, title)
            self.assertEqual(answer[1], expected_note(self.db, int(json.loads(answer[1])["id"])))
        self.assertEqual(titled(self.db, "boom"), 0)
        # the five the failure rolled back or skipped went again, one sync each,
        # the failed PUT did not: it got its own error, as it would alone
        self.assertEqual((syncs, resent), (1 + 6, 6))
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
        self.assertEqual(value(m, "notes_db_connections_opened_total"), 1)
        self.assertEqual(value(m, "notes_db_pool_queries_in_flight"), 0)

    def test_a_connection_lost_mid_batch_answers_each_once_and_writes_nothing(self):
        """The batch waits behind a locked row when its backend is terminated:
        the transaction it was is rolled back, so none of its writes happened,
        and every request is told so with a 503 (never a 2xx)."""
        self.open_connection()
        self.locker = lock_row(self.dbname, 95)
        calls = [("GET", "/notes/801", None), ("POST", "/notes", note_body("lost-a")),
                 ("PUT", "/notes/95", note_body("lost-put")),
                 ("POST", "/notes", note_body("lost-b")), ("GET", "/notes/802", None)]
        pid = list(notesd_backends(self.db))[0]
        batch = threading.Thread(target=lambda: answers.extend(
            h2_batch(self.server.direct_port, calls)), daemon=True)
        answers = []
        batch.start()
        poll(lambda: self.in_flight() == len(calls), what="the batch in flight")
        poll(lambda: notesd_backends(self.db).get(pid) == "Lock",
             what="the batch waiting for the row lock")
        with self.db.cursor() as cur:
            cur.execute("select pg_terminate_backend(%s)", (pid,))
        batch.join(30)
        self.release()
        figure(f"pg_terminate_backend with a batch of 5 waiting: {[a[0] for a in answers]}")
        self.assertEqual([a[0] for a in answers], [503] * 5)
        for title in ("lost-a", "lost-b", "lost-put"):
            self.assertEqual(titled(self.db, title), 0, title)
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_connection_errors_total"), 1)
        self.assertEqual(value(m, "notes_db_pool_queries_in_flight"), 0)
        self.assertEqual(value(m, "notes_db_queries_resent_total"), 0)
        # a new connection serves the next batch, the same writes, each once
        answers, syncs, _ = self.batch(calls)
        self.assertEqual([a[0] for a in answers], [200, 201, 200, 201, 200])
        for title in ("lost-a", "lost-b", "lost-put"):
            self.assertEqual(titled(self.db, title), 1, title)
        self.assertEqual(value(self.metrics(), "notes_db_connections_opened_total"), 2)


class BatchDeadlineTest(BatchCase):
    env = {"QUERY_TIMEOUT_MS": "1500"}

    def test_a_deadline_in_a_batch_answers_every_request_once(self):
        """A batch shares its statement's wait: the PUT behind a locked row runs
        into statement_timeout, and the requests batched with it reach their
        deadline (counted from the same send) at the same moment. Whichever
        comes first, each request gets one answer: its own 2xx, or 504; a 504
        never hides a write that happened twice, and a 2xx never one that
        did not happen."""
        self.open_connection()
        self.locker = lock_row(self.dbname, 91)
        calls = [("GET", "/notes/611", None), ("POST", "/notes", note_body("deadline-a")),
                 ("PUT", "/notes/91", note_body("deadline-put")),
                 ("POST", "/notes", note_body("deadline-b")), ("GET", "/notes/612", None)]
        start = time.monotonic()
        answers, _, resent = self.batch(calls)
        took = time.monotonic() - start
        # The answers may come before PostgreSQL's statement_timeout ends the PUT: the
        # deadline counts from the send, statement_timeout from the statement's start, later
        # on a busy machine. The lock is let go once nothing is left on the connection, so
        # the PUT is the one statement_timeout cancelled.
        poll(lambda: self.in_flight() == 0, timeout=10, what="statement_timeout to end the PUT")
        self.release()
        statuses = [a[0] for a in answers]
        figure(f"QUERY_TIMEOUT_MS 1500, a batch of 5 behind a row lock: {statuses} after "
               f"{took:.2f} s")
        self.assertEqual(statuses[2], 504)
        self.assertGreater(took, 1.4)
        for (method, path, _), (status, body) in zip(calls, answers):
            if status == 504:
                continue
            if method == "GET":
                n = int(path.rsplit("/", 1)[1])
                self.assertEqual((status, body), (200, expected_note(self.db, n)))
            else:
                self.assertEqual(status, 201)
        for title, (status, _) in (("deadline-a", answers[1]), ("deadline-b", answers[3])):
            count = titled(self.db, title)
            self.assertLessEqual(count, 1, title)  # a 504 may have run; never twice
            if status == 201:
                self.assertEqual(count, 1, title)
        self.assertEqual(titled(self.db, "deadline-put"), 0)  # cancelled, never sent again
        m = self.metrics()
        self.assertEqual(value(m, "notes_db_query_timeouts_total"), statuses.count(504))
        self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
        self.assertEqual(value(m, "notes_db_connections_opened_total"), 1)
        status, _, body = request(self.port, "GET", "/notes/91")
        self.assertEqual((status, body), (200, expected_note(self.db, 91)))


class PreparedPipelineTest(unittest.TestCase):
    def test_prepared_statements_travel_in_the_first_pipeline(self):
        """--prepared --pipeline: the statements are prepared in the same
        pipeline as the first queries, and a burst on a new connection works."""
        url = create_database("pipeline_prepared")
        db = db_connect("pipeline_prepared")
        server = Notesd(url, args=("--prepared", "--pipeline", "8"), env={"POOL_MAX": "1"})
        try:
            calls = [Call(server.port, "GET", f"/notes/{n}") for n in range(40, 60)]
            for n, c in zip(range(40, 60), calls):
                self.assertEqual(c.answer()[:3:2], (200, expected_note(db, n)))
            with db.cursor() as cur:
                cur.execute("select count(*) from pg_stat_activity where application_name = "
                            "'notesd' and datname = current_database()")
                self.assertEqual(cur.fetchone()[0], 1)
        finally:
            code = server.stop()
            db.close()
        self.assertEqual(code, 0, server.output)


if __name__ == "__main__":
    main()
