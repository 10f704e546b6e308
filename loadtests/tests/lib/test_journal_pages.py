"""loadlib.journal_pages on pages written as notesd writes them (docs/journal.md): a CSV
page (its header naming the columns, request ids quoted with `"` doubled, a comma inside
one), an NDJSON page with its lost line, the Journal-Lost-* headers; the columns kept
and coded, records of WebSocket messages counted apart, a run sorted by arrival; and a
real notesd's journal read by both Source.records() and Collector, which must agree.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_journal_pages
"""
import json
import os
import unittest

from loadlib import httpc, journal_pages as jp
from loadlib.paths import REPO
from loadlib.server import Target

NOTESD = os.environ.get("NOTESD_BIN") or os.path.join(REPO, "build", "notesd")
HEADER = ("seq,loop,kind,conn,proto,tls,stream,method,route,status,conn_at_us,arrived_us,"
          "started_us,ended_us,wait_us,query_us,answer_us,bytes_in,bytes_out,trace_id,request_id\n")


def csv_line(seq, started, conn=1, kind="http", route="/json", status=200, rid=""):
    return (f"{seq},0,{kind},{conn},h1,0,0,GET,{route},{status},{started - 10},{started},"
            f"{started},{started + 50},0,0,40,0,253,,{rid}\n")


class Response:
    """The shape of httpc's answer, for Source.parse()."""

    def __init__(self, body, headers):
        self.body, self.headers, self.status = body, headers, 200


class Pages(unittest.TestCase):
    def test_a_csv_page_with_quoted_request_ids(self):
        body = HEADER + csv_line(1, 1000, rid='"a,b"') + csv_line(2, 900, rid='"say ""hi"""') \
            + csv_line(3, 1100, route="/notes/:id", status=404)
        cols = jp.parse_csv(body.encode(), want_ids=True)
        self.assertEqual(list(cols["started_us"]), [1000, 900, 1100])
        self.assertEqual(list(cols["request_id"]), ["a,b", 'say "hi"', ""])
        self.assertEqual([r.decode() for r in cols["route"]], ["/json", "/json", "/notes/:id"])
        self.assertEqual(list(cols["status"]), [200, 200, 404])

    def test_an_empty_csv_page_and_a_page_without_a_column(self):
        self.assertEqual(len(jp.parse_csv(HEADER.encode())["started_us"]), 0)
        with self.assertRaises(ValueError):
            jp.parse_csv(b"seq,loop\n1,0\n")

    def test_ndjson_counts_its_lost_line(self):
        rec = {"seq": 9, "loop": 0, "kind": "http", "conn": 1, "proto": "h1", "tls": False,
               "method": "GET", "route": "/json", "status": 200, "conn_at_us": 1,
               "started_us": 5, "ended_us": 6, "answer_us": 1}
        body = json.dumps({"lost": 4, "from": 5, "to": 8, "loop": 0}) + "\n" + json.dumps(rec)
        records, lost = jp.parse_ndjson(body.encode())
        self.assertEqual((len(records), lost), (1, 4))
        page = jp.Source.parse(Response(body.encode(), {"content-type": "application/x-ndjson",
                                                        "journal-next": "9"}), 0)
        self.assertEqual((page.count, page.lost, page.next), (1, 4, 9))

    def test_lost_records_in_the_headers(self):
        page = jp.Source.parse(Response((HEADER + csv_line(20, 5)).encode(), {
            "content-type": "text/csv; charset=utf-8", "journal-lost-from": "10",
            "journal-lost-to": "19", "journal-next": "20", "journal-epoch": "00ff"}), 0)
        self.assertEqual((page.count, page.lost, page.epoch), (1, 10, "00ff"))


class Collecting(unittest.TestCase):
    def page(self, lines, next_seq):
        return jp.Source.parse(Response((HEADER + "".join(lines)).encode(), {
            "content-type": "text/csv", "journal-next": str(next_seq)}), 0)

    def test_a_run_kept_as_coded_columns_in_order_of_arrival(self):
        c = jp.Collector({0: 0})
        c.add(self.page([csv_line(1, 300, conn=2), csv_line(2, 100, kind="ws_in"),
                         csv_line(3, 200, route="/status")], 3))
        c.add(self.page([csv_line(4, 150, conn=3)], 4))
        cols = c.columns()
        self.assertEqual(list(cols["started_us"]), [150, 200, 300])
        self.assertEqual(list(cols["conn"]), [3, 1, 2])
        self.assertEqual([cols["vocab"]["route"][r] for r in cols["route"]],
                         ["/json", "/status", "/json"])
        self.assertEqual(c.other, {"ws_in": 1})
        # columns() again, after one more page: everything once, still in order
        c.add(self.page([csv_line(5, 50)], 5))
        self.assertEqual(list(c.columns()["started_us"]), [50, 150, 200, 300])


class LiveJournal(unittest.TestCase):
    def test_both_readers_agree_with_the_server(self):
        if not os.access(NOTESD, os.X_OK):
            self.skipTest(f"{NOTESD} is not built")
        target = Target(NOTESD, pin=False, journal=20000)
        try:
            for i in range(6000):               # more than a page of either format
                target.get("/status" if i % 1000 == 0 else "/json")
            source = jp.Source(target.metrics_port)
            marks = source.newest()
            c = jp.Collector({0: 0})
            c.drain(source)
            cols = c.columns()
            records, next_seq = [], 0
            while True:
                page = source.records(0, next_seq)
                records += page.records
                if page.next == next_seq:
                    break
                next_seq = page.next
            self.assertEqual(len(cols["started_us"]), len(records))
            self.assertEqual(sorted(cols["started_us"]), sorted(r["started_us"] for r in records))
            self.assertEqual(c.since[0], marks[0])
            self.assertTrue(source.csv, "notesd answered format=csv")
            self.assertIsNotNone(source.epoch)
            # an epoch not the server's: a restart, and the reader says so
            other = jp.Source(target.metrics_port)
            other.epoch = "0" * 16 if source.epoch != "0" * 16 else "1" * 16
            with self.assertRaises(jp.Restarted):
                other.columns(0, 0)
            # a position past the newest record is another process's too
            with self.assertRaises(jp.Restarted):
                jp.Source(target.metrics_port).columns(0, marks[0] + 10)
            self.assertEqual(httpc.request(target.metrics_port, "/journal?limit=1").status, 200)
        finally:
            target.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
