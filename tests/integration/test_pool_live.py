#!/usr/bin/env python3
"""The pool against a live PostgreSQL: session settings whatever the database's
defaults, multi-host URLs, server messages in the log, the idle timeout, the
backstop deadline on a frozen backend, FIFO waiters and LIFO reuse, a DBA's
cancel told from a timeout, and the drain on SIGTERM. Each test looks at the
database's side too (pg_stat_activity), not only at notesd's answers."""
import http.client
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from notes_testlib import (Notesd, create_database, database_name, db_connect, expected_list,
                           expected_note, free_port, main, poll, request, slack, SANITIZED)
from test_metrics import parse, value

NOTE = {"title": "café ☕ \"quoted\"", "body": "line\nbreak ü", "tag": "perf"}


LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warn |info |debug) ")


def figure(text):
    print(f"  figure: {text}", flush=True)


def notesd_backends(db):
    """{pid: (state, wait_event_type, query)} of notesd's sessions on db's database."""
    with db.cursor() as cur:
        cur.execute("select pid, state, wait_event_type, query from pg_stat_activity "
                    "where application_name = 'notesd' and datname = current_database()")
        return {r[0]: r[1:] for r in cur.fetchall()}


def lock_row(dbname, note_id):
    """A connection in an open transaction holding note_id's row lock."""
    locker = db_connect(dbname)
    locker.autocommit = False
    locker.cursor().execute("select id from notes where id = %s for update", (note_id,))
    return locker


def waiting_on_lock(db):
    return [pid for pid, (_, wait, _) in notesd_backends(db).items() if wait == "Lock"]


class SessionSettingsTest(unittest.TestCase):
    """A database whose defaults are hostile to the parsing gives the bytes a
    normal one gives: the settings travel in the startup packet."""

    def test_hostile_database_defaults_give_the_same_bytes(self):
        url = create_database("poollive_hostile")
        admin = db_connect("poollive_hostile")
        name = database_name("poollive_hostile")
        with admin.cursor() as cur:
            cur.execute("select pg_encoding_to_char(encoding) from pg_database "
                        "where datname = current_database()")
            encoding = cur.fetchone()[0]
            for setting in ("datestyle = 'SQL, DMY'", "timezone = 'America/St_Johns'",
                            "intervalstyle = 'sql_standard'", "extra_float_digits = 0",
                            "statement_timeout = 1", "client_encoding = 'LATIN1'"):
                cur.execute(f'alter database "{name}" set {setting}')
        figure(f"database encoding {encoding}; defaults: DateStyle 'SQL, DMY', TimeZone "
               "America/St_Johns, IntervalStyle sql_standard, client_encoding LATIN1, "
               "extra_float_digits 0, statement_timeout 1 ms")
        # The URL's own options are kept, ours come after them.
        server = Notesd(url + "?options=-c%20search_path%3Dpublic",
                        env={"QUERY_TIMEOUT_MS": "30000"})
        try:
            status, headers, body = request(server.port, "GET", "/notes/42")
            self.assertEqual((status, body), (200, expected_note(admin, 42)))
            status, _, body = request(server.port, "GET", "/notes?tag=deno")
            self.assertEqual((status, body), (200, expected_list(admin, "deno")))
            status, _, body = request(server.port, "POST", "/notes", body=NOTE)
            self.assertEqual(status, 201, body)
            new_id = int(re.search(rb'"id":"(\d+)"', body).group(1))
            self.assertEqual(body, expected_note(admin, new_id))
            status, _, body = request(server.port, "PUT", f"/notes/{new_id}", body=NOTE)
            self.assertEqual((status, body), (200, expected_note(admin, new_id)))
            with admin.cursor() as cur:
                cur.execute("select count(*) from pg_stat_activity where application_name = "
                            "'notesd' and datname = current_database()")
                self.assertGreater(cur.fetchone()[0], 0)
        finally:
            code = server.stop()
            admin.close()
        self.assertEqual(code, 0, server.output)
        self.assertNotIn("ISO DateStyle", server.output)

    def test_prepared_statements_on_the_hostile_database(self):
        url = create_database("poollive_hostile_prep")
        admin = db_connect("poollive_hostile_prep")
        name = database_name("poollive_hostile_prep")
        with admin.cursor() as cur:
            cur.execute(f"""alter database "{name}" set datestyle = 'German'""")
            cur.execute(f"""alter database "{name}" set timezone = 'Asia/Kathmandu'""")
        server = Notesd(url, args=("--prepared",))
        try:
            status, _, body = request(server.port, "GET", "/notes/7")
            self.assertEqual((status, body), (200, expected_note(admin, 7)))
        finally:
            code = server.stop()
            admin.close()
        self.assertEqual(code, 0, server.output)


GAI_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

static void note(const char *line, int flag)
{
    const char *path = getenv("GAI_LOG");
    FILE *f = path != NULL ? fopen(path, "a") : NULL;
    if (f != NULL) {
        fprintf(f, "%s %d\n", line, flag);
        fclose(f);
    }
}

/* Logs every getaddrinfo() call: its node and whether AI_NUMERICHOST was asked. */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    if (real == NULL)
        real = (int (*)(const char *, const char *, const struct addrinfo *,
                        struct addrinfo **))dlsym(RTLD_NEXT, "getaddrinfo");
    note(node != NULL ? node : "-", hints != NULL && (hints->ai_flags & AI_NUMERICHOST) ? 1 : 0);
    return real(node, service, hints, res);
}

/* Logs every look-up of the user database (NSS), as "getpw* 0": never numeric. */
int getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, struct passwd **out)
{
    static int (*real)(uid_t, struct passwd *, char *, size_t, struct passwd **);
    if (real == NULL)
        real = (int (*)(uid_t, struct passwd *, char *, size_t, struct passwd **))dlsym(
            RTLD_NEXT, "getpwuid_r");
    note("getpwuid_r", 0);
    return real(uid, pw, buf, len, out);
}

struct passwd *getpwuid(uid_t uid)
{
    static struct passwd *(*real)(uid_t);
    if (real == NULL)
        real = (struct passwd * (*)(uid_t)) dlsym(RTLD_NEXT, "getpwuid");
    note("getpwuid", 0);
    return real(uid);
}
"""


def shim_env(tmp):
    """The environment that preloads GAI_SHIM (built with the C compiler) and the log it
    writes, or None without a compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    src, lib = os.path.join(tmp, "gai.c"), os.path.join(tmp, "gai.so")
    with open(src, "w") as f:
        f.write(GAI_SHIM)
    subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src, "-ldl"], check=True)
    return {"LD_PRELOAD": lib, "GAI_LOG": os.path.join(tmp, "gai.log"),
            "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:verify_asan_link_order=0"}


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


class MultiHostTest(unittest.TestCase):
    def test_every_host_is_resolved_at_start_up(self):
        """localhost (dead port) then 127.0.0.1 (the database): libpq tries both,
        and after start-up every lookup it makes is of a numeric address."""
        good = create_database("poollive_multihost")
        m = re.match(r"postgresql://postgres@([^:]+):(\d+)/(\w+)", good)
        host, port, dbname = m.groups()
        dead = free_port()
        url = f"postgresql://postgres@localhost:{dead},{host}:{port}/{dbname}"
        start_lines, later = self.lookups(url, {}, dbname, opens=3)
        figure(f"getaddrinfo at start-up: {start_lines}; after: {len(later)} call(s), "
               f"{sum(l.endswith(' 1') for l in later)} numeric")
        self.assertIn("localhost 0", start_lines)
        # libpq tried the dead first address, then the live one, each time.
        self.assertGreaterEqual(sum(l.endswith(" 1") for l in later), 6)
        self.assertEqual([l for l in later if not l.endswith(" 1")], [],
                         "a name lookup happened on the loop")

    def test_hosts_and_the_user_from_outside_the_url_are_looked_up_once(self):
        """A host from PGHOST, and a URL without a user (the process's own user
        name, which libpq reads through NSS), then a service file: after
        start-up, no name is resolved and NSS is never asked."""
        me = pwd.getpwuid(os.geteuid()).pw_name
        admin = db_connect("postgres")
        with admin.cursor() as cur:
            cur.execute("select 1 from pg_roles where rolname = %s", (me,))
            if cur.fetchone() is None:
                cur.execute(f'create role "{me}" superuser login')
        admin.close()
        good = create_database("poollive_pghost")
        host, port, dbname = re.match(r"postgresql://postgres@([^:]+):(\d+)/(\w+)",
                                      good).groups()
        start_lines, later = self.lookups(f"postgresql:///{dbname}",
                                          {"PGHOST": "localhost", "PGPORT": port}, dbname)
        figure(f"PGHOST=localhost, no user: at start-up {start_lines}; after: {later}")
        self.assertIn("localhost 0", start_lines)
        self.assertTrue(any(l.startswith("getpw") for l in start_lines), start_lines)
        self.assertEqual([l for l in later if not l.endswith(" 1")], [],
                         "a name lookup or an NSS look-up happened on the loop")
        self.assertGreaterEqual(len(later), 3)  # each connect, by its numeric address

        tmp = tempfile.mkdtemp()
        service_file = os.path.join(tmp, "pg_service.conf")
        with open(service_file, "w") as f:
            f.write(f"[notesd_test]\nhost=localhost\nport={port}\nuser=postgres\n"
                    f"dbname={dbname}\n")
        start_lines, later = self.lookups("postgresql://?service=notesd_test",
                                          {"PGSERVICEFILE": service_file}, dbname)
        figure(f"service file: at start-up {start_lines}; after: {later}")
        self.assertIn("localhost 0", start_lines)
        self.assertEqual([l for l in later if not l.endswith(" 1")], [],
                         "a name lookup or an NSS look-up happened on the loop")
        self.assertGreaterEqual(len(later), 3)

    def lookups(self, url, env, dbname, opens=3):
        """Runs notesd on `url` with `env`, has it open `opens` connections one after
        the other (the idle timeout closes each), and returns the look-ups the shim
        logged during start-up and after it."""
        tmp = tempfile.mkdtemp()
        shim = shim_env(tmp)
        if shim is None:
            self.skipTest("no C compiler: the look-ups were not counted")
        env = {"POOL_MAX": "2", "POOL_IDLE_TIMEOUT_MS": "100", "LOG_LEVEL": "debug", **env,
               **shim}
        server = Notesd(url, env=env)
        admin = db_connect(dbname)
        try:
            start_lines = read_lines(shim["GAI_LOG"])
            for round_ in range(opens):
                status, _, body = request(server.port, "GET", "/notes/3")
                self.assertEqual((status, body), (200, expected_note(admin, 3)))
                poll(lambda: value(parse(server.metrics()), "notes_db_pool_connections") == 0,
                     what="the idle timeout to close the connection")
            opened = value(parse(server.metrics()), "notes_db_connections_opened_total")
            self.assertEqual(opened, opens)
        finally:
            code = server.stop()
            admin.close()
        self.assertEqual(code, 0, server.output)
        return start_lines, read_lines(shim["GAI_LOG"])[len(start_lines):]


class ServerMessagesTest(unittest.TestCase):
    def test_notices_and_fatal_reasons_become_one_log_line_each(self):
        url = create_database("poollive_messages")
        admin = db_connect("poollive_messages")
        with admin.cursor() as cur:
            # Makes the server send DEBUG messages to the client on every statement.
            cur.execute(f"""alter database "{database_name('poollive_messages')}" """
                        "set client_min_messages = 'debug5'")
        server = Notesd(url, env={"LOG_LEVEL": "debug", "POOL_MAX": "1"})
        try:
            self.assertEqual(request(server.port, "GET", "/notes/5")[0], 200)
            pid = poll(lambda: list(notesd_backends(admin)), what="a backend")[0]
            with admin.cursor() as cur:
                cur.execute("select pg_terminate_backend(%s)", (pid,))
            poll(lambda: value(parse(server.metrics()), "notes_db_connection_errors_total") == 1,
                 what="the terminated connection to be noticed")
            self.assertEqual(request(server.port, "GET", "/notes/5")[0], 200)
        finally:
            code = server.stop()
            admin.close()
        self.assertEqual(code, 0, server.output)
        lines = server.output.splitlines()
        self.assertEqual([l for l in lines if not LOG_LINE.match(l)], [],
                         "every line of output is a log line")
        notices = [l for l in lines if re.search(r"pg#1 server DEBUG: ", l)]
        figure(f"{len(notices)} notice line(s), e.g. {notices[:1]}")
        self.assertGreater(len(notices), 0)
        discarded = [l for l in lines if "discarded:" in l]
        figure(f"discard line: {discarded}")
        self.assertEqual(len(discarded), 1)
        self.assertIn("pg#1", discarded[0])
        self.assertIn("terminating connection due to administrator command", discarded[0])


    def test_a_busy_session_terminated_is_503_and_one_log_line(self):
        """In every way of sending queries: one at a time, in pipeline mode (where
        the FATAL arrives as the result of a command whose sync never comes), and
        prepared (pipeline mode with one query at a time)."""
        for mode in ((), ("--pipeline", "4"), ("--prepared",)):
            with self.subTest(mode=mode):
                self.busy_session_terminated(mode)

    def busy_session_terminated(self, mode):
        dbname = "poollive_terminate" + "".join(a.strip("-")[:4] for a in mode)
        url = create_database(dbname)
        admin = db_connect(dbname)
        server = Notesd(url, args=mode, env={"POOL_MAX": "1"})
        try:
            locker = lock_row(dbname, 71)
            out = []
            t = threading.Thread(target=lambda: out.append(request(
                server.port, "PUT", "/notes/71", body=NOTE)))
            t.start()
            pid = poll(lambda: waiting_on_lock(admin), what="the blocked PUT")[0]
            with admin.cursor() as cur:
                cur.execute("select pg_terminate_backend(%s)", (pid,))
            t.join(30)
            locker.rollback()
            locker.close()
            status, headers, body = out[0]
            figure(f"pg_terminate_backend on a busy session {mode}: {status} {body!r}")
            self.assertEqual(status, 503, body)
            self.assertEqual(headers.get("retry-after"), "1")
            self.assertEqual(request(server.port, "GET", "/notes/71")[0], 200)
        finally:
            code = server.stop()
            admin.close()
        self.assertEqual(code, 0, server.output)
        lines = server.output.splitlines()
        self.assertEqual([l for l in lines if not LOG_LINE.match(l)], [],
                         "every line of output is a log line")
        discarded = [l for l in lines if "discarded:" in l]
        figure(f"discard line {mode}: {discarded}")
        self.assertEqual(len(discarded), 1)
        self.assertIn("pg#1 busy: discarded: FATAL: terminating connection due to administrator "
                      "command", discarded[0])


class PoolBehaviourTest(unittest.TestCase):
    """Each test has a database of its own, so that pg_stat_activity shows only
    its own server's sessions (a stopped server's may linger for a moment)."""

    def setUp(self):
        self.dbname = "poollive_" + str(abs(hash(self.id())) % 10**8)
        self.db_url = create_database(self.dbname)
        self.db = db_connect(self.dbname)

    def tearDown(self):
        self.db.close()

    def backends(self):
        return notesd_backends(self.db)

    def test_idle_connections_close_after_the_idle_timeout(self):
        server = Notesd(self.db_url, env={"POOL_MAX": "4", "POOL_IDLE_TIMEOUT_MS": "700"})
        try:
            locker = lock_row(self.dbname, 31)
            threads = [threading.Thread(target=request, args=(server.port, "PUT", "/notes/31"),
                                        kwargs={"body": NOTE}) for _ in range(4)]
            for t in threads:
                t.start()
            poll(lambda: len(waiting_on_lock(self.db)) == 4, what="4 busy connections")
            locker.rollback()
            locker.close()
            for t in threads:
                t.join(30)
            done = time.monotonic()
            m = parse(server.metrics())
            self.assertEqual(value(m, "notes_db_pool_connections"), 4)
            self.assertEqual(len(self.backends()), 4)
            poll(lambda: value(parse(server.metrics()), "notes_db_pool_connections") == 0,
                 timeout=10, what="the idle timeout to close every connection")
            closed_after = time.monotonic() - done
            poll(lambda: len(self.backends()) == 0, what="pg_stat_activity to agree")
            figure(f"POOL_IDLE_TIMEOUT_MS 700: all 4 closed {closed_after:.2f} s after the last use")
            self.assertGreater(closed_after, 0.5)
            m = parse(server.metrics())
            self.assertEqual(value(m, "notes_db_pool_idle_connections"), 0)
            self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
            # And the pool opens again on demand.
            self.assertEqual(request(server.port, "GET", "/notes/31")[0], 200)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_frozen_backend_gets_504_from_the_backstop_and_is_replaced(self):
        server = Notesd(self.db_url, env={"POOL_MAX": "1", "QUERY_TIMEOUT_MS": "1000"})
        pid = None
        try:
            self.assertEqual(request(server.port, "GET", "/notes/1")[0], 200)
            pid = poll(lambda: list(self.backends()), what="notesd's backend")[0]
            os.kill(pid, signal.SIGSTOP)  # as root: the backend runs as postgres
            start = time.monotonic()
            status, _, body = request(server.port, "GET", "/notes/2")
            took = time.monotonic() - start
            figure(f"frozen backend, QUERY_TIMEOUT_MS 1000: {status} after {took:.2f} s")
            self.assertEqual(status, 504, body)
            self.assertGreater(took, 1.9)  # statement_timeout cannot fire in a stopped backend
            self.assertLess(took, 5.0 + slack(server.port))
            os.kill(pid, signal.SIGCONT)  # it finds its client gone and exits
            status, _, body = request(server.port, "GET", "/notes/2")
            self.assertEqual((status, body), (200, expected_note(self.db, 2)))
            self.assertNotIn(pid, self.backends())
            m = parse(server.metrics())
            self.assertEqual(value(m, "notes_db_query_timeouts_total"), 1)
            self.assertEqual(value(m, "notes_db_connections_opened_total"), 2)
        finally:
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            self.assertEqual(server.stop(), 0)

    def test_waiters_are_served_first_in_first_out(self):
        server = Notesd(self.db_url, env={"POOL_MAX": "1"})
        try:
            locker = lock_row(self.dbname, 41)
            blocker = threading.Thread(target=request, args=(server.port, "PUT", "/notes/41"),
                                       kwargs={"body": NOTE})
            blocker.start()
            poll(lambda: len(waiting_on_lock(self.db)) == 1, what="the blocked PUT")
            results = {}
            threads = []
            for k in range(6):
                t = threading.Thread(target=lambda k=k: results.__setitem__(k, request(
                    server.port, "POST", "/notes",
                    body={"title": f"fifo-{k}", "body": "b", "tag": "fifo"})))
                t.start()
                threads.append(t)
                poll(lambda: value(parse(server.metrics()), "notes_db_pool_waiting_requests")
                     == k + 1, what=f"waiter {k} queued")
            locker.rollback()
            locker.close()
            for t in [blocker, *threads]:
                t.join(30)
            ids = [int(re.search(rb'"id":"(\d+)"', results[k][2]).group(1)) for k in range(6)]
            figure(f"queued in order 0..5, inserted with ids {ids}")
            self.assertEqual([results[k][0] for k in range(6)], [201] * 6)
            self.assertEqual(ids, sorted(ids), "waiters ran out of order")
        finally:
            self.assertEqual(server.stop(), 0)

    def test_idle_connections_are_reused_last_in_first_out(self):
        server = Notesd(self.db_url, env={"POOL_MAX": "2"})
        try:
            locker = lock_row(self.dbname, 51)
            blocker = threading.Thread(target=request, args=(server.port, "PUT", "/notes/51"),
                                       kwargs={"body": NOTE})
            blocker.start()
            first = poll(lambda: waiting_on_lock(self.db), what="the blocked PUT")[0]
            # A second connection opens for this GET and goes idle first.
            self.assertEqual(request(server.port, "GET", "/notes/52")[0], 200)
            second = [p for p in self.backends() if p != first][0]
            locker.rollback()
            locker.close()
            blocker.join(30)
            # `first` went idle last, so it serves the next query.
            self.assertEqual(request(server.port, "GET", "/notes?tag=bun")[0], 200)
            b = self.backends()
            figure(f"idle order: pid {second}, then pid {first}; next query ran on "
                   f"{[p for p, v in b.items() if 'where tag' in v[2]]}")
            self.assertIn("where tag", b[first][2])
            self.assertNotIn("where tag", b[second][2])
        finally:
            self.assertEqual(server.stop(), 0)

    def test_a_dba_cancel_is_503_and_not_a_timeout(self):
        server = Notesd(self.db_url, env={"POOL_MAX": "2", "QUERY_TIMEOUT_MS": "1500"})
        try:
            locker = lock_row(self.dbname, 61)
            out = []
            t = threading.Thread(target=lambda: out.append(request(
                server.port, "PUT", "/notes/61", body=NOTE)))
            t.start()
            pid = poll(lambda: waiting_on_lock(self.db), what="the blocked PUT")[0]
            with self.db.cursor() as cur:
                cur.execute("select pg_cancel_backend(%s)", (pid,))
            t.join(30)
            status, headers, body = out[0]
            figure(f"pg_cancel_backend: {status} {body!r}")
            self.assertEqual(status, 503, body)
            self.assertEqual(body, b'{"error":"database query was cancelled"}')
            self.assertEqual(headers.get("retry-after"), "1")
            m = parse(server.metrics())
            self.assertEqual(value(m, "notes_db_query_timeouts_total"), 0)
            self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
            # The same wait past statement_timeout is a timeout: 504, counted.
            start = time.monotonic()
            status, _, body = request(server.port, "PUT", "/notes/61", body=NOTE)
            took = time.monotonic() - start
            self.assertEqual(status, 504, body)
            self.assertGreater(took, 1.4)
            self.assertEqual(value(parse(server.metrics()), "notes_db_query_timeouts_total"), 1)
            locker.rollback()
            locker.close()
            # The connection the cancel hit is still in use.
            self.assertEqual(request(server.port, "GET", "/notes/61")[0], 200)
            self.assertEqual(value(parse(server.metrics()), "notes_db_connections_opened_total"),
                             1)
        finally:
            self.assertEqual(server.stop(), 0)


class StatementFailureTest(unittest.TestCase):
    """A statement the database refuses (its table is missing) is a query error
    in both modes: 500 on a connection that stays, never a connection per
    request; and /readyz says the database is reachable, since it is."""

    def test_a_missing_table_under_load_keeps_connections_bounded(self):
        for mode in ((), ("--prepared",), ("--prepared", "--pipeline", "4")):
            with self.subTest(mode=mode):
                self.missing_table(mode)

    def missing_table(self, mode):
        dbname = "poollive_missing" + "".join(a.strip("-")[:4] for a in mode)
        url = create_database(dbname)
        admin = db_connect(dbname)
        with admin.cursor() as cur:
            cur.execute("alter table notes rename to notes_away")
        server = Notesd(url, args=mode, env={"POOL_MAX": "4"})
        statuses, lock = [], threading.Lock()

        def client(first):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            for i in range(10):
                status = request(server.port, "GET", f"/notes/{first + i}", conn=conn)[0]
                with lock:
                    statuses.append(status)
            conn.close()
        try:
            clients = [threading.Thread(target=client, args=(1 + 10 * k,)) for k in range(6)]
            for c in clients:
                c.start()
            for c in clients:
                c.join(60)
            m = parse(server.metrics())
            opened = value(m, "notes_db_connections_opened_total")
            errors = value(m, "notes_db_connection_errors_total")
            ready = request(server.metrics_port, "GET", "/readyz")
            figure(f"missing table {mode}: {len(statuses)} requests -> "
                   f"{sorted(set(statuses))}, {opened:.0f} connects, {errors:.0f} connection "
                   f"errors; /readyz {ready[0]}")
            self.assertEqual(statuses, [500] * 60)
            self.assertLessEqual(opened, 4)
            self.assertEqual(errors, 0)
            self.assertEqual(ready[:3:2], (200, b'{"status":"ready"}'))
            # The table comes back: the same connections prepare it again and answer.
            with admin.cursor() as cur:
                cur.execute("alter table notes_away rename to notes")
            for n in (3, 4, 5, 6, 7, 8):
                status, _, body = request(server.port, "GET", f"/notes/{n}")
                self.assertEqual((status, body), (200, expected_note(admin, n)))
            m = parse(server.metrics())
            self.assertLessEqual(value(m, "notes_db_connections_opened_total"), 4)
            self.assertEqual(value(m, "notes_db_connection_errors_total"), 0)
        finally:
            code = server.stop()
            admin.close()
        self.assertEqual(code, 0, server.output)
        self.assertIn("database error 42P01", server.output)


class ReadyzTest(unittest.TestCase):
    def test_readyz_counts_a_connection_on_any_loop(self):
        """Two loops and a role allowed one connection: whichever loop's pool
        holds it, the database is reachable, and /readyz (served by loop 0) says
        so; the other loop's pool, refused, is in its back-off."""
        url = create_database("poollive_readyz")
        admin = db_connect("poollive_readyz")
        with admin.cursor() as cur:
            cur.execute("drop role if exists notesd_one")
            cur.execute("create role notesd_one login connection limit 1")
            cur.execute("grant all on all tables in schema public to notesd_one")
            cur.execute("grant all on all sequences in schema public to notesd_one")
        one_url = url.replace("postgresql://postgres@", "postgresql://notesd_one@")
        # /readyz must come before the connection idles out: 300 ms is room enough for one
        # request in the optimised build, not under ASan on a busy machine (8 of 8 rounds
        # came too late there once)
        server = Notesd(one_url, args=("--threads", "2"),
                        env={"POOL_MAX": "2",
                             "POOL_IDLE_TIMEOUT_MS": "1500" if SANITIZED else "300"})
        answers = []
        try:
            for round_ in range(8):
                poll(lambda: value(parse(server.metrics()), "notes_db_pool_connections") == 0,
                     what="the idle connection to close")
                # New connections land on either loop; both pools try to connect at once.
                got = [request(server.port, "GET", f"/notes/{n}")[0] for n in range(1, 9)]
                self.assertIn(200, got)
                answers.append(request(server.metrics_port, "GET", "/readyz")[0])
            figure(f"/readyz after each of 8 rounds: {answers}")
            self.assertEqual(answers, [200] * 8)
        finally:
            code = server.stop()
            with admin.cursor() as cur:
                cur.execute("select pg_terminate_backend(pid) from pg_stat_activity "
                            "where usename = 'notesd_one'")
            admin.close()
        self.assertEqual(code, 0, server.output)


class Reader(threading.Thread):
    """GET /notes/:id on one keep-alive connection until told to stop or closed."""

    def __init__(self, port, first_id):
        super().__init__(daemon=True)
        self.port, self.next_id = port, first_id
        self.results = []  # (time sent, time answered, status or exception name, headers)
        self.stop_flag = threading.Event()

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop_flag.is_set():
            sent = time.monotonic()
            try:
                conn.request("GET", f"/notes/{self.next_id}")
                res = conn.getresponse()
                res.read()
                self.results.append((sent, time.monotonic(), res.status,
                                     {k.lower(): v for k, v in res.getheaders()}))
                if res.getheader("connection", "").lower() == "close":
                    return
            except (OSError, http.client.HTTPException) as e:
                self.results.append((sent, time.monotonic(), type(e).__name__, {}))
                return
            self.next_id = self.next_id % 1000 + 1


class DrainTest(unittest.TestCase):
    def test_sigterm_under_keep_alive_load_opens_no_connection(self):
        url = create_database("poollive_drain")
        admin = db_connect("poollive_drain")
        server = Notesd(url, env={"POOL_MAX": "4", "LOG_LEVEL": "debug"})
        readers = [Reader(server.port, 1 + 100 * i) for i in range(8)]
        locker = lock_row("poollive_drain", 999)
        held = []
        holder = threading.Thread(target=lambda: held.append(request(
            server.port, "PUT", "/notes/999", body=NOTE)))
        try:
            for r in readers:
                r.start()
            poll(lambda: sum(len(r.results) for r in readers) > 400, what="load before SIGTERM")
            # One request in flight for sure: its PUT waits for a row lock.
            holder.start()
            poll(lambda: waiting_on_lock(admin), what="the blocked PUT")
            # A connection still connecting would open during the drain though it
            # was started before it: wait until every open one has connected.
            def settled():
                m = parse(server.metrics())
                opened = value(m, "notes_db_connections_opened_total")
                return opened if opened == value(m, "notes_db_pool_connections") else None
            opened_before = poll(settled, what="no database connection still connecting")
            sigterm_at = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            poll(lambda: all(not r.is_alive() for r in readers), what="the readers turned away")
            locker.rollback()
            holder.join(30)
            server.proc.wait(30)
            for r in readers:
                r.stop_flag.set()
                r.join(30)
        finally:
            locker.close()
            code = server.stop()
            admin.close()
        self.assertEqual(code, 0, server.output)
        answered_before = [res for r in readers for res in r.results if res[1] < sigterm_at]
        after = [res for r in readers for res in r.results if res[1] >= sigterm_at]
        statuses = {}
        for res in after:
            statuses[res[2]] = statuses.get(res[2], 0) + 1
        # Connections ever opened: the log's "connected" lines (the metrics port
        # is gone with the process; the log covers the whole drain).
        connected = re.findall(r"pg#(\d+) connecting: connected", server.output)
        figure(f"before SIGTERM: {len(answered_before)} answers, {opened_before:.0f} connections "
               f"opened; answered after: {statuses}; the PUT in flight: {held[0][0]}; "
               f"connections opened over the whole run: {len(connected)}")
        self.assertTrue(all(res[2] == 200 for res in answered_before))
        self.assertEqual(held[0][0], 200, "the request in flight at SIGTERM must finish")
        self.assertEqual(len(connected), opened_before, "a connection was opened while draining")
        self.assertLessEqual(len(connected), 4)
        for _, _, s, h in after:
            self.assertIn(s, (200, 503, "RemoteDisconnected", "ConnectionResetError",
                              "ConnectionRefusedError", "BrokenPipeError"))
            if s == 503:
                self.assertEqual(h.get("connection", "").lower(), "close")
                self.assertEqual(h.get("retry-after"), "1")
        self.assertTrue(any(res[2] != 200 for res in after),
                        "after SIGTERM the keep-alive clients should be turned away")


if __name__ == "__main__":
    main()
