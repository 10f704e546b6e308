#!/usr/bin/python3
"""Several event loops at once (--threads 4): every loop serves queries, timers
and static routes while /metrics is scraped from the first moment on, then
SIGTERM stops it with work in flight on every loop.

In every build this checks that the loops' figures add up and that shutdown is
clean. In the ThreadSanitizer build (tests/run.sh's third suite) notesd runs
with TSAN_OPTIONS=halt_on_error=1:exitcode=66, so a data race between the
loops, or between a loop and the thread that renders /metrics, ends it with 66
and fails the exit-status assertions here.
"""
import http.client
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from notes_testlib import (Notesd, TSAN, create_database, db_connect, poll,  # noqa: E402
                           request)
from test_metrics import parse, value  # noqa: E402

LOOPS = 4
ROUTES = ["/notes/7", "/notes?tag=js", "/json", "/status", "/delay/5", "/nope"]


def hammer(port, stop, counts, errors):
    """One client: a new connection per request, so the kernel spreads them over the loops."""
    i = 0
    while not stop.is_set():
        path = ROUTES[i % len(ROUTES)]
        i += 1
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            conn.close()
            counts[path] = counts.get(path, 0) + 1
            expected = 404 if path == "/nope" else 200
            if resp.status != expected:
                errors.append(f"{path}: {resp.status}")
        except OSError as e:
            errors.append(f"{path}: {e}")


class ThreadsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("threads")
        cls.db = db_connect("threads")

    @classmethod
    def tearDownClass(cls):
        cls.db.close()

    def test_loops_under_load_with_early_scrapes(self):
        # Scrape before the first request: the loops' state must already be
        # published when the metrics thread first reads it.
        server = Notesd(self.db_url, args=["--threads", str(LOOPS), "--pool-max", "8"],
                        env={"LAG_INTERVAL_MS": "10"})
        try:
            first = parse(server.metrics())
            # ThreadSanitizer's runtime adds a thread of its own.
            self.assertEqual(value(first, "process_threads"), LOOPS + (1 if TSAN else 0))
            stop = threading.Event()
            counts = [dict() for _ in range(6)]
            errors = []
            clients = [threading.Thread(target=hammer, args=(server.port, stop, counts[i], errors))
                       for i in range(len(counts))]
            for c in clients:
                c.start()
            scrapes = 0
            try:
                # Scrape while the loops work, until each has served enough.
                def enough():
                    nonlocal scrapes
                    parse(server.metrics())
                    scrapes += 1
                    return sum(sum(c.values()) for c in counts) >= (300 if TSAN else 1200)
                poll(enough, timeout=120, what="requests on every loop")
            finally:
                stop.set()
                for c in clients:
                    c.join()
            self.assertEqual(errors, [])
            after = parse(server.settled_metrics())
            sent = {}
            for c in counts:
                for k, v in c.items():
                    sent[k] = sent.get(k, 0) + v
            self.assertEqual(value(after, "http_requests_total", method="GET", path="/notes/:id",
                                   status_code="200"), sent["/notes/7"])
            self.assertEqual(value(after, "http_requests_total", method="GET", path="/json",
                                   status_code="200"), sent["/json"])
            self.assertEqual(value(after, "notes_db_query_duration_seconds_count",
                                   statement="list_by_tag"), sent["/notes?tag=js"])
            self.assertGreater(scrapes, 3)
            # Every loop's lag probe fed the shared histogram.
            self.assertGreater(value(after, "notes_eventloop_delay_seconds_count"), LOOPS)
        finally:
            code = server.stop()
        self.assertEqual(code, 0, server.output)

    def test_shutdown_with_work_in_flight_on_every_loop(self):
        server = Notesd(self.db_url, args=["--threads", str(LOOPS)])
        results = []
        # Many connections, each with a request that outlives the SIGTERM, so
        # that every loop (the kernel spreads connections) has one in flight.
        def slow(i):
            try:
                results.append(request(server.port, "GET", "/delay/400")[0])
            except OSError as e:
                results.append(str(e))
        clients = [threading.Thread(target=slow, args=(i,)) for i in range(24)]
        for c in clients:
            c.start()
        poll(lambda: value(parse(server.metrics()), "http_requests_in_flight") >= 24,
             timeout=30, what="24 requests in flight")
        code = server.stop()
        for c in clients:
            c.join()
        self.assertEqual(code, 0, server.output)
        self.assertEqual(results, [200] * 24)

    def test_websockets_and_traced_requests_on_every_loop_while_scraped(self):
        """WebSocket echoes and feeds and traced requests on connections the kernel spreads
        over the loops, while another thread scrapes both formats: the WebSocket counters,
        the lifetime histogram and the exemplars are written by each loop and read by the
        metrics page (ThreadSanitizer watches), and they add up."""
        from ws_client import WebSocket
        server = Notesd(self.db_url, args=["--threads", str(LOOPS)])
        stop, errors = threading.Event(), []

        def scrape():
            while not stop.is_set():
                for accept in (None, "application/openmetrics-text"):
                    request(server.metrics_port, "GET", "/metrics",
                            headers={"Accept": accept} if accept else {})

        def client(i):
            try:
                ws = WebSocket(server.port, "/ws/echo")
                for k in range(20):
                    ws.send(f"{i}:{k}")
                    if ws.recv()[1] != f"{i}:{k}".encode():
                        errors.append(f"echo {i}:{k}")
                ws.close()
                feed = WebSocket(server.port, "/ws/feed?rate=500&count=10")
                if len(feed.recv_close()[2]) != 10:
                    errors.append(f"feed {i}")
                feed.wait_eof()
                request(server.port, "GET", "/json", headers={
                    "traceparent": f"00-{i + 1:032x}-00f067aa0ba902b7-01"})
            except OSError as e:
                errors.append(f"client {i}: {e}")
        try:
            scraper = threading.Thread(target=scrape)
            scraper.start()
            clients = [threading.Thread(target=client, args=(i,)) for i in range(32)]
            for c in clients:
                c.start()
            for c in clients:
                c.join()
            poll(lambda: sum(v for (n, _), v in parse(server.metrics()).items()
                             if n == "notes_ws_connections") == 0, timeout=10,
                 what="every WebSocket closed")
            stop.set()
            scraper.join()
            self.assertEqual(errors, [])
            after = parse(server.metrics())
            echo = {"path": "/ws/echo"}
            self.assertEqual(value(after, "notes_ws_messages_total", direction="received", **echo),
                             32 * 20)
            self.assertEqual(value(after, "notes_ws_connections_opened_total", **echo), 32)
            self.assertEqual(value(after, "notes_ws_messages_total", path="/ws/feed",
                                   direction="sent"), 32 * 10)
            self.assertEqual(value(after, "notes_ws_connection_duration_seconds_count", **echo), 32)
        finally:
            stop.set()
            code = server.stop()
        self.assertEqual(code, 0, server.output)


if __name__ == "__main__":
    unittest.main(verbosity=2)
