#!/usr/bin/env python3
"""The metrics port tells the truth: counts that grow by exactly what was sent,
pool figures read from the pool's lists, lag that shows a busy loop, and a page
that promtool accepts."""
import json
import re
import shutil
import subprocess
import threading
import time
import unittest

from notes_testlib import (SANITIZED, TSAN, Notesd, ServerTestCase, db_connect, free_port, main,
                           poll, request)

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def parse(text):
    """{(name, frozenset(labels)): float} for every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"unparsable sample line: {line!r}"
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


class MetricsTest(ServerTestCase):
    database = "metrics"
    # The busy-loop test blocks the loop with /primes?below=2000000, above the default PRIMES_MAX.
    env = {"POOL_MAX": "2", "LAG_INTERVAL_MS": "100", "PRIMES_MAX": "10000000"}

    @classmethod
    def setUpClass(cls):
        cls.launched = time.time()  # process_start_time_seconds is no earlier
        super().setUpClass()

    def scrape(self):
        return parse(self.server.metrics())

    def test_promtool_finds_no_problems(self):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian package prometheus) is required")
        request(self.port, "GET", "/notes/1")  # so that every family has samples
        status, headers, body = request(self.server.metrics_port, "GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        res = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertEqual(res.stdout + res.stderr, b"")

    def test_request_counts_grow_by_exactly_what_was_sent(self):
        sends = [("GET", "/notes/7", "/notes/:id", "200", 13),
                 ("GET", "/notes/999999999", "/notes/:id", "404", 4),
                 ("GET", "/notes/abc", "/notes/:id", "400", 3),
                 ("GET", "/notes?tag=js", "/notes", "200", 6),
                 ("GET", "/json", "/json", "200", 25),
                 ("GET", "/status", "/status", "200", 9),
                 ("GET", "/", "/", "200", 5),
                 ("HEAD", "/json", "/json", "200", 2),
                 ("OPTIONS", "/json", "/json", "405", 2),
                 ("GET", "/no/such/thing", "other", "404", 3)]
        before = self.scrape()
        for method, path, _, _, n in sends:
            for _ in range(n):
                request(self.port, method, path)
        for _ in range(11):
            request(self.port, "POST", "/notes", body={"title": "m", "body": "m", "tag": "m"})
        after = self.scrape()
        for method, path, route, status, n in sends + [("POST", "", "/notes", "201", 11)]:
            with self.subTest(f"{method} {route} {status}"):
                labels = dict(method=method, path=route, status_code=status)
                grew = value(after, "http_requests_total", **labels) - \
                    value(before, "http_requests_total", **labels)
                self.assertEqual(grew, n)
                grew = value(after, "http_request_duration_seconds_count", **labels) - \
                    value(before, "http_request_duration_seconds_count", **labels)
                self.assertEqual(grew, n)
        q = lambda s, st: value(s, "notes_db_query_duration_seconds_count", statement=st)
        self.assertEqual(q(after, "get_note") - q(before, "get_note"), 13 + 4)
        self.assertEqual(q(after, "list_by_tag") - q(before, "list_by_tag"), 6)
        self.assertEqual(q(after, "insert_note") - q(before, "insert_note"), 11)
        acq = lambda s: value(s, "notes_db_pool_acquire_duration_seconds_count")
        self.assertEqual(acq(after) - acq(before), 13 + 4 + 6 + 11)
        # The metrics port's own routes are never counted.
        self.assertFalse([k for k in after if k[0] == "http_requests_total" and
                          ("path", "/metrics") in k[1]])

    def test_pool_counts_come_from_its_lists_under_a_lock(self):
        """POOL_MAX=2 and 10 concurrent PUTs on a row another session holds
        locked: total 2, waiting 8; all 10 complete once the lock goes."""
        locker = db_connect("metrics")
        locker.autocommit = False
        cur = locker.cursor()
        cur.execute("select id from notes where id = 77 for update")
        results = []

        def put(i):
            results.append(request(self.port, "PUT", "/notes/77",
                                   body={"title": f"p{i}", "body": "b", "tag": "lock"}))

        threads = [threading.Thread(target=put, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        try:
            # Settled: all 10 requests arrived, both connections open and busy.
            # (Earlier, a connection still opening counts in the total but runs
            # nothing, so 9 requests can also show 8 waiting.)
            samples = poll(lambda: (lambda s: s if value(s, "notes_db_pool_waiting_requests") == 8
                                    and value(s, "http_requests_in_flight") == 10
                                    else None)(self.scrape()), what="10 requests, 8 waiting")
            self.assertEqual(value(samples, "notes_db_pool_connections"), 2)
            self.assertEqual(value(samples, "notes_db_pool_idle_connections"), 0)
            self.assertEqual(value(samples, "notes_db_pool_max_connections"), 2)
            self.assertEqual(results, [], "no PUT may finish while the row is locked")
        finally:
            locker.rollback()
            locker.close()
        for t in threads:
            t.join(30)
        self.assertEqual(sorted(r[0] for r in results), [200] * 10)
        samples = poll(lambda: (lambda s: s if value(s, "notes_db_pool_waiting_requests") == 0
                                else None)(self.scrape()), what="an empty queue")
        self.assertEqual(value(samples, "notes_db_pool_idle_connections"), 2)

    def test_a_busy_loop_shows_in_the_lag_metrics(self):
        self.scrape()  # start a fresh window
        start = time.monotonic()
        status, _, body = request(self.port, "GET", "/primes?below=2000000")
        took = time.monotonic() - start
        self.assertEqual(status, 200, body)
        samples = self.scrape()
        lag_max = value(samples, "notes_eventloop_lag_max_seconds")
        # The loop was blocked for about `took`; the probe fires late by that
        # much, less at most one period.
        self.assertGreater(took, 0.15, "the primes request should take a while")
        self.assertGreaterEqual(lag_max, took - 0.1 - 0.05)
        self.assertLessEqual(lag_max, took + 0.05)
        over_100ms = value(samples, "notes_eventloop_delay_seconds_count") - \
            value(samples, "notes_eventloop_delay_seconds_bucket", le="0.1")
        self.assertGreaterEqual(over_100ms, 1)
        # A quiet window afterwards: the gauges describe only the new samples.
        poll(lambda: value(self.scrape(), "notes_eventloop_lag_max_seconds") < 0.05,
             what="a quiet lag window")

    def test_two_readers_do_not_take_each_other_s_lag_samples(self):
        """The window gauges cover the samples since *this reader's* previous scrape: the
        status page polling once a second once emptied Prometheus's window."""
        def lag_max(agent):
            status, _, body = request(self.server.metrics_port, "GET", "/metrics",
                                      headers={"User-Agent": agent})
            self.assertEqual(status, 200)
            return value(parse(body.decode()), "notes_eventloop_lag_max_seconds")
        for agent in ("Prometheus/2.42.0", "status-page"):
            lag_max(agent)  # each starts a window of its own
        start = time.monotonic()
        self.assertEqual(request(self.port, "GET", "/primes?below=2000000")[0], 200)
        took = time.monotonic() - start
        self.assertGreater(took, 0.15, "the primes request should take a while")
        first, second = lag_max("status-page"), lag_max("Prometheus/2.42.0")
        self.assertGreater(first, 0.05, "the blocked loop's lag is in the first reader's window")
        self.assertEqual(second, first, "the second reader saw the same samples")
        poll(lambda: lag_max("status-page") < 0.05, what="a quiet window for the first")

    def test_process_figures_are_plausible(self):
        s = self.scrape()
        rss = value(s, "process_resident_memory_bytes")
        self.assertTrue(1 << 20 < rss < 1 << 31, rss)
        self.assertGreater(value(s, "process_heap_bytes"), 0)
        # ASan and TSan replace malloc, and glibc's mallinfo2 then reads 0
        if not SANITIZED and not TSAN:
            self.assertGreater(value(s, "notes_malloc_heap_used_bytes"), 0)
        self.assertGreater(value(s, "process_open_fds"), 3)
        self.assertGreater(value(s, "process_max_fds"), value(s, "process_open_fds"))
        self.assertEqual(value(s, "process_threads"), 1)
        # the wall clock at start-up, to the millisecond: after the launch, before now
        started = value(s, "process_start_time_seconds")
        self.assertGreaterEqual(started, self.launched - 0.001)
        self.assertLessEqual(started, time.time() + 0.001)
        build = [k for k in s if k[0] == "notes_build_info"]
        self.assertEqual(len(build), 1)
        labels = dict(build[0][1])
        self.assertEqual(labels["runtime"], "notesd")
        self.assertEqual(labels["h2o_version"], "2.2.5")
        self.assertRegex(labels["libpq_version"], r"^\d+\.\d+$")

    def test_health_and_readiness(self):
        self.assertEqual(request(self.server.metrics_port, "GET", "/healthz")[0], 200)
        status, _, body = request(self.server.metrics_port, "GET", "/readyz")
        self.assertEqual((status, json.loads(body)), (200, {"status": "ready"}))

    def test_counts_add_up_across_loops(self):
        """With --threads 3 every loop counts its own requests; /metrics adds them up."""
        server = Notesd(self.db_url, args=["--threads", "3", "--pool-max", "5"])
        try:
            before = parse(server.metrics())
            # A new connection per request, so the kernel spreads them over the loops.
            for i in range(60):
                self.assertEqual(request(server.port, "GET", f"/notes/{i + 1}")[0], 200)
            after = parse(server.settled_metrics())
            labels = dict(method="GET", path="/notes/:id", status_code="200")
            self.assertEqual(value(after, "http_requests_total", **labels) -
                             value(before, "http_requests_total", **labels), 60)
            self.assertEqual(value(after, "notes_db_query_duration_seconds_count",
                                   statement="get_note"), 60)
            self.assertEqual(value(after, "notes_db_pool_max_connections"), 5)
            self.assertLessEqual(value(after, "notes_db_pool_connections"), 5)
            # ThreadSanitizer's runtime starts a thread of its own with the second one.
            self.assertEqual(value(after, "process_threads"), 3 + (1 if TSAN else 0))
            # Each loop's probe ticks: about 3 samples per 100 ms.
            poll(lambda: value(parse(server.metrics()), "notes_eventloop_delay_seconds_count")
                 >= 3 * 5, what="lag samples from every loop")
        finally:
            self.assertEqual(server.stop(), 0)

    def test_readyz_query_has_its_statement_series(self):
        """A server with no connection yet answers /readyz with a `select 1`,
        counted like every statement, under statement="ping"."""
        server = Notesd(self.db_url)
        try:
            before = value(parse(server.metrics()), "notes_db_query_duration_seconds_count",
                           statement="ping")
            status, _, body = request(server.metrics_port, "GET", "/readyz")
            self.assertEqual(status, 200, body)
            after = value(parse(server.metrics()), "notes_db_query_duration_seconds_count",
                          statement="ping")
            self.assertEqual((before, after), (0, 1))
        finally:
            self.assertEqual(server.stop(), 0)

    def test_readiness_fails_without_a_database(self):
        dead = f"postgresql://postgres@127.0.0.1:{free_port()}/none"
        server = Notesd(dead)
        try:
            self.assertEqual(request(server.metrics_port, "GET", "/healthz")[0], 200)
            status, _, body = request(server.metrics_port, "GET", "/readyz")
            self.assertEqual(status, 503, body)
            status, headers, body = request(server.port, "GET", "/notes/1")
            self.assertEqual(status, 503, body)
            self.assertEqual(headers.get("retry-after"), "1")
            errors = value(parse(server.metrics()), "notes_db_connection_errors_total")
            self.assertGreaterEqual(errors, 1)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    main()
