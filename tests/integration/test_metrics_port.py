#!/usr/bin/env python3
"""The metrics port under careless and hostile readers: the journal's accounting
that no reader can break (a `since` past the newest, 2^64 - 1, a position from an
earlier process, concurrent readers on a tiny ring), memory that stays bounded for
readers that never read, scrapes that get through idle and slow sockets, HTTP/1.1
only, and who may read the journal (loopback, or a token from another host)."""
import contextlib
import csv
import io
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import unittest

from notes_testlib import (SANITIZED, Notesd, ServerTestCase, create_database, main, poll,
                           request)

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
U64_MAX = 2**64 - 1


def metric(text, name, labels=None):
    """The sum of a family's samples in a /metrics page (those with `labels` in their set)."""
    total = 0.0
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and m.group(1) == name and (labels is None or labels in (m.group(2) or "")):
            total += float(m.group(3))
    return total


def journal(server, **params):
    """(status, headers, body) of one GET /journal."""
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return request(server.metrics_port, "GET", f"/journal?{query}")


class Reader:
    """Pages through one loop's journal from where it stands now, as a reader should:
    `since` from Journal-Next, `epoch` from the first page; counts what it was given
    and what it was told it lost (the lost line and the headers must agree)."""

    def __init__(self, server, loop, limit=50):
        """Takes what the ring holds now (so no earlier record is dropped later), then
        counts from zero."""
        self.server, self.loop, self.limit = server, loop, limit
        self.epoch = journal(server, loop=loop, since=0, limit=1)[1]["journal-epoch"]
        self.since = self.given = self.lost = 0
        while self.page():
            pass
        self.given = self.lost = 0

    def page(self):
        status, headers, body = journal(self.server, loop=self.loop, since=self.since,
                                        limit=self.limit, epoch=self.epoch)
        assert status == 200, (status, body)
        assert headers["journal-epoch"] == self.epoch
        lines = [json.loads(line) for line in body.decode().splitlines()]
        records = [r for r in lines if "seq" in r]
        lost = [r for r in lines if "lost" in r]
        assert len(lost) <= 1 and (not lost or lines[0] is lost[0]), lines[:2]
        if lost:
            assert (int(headers["journal-lost-from"]), int(headers["journal-lost-to"])) == \
                (lost[0]["from"], lost[0]["to"]), headers
            assert lost[0]["from"] == self.since + 1, (lost[0], self.since)
            self.lost += lost[0]["lost"]
        else:
            assert "journal-lost-from" not in headers, headers
        seqs = [r["seq"] for r in records]
        first = lost[0]["to"] + 1 if lost else self.since + 1
        assert seqs == list(range(first, first + len(seqs))), (first, seqs[:3])
        self.given += len(records)
        self.since = int(headers["journal-next"])
        return len(records) + len(lost)


class AccountingTest(unittest.TestCase):
    """Two loops, a ring of 50 records each, and readers of every kind at once."""

    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("metrics_port_accounting")
        cls.server = Notesd(cls.db_url, env={"THREADS": "2", "POOL_MAX": "4", "JOURNAL": "50"})

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, cls.server.output

    def test_a_since_past_the_newest_moves_nothing(self):
        """GET /journal?since=2^64-2 once switched the drop counter off for good, and
        2^64-1 wrapped to the first record with no lost line. Both are a 409 now, and
        the records after them are still counted dropped when no reader had them."""
        before = self.server.settled_metrics()
        for since in (U64_MAX - 1, U64_MAX, 10**9):
            status, headers, body = journal(self.server, since=since)
            self.assertEqual(status, 409, body)
            self.assertIn("past loop 0's newest record", json.loads(body)["error"])
        # 300 requests on one connection: one loop, a ring of 50, no reader
        conn = socket.create_connection(("127.0.0.1", self.server.port))
        conn.sendall(b"GET /json HTTP/1.1\r\nHost: x\r\n\r\n" * 299 +
                     b"GET /json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while conn.recv(65536):
            pass
        conn.close()
        after = self.server.settled_metrics()
        self.assertEqual(metric(after, "http_requests_total") -
                         metric(before, "http_requests_total"), 300)
        # every one of the 300 overwrote a slot whose record no reader had been given,
        # but for the 50 that only filled the ring, if it was not full yet
        dropped = (metric(after, "notes_journal_dropped_total") -
                   metric(before, "notes_journal_dropped_total"))
        self.assertGreaterEqual(dropped, 250)

    def test_every_record_is_given_or_lost_and_lost_is_dropped(self):
        """Under load on both loops: a fast reader of loop 0, a slow one of loop 1, one
        asking past the newest and one with an earlier process's epoch, all at once.
        Each loop's reader's given + lost = that loop's records; the lost of both =
        the growth of notes_journal_dropped_total, exactly (a race once counted a
        record both given and dropped)."""
        readers = [Reader(self.server, 0, limit=50), Reader(self.server, 1, limit=20)]
        before = self.server.settled_metrics()
        stop = threading.Event()
        refusals = []

        def page_until_stopped(reader, pause):
            while not stop.is_set():
                reader.page()
                time.sleep(pause)

        def disturb():
            stale = f"{int(readers[0].epoch, 16) ^ 1:016x}"
            while not stop.is_set():
                refusals.append(journal(self.server, since=U64_MAX)[0])
                refusals.append(journal(self.server, loop=1, since=10**12)[0])
                refusals.append(journal(self.server, since=0, epoch=stale)[0])

        threads = [threading.Thread(target=page_until_stopped, args=(readers[0], 0.0)),
                   threading.Thread(target=page_until_stopped, args=(readers[1], 0.02)),
                   threading.Thread(target=disturb)]
        for t in threads:
            t.start()
        try:
            load = subprocess.run(["h2load", "--h1", "-n", "20000", "-c", "8", "-m", "4",
                                   f"http://127.0.0.1:{self.server.port}/json"],
                                  capture_output=True, text=True, timeout=300)
            self.assertIn("20000 succeeded", load.stdout, load.stdout + load.stderr)
        finally:
            stop.set()
            for t in threads:
                t.join()
        after = self.server.settled_metrics()
        for reader in readers:  # what is left in the rings
            while reader.page():
                pass
        grew = metric(after, "http_requests_total") - metric(before, "http_requests_total")
        dropped = (metric(after, "notes_journal_dropped_total") -
                   metric(before, "notes_journal_dropped_total"))
        print(f"\n  {grew:.0f} requests; loop 0 given {readers[0].given} lost {readers[0].lost}; "
              f"loop 1 given {readers[1].given} lost {readers[1].lost}; dropped {dropped:.0f}; "
              f"{len(refusals)} reads refused")
        self.assertEqual(grew, 20000)
        self.assertEqual(sum(r.given + r.lost for r in readers), grew)
        self.assertEqual(sum(r.lost for r in readers), dropped)
        self.assertGreater(readers[1].lost, 0, "the slow reader should have fallen behind")
        self.assertTrue(refusals and set(refusals) == {409}, set(refusals))

    def test_csv_pages_are_the_ndjson_pages(self):
        """format=csv: the header's columns, the same records, request ids without the
        spaces around them and quoted as RFC 4180 says."""
        for rid in (" a b ", 'q"uote,comma'):
            request(self.server.port, "GET", "/json", headers={"X-Request-Id": rid})
        self.server.settled_metrics()
        ids = []
        for loop in (0, 1):
            newest = int(journal(self.server, loop=loop, since=0, limit=1)[1]["journal-newest"])
            since = max(0, newest - 10)
            _, jh, jbody = journal(self.server, loop=loop, since=since, limit=10)
            status, ch, cbody = journal(self.server, loop=loop, since=since, limit=10,
                                        format="csv")
            self.assertEqual(status, 200)
            self.assertEqual(ch["content-type"], "text/csv; charset=utf-8")
            self.assertEqual((ch["journal-next"], ch["journal-epoch"]),
                             (jh["journal-next"], jh["journal-epoch"]))
            rows = list(csv.DictReader(io.StringIO(cbody.decode())))
            records = [json.loads(line) for line in jbody.decode().splitlines()]
            self.assertEqual(len(rows), len(records))
            for row, rec in zip(rows, records):
                for key in ("seq", "conn", "status", "arrived_us", "started_us", "ended_us",
                            "bytes_out", "route", "method", "kind", "proto"):
                    self.assertEqual(row[key], str(rec[key]), key)
                self.assertEqual(row["tls"], "1" if rec["tls"] else "0")
                self.assertEqual(row["request_id"], rec.get("request_id", ""))
                ids.append(row["request_id"])
        self.assertIn("a b", ids)
        self.assertIn('q"uote,comma', ids)
        status, _, body = journal(self.server, format="xml")
        self.assertEqual((status, json.loads(body)["error"]), (400, "format must be ndjson or csv"))


class RestartTest(unittest.TestCase):
    def test_a_reader_across_a_restart_is_told(self):
        """A reader holding since=100 across a restart once got records 101.. of the new
        process with no word of the 100 it never saw. With its epoch it gets a 409; its
        since alone, past the new process's newest, is a 409 too."""
        url = create_database("metrics_port_restart")
        first = Notesd(url, env={"JOURNAL": "1000"})
        for _ in range(100):
            request(first.port, "GET", "/json")
        first.settled_metrics()
        _, headers, _ = journal(first, since=99, limit=1)
        epoch, since = headers["journal-epoch"], int(headers["journal-next"])
        self.assertEqual(since, 100)
        self.assertEqual(first.stop(), 0)

        second = Notesd(url, env={"JOURNAL": "1000"})
        try:
            for _ in range(50):
                request(second.port, "GET", "/json")
            second.settled_metrics()
            status, _, body = journal(second, since=since, epoch=epoch)
            self.assertEqual(status, 409, body)
            self.assertIn("restarted", json.loads(body)["error"])
            status, headers, body = journal(second, since=since)
            self.assertEqual(status, 409, body)
            self.assertNotEqual(headers.get("journal-epoch"), epoch)
            status, headers, _ = journal(second, since=0)
            self.assertEqual(status, 200)
            self.assertNotEqual(headers["journal-epoch"], epoch)
        finally:
            self.assertEqual(second.stop(), 0)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))


class HostileReadersTest(ServerTestCase):
    """Readers that never read, sockets that never send, HTTP/2 on a port that
    speaks HTTP/1.1."""
    database = "metrics_port_hostile"
    env = {"JOURNAL": "20000", "H2C": "1", "CLIENT_TIMEOUT_MS": "3000"}

    def scrape(self):
        status, _, body = request(self.server.metrics_port, "GET", "/metrics")
        self.assertEqual(status, 200)
        return body.decode()

    def test_idle_sockets_do_not_lock_scrapers_out(self):
        """Twelve sockets that connect and send nothing, and four that send half a
        request, once kept every scraper out (the port has 8 places). The one idle
        the longest is closed for each scraper that waits."""
        before = metric(self.scrape(), "notes_metrics_port_closed_total", 'reason="make_room"')
        with contextlib.ExitStack() as stack:
            for i in range(16):
                s = stack.enter_context(socket.create_connection(
                    ("127.0.0.1", self.server.metrics_port)))
                if i >= 12:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the end
            for _ in range(5):
                self.assertIn("notes_http_connections", self.scrape())
        after = metric(self.scrape(), "notes_metrics_port_closed_total", 'reason="make_room"')
        self.assertGreaterEqual(after - before, 5)

    def test_pages_never_read_hold_a_bounded_memory(self):
        """20 connections asking for 20 journal pages of 5,000 records each and never
        reading (a 4 KiB receive buffer): the port holds at most its 16 MiB budget of
        pages, RSS grows by tens of MiB at most (over HTTP/2 it once grew by 895 MiB),
        a scrape gets through meanwhile, and the readers are closed as too slow."""
        load = subprocess.run(["h2load", "--h1", "-n", "20000", "-c", "4", "-m", "8",
                               f"http://127.0.0.1:{self.server.port}/json"],
                              capture_output=True, text=True, timeout=300)
        self.assertIn("20000 succeeded", load.stdout, load.stdout + load.stderr)
        pid = self.server.proc.pid
        rss_before = rss_kib(pid)
        too_slow = metric(self.scrape(), "notes_metrics_port_closed_total", 'reason="too_slow"')
        ask = b"".join(b"GET /journal?since=%d&limit=5000 HTTP/1.1\r\nHost: x\r\n\r\n" % (k * 1000)
                       for k in range(20))
        held_most = 0
        with contextlib.ExitStack() as stack:
            for _ in range(20):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                stack.enter_context(s)
                s.connect(("127.0.0.1", self.server.metrics_port))
                s.sendall(ask)
                held_most = max(held_most, metric(self.scrape(), "notes_metrics_port_held_bytes"))
            rss_during = rss_kib(pid)
            poll(lambda: metric(self.scrape(), "notes_metrics_port_closed_total",
                                'reason="too_slow"') > too_slow, timeout=60,
                 what="a reader that never reads closed as too slow")
        print(f"\n  RSS {rss_before // 1024} -> {rss_during // 1024} MiB; "
              f"held at most {held_most / 2**20:.1f} MiB")
        self.assertGreater(held_most, 0)
        self.assertLessEqual(held_most, 16 * 2**20)
        if not SANITIZED:  # AddressSanitizer's own memory would be measured too
            self.assertLess(rss_during - rss_before, 48 * 1024)
        poll(lambda: metric(self.scrape(), "notes_metrics_port_held_bytes") == 0, timeout=60,
             what="every page let go")

    def test_the_metrics_port_speaks_http1_only(self):
        """H2C is the API port's: a prior-knowledge HTTP/2 preface and an Upgrade: h2c
        get no HTTP/2 on the metrics port, while the API port takes both."""
        for port, wants in ((self.server.port, True), (self.server.metrics_port, False)):
            out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_version}",
                                  "--http2-prior-knowledge", f"http://127.0.0.1:{port}/healthz"],
                                 capture_output=True, text=True, timeout=30).stdout
            self.assertEqual(out == "2", wants, (port, out))
            out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_version}",
                                  "--http2", f"http://127.0.0.1:{port}/healthz"],
                                 capture_output=True, text=True, timeout=30).stdout
            self.assertEqual(out == "2", wants, (port, out))


NS = f"njr{os.getpid() % 100000}"
HOST_ADDR, NS_ADDR = "198.19.77.1", "198.19.77.2"


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("ip"),
                     "a client on another host needs a network namespace (root, iproute2)")
class WhoReadsTest(unittest.TestCase):
    """A client in a network namespace of its own, over a veth pair: not loopback."""

    @classmethod
    def setUpClass(cls):
        run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
        try:
            run("ip", "netns", "add", NS)
        except subprocess.CalledProcessError as e:
            raise unittest.SkipTest(f"ip netns add: {e.stderr.decode().strip()}")
        cls.addClassCleanup(subprocess.run, ["ip", "netns", "del", NS], capture_output=True)
        run("ip", "link", "add", f"{NS}h", "type", "veth", "peer", "name", f"{NS}n")
        cls.addClassCleanup(subprocess.run, ["ip", "link", "del", f"{NS}h"], capture_output=True)
        run("ip", "link", "set", f"{NS}n", "netns", NS)
        run("ip", "addr", "add", f"{HOST_ADDR}/30", "dev", f"{NS}h")
        run("ip", "link", "set", f"{NS}h", "up")
        run("ip", "-n", NS, "addr", "add", f"{NS_ADDR}/30", "dev", f"{NS}n")
        run("ip", "-n", NS, "link", "set", f"{NS}n", "up")
        db_url = create_database("metrics_port_who")
        # every address: the namespace's client comes over the veth, this one over loopback
        cls.open = Notesd(db_url, env={"JOURNAL": "100", "METRICS_HOST": "0.0.0.0"})
        cls.addClassCleanup(cls.open.stop)
        cls.token = Notesd(db_url, env={"JOURNAL": "100", "METRICS_HOST": "0.0.0.0",
                                        "JOURNAL_TOKEN": "s3cret-token"})
        cls.addClassCleanup(cls.token.stop)

    def from_namespace(self, server, path, *headers):
        """(status, body) of a GET from the namespace to the metrics port."""
        args = ["ip", "netns", "exec", NS, "curl", "-s", "-m", "20", "-w", "\n%{http_code}"]
        for h in headers:
            args += ["-H", h]
        out = subprocess.run(args + [f"http://{HOST_ADDR}:{server.metrics_port}{path}"],
                             capture_output=True, text=True, timeout=60).stdout
        body, _, status = out.rpartition("\n")
        return int(status), body

    def test_the_journal_is_read_from_loopback_or_with_the_token(self):
        status, body = self.from_namespace(self.open, "/journal")
        self.assertEqual(status, 403, body)
        self.assertIn("from this machine only", json.loads(body)["error"])
        self.assertEqual(self.from_namespace(self.open, "/metrics")[0], 200)
        self.assertEqual(self.from_namespace(self.open, "/journal",
                                             "Authorization: Bearer anything")[0], 403)
        status, body = self.from_namespace(self.token, "/journal")
        self.assertEqual(status, 403, body)
        self.assertEqual(self.from_namespace(self.token, "/journal",
                                             "Authorization: Bearer s3cret-token2")[0], 403)
        self.assertEqual(self.from_namespace(self.token, "/journal",
                                             "Authorization: Bearer s3cret-toke")[0], 403)
        status, body = self.from_namespace(self.token, "/journal",
                                           "Authorization: Bearer s3cret-token")
        self.assertEqual(status, 200, body)
        # a client on loopback needs no token
        self.assertEqual(journal(self.open, since=0)[0], 200)
        self.assertEqual(journal(self.token, since=0)[0], 200)


if __name__ == "__main__":
    main()
