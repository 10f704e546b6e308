#!/usr/bin/env python3
"""Pipeline mode (--pipeline / PIPELINE_DEPTH) against a live PostgreSQL:
answers matched to their requests with many queries in flight on one
connection, a statement failing in the middle of a pipeline, a statement
timeout inside one, a terminated and a frozen backend with queries in flight,
and SIGTERM with pipelined work still running. A row held by a transaction of
the test's own keeps a pipeline full for as long as a test needs: the first
query waits for the lock, and everything sent after it waits behind it on the
same connection."""
import http.client
import os
import random
import re
import signal
import threading
import time
import unittest

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


class PipelineCase(unittest.TestCase):
    """Each test has a database of its own, and one notesd with POOL_MAX=1, so
    every query shares one connection."""

    env = {}

    def setUp(self):
        self.dbname = "pipeline_" + self._testMethodName[5:][:40]
        self.db_url = create_database(self.dbname)
        self.db = db_connect(self.dbname)
        env = {"POOL_MAX": "1", "PIPELINE_DEPTH": "16"}
        env.update(self.env)
        self.server = Notesd(self.db_url, env=env)
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
