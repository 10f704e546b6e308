#!/usr/bin/env python3
"""One request, one allocation of request state.

notesd's request context is made with h2o_mem_alloc_shared, once per request
(request_begin), and lives in the request's memory pool. An LD_PRELOAD library
(tests/tools/count_shared_allocs.c) counts the calls of h2o_mem_alloc_shared
and of malloc over a server's whole life; two runs that differ only in the
number of requests give the calls per request, with start-up and shutdown
cancelled out."""
import os
import unittest

from notes_testlib import Notesd, create_database, main, request
import http.client

PRELOAD = os.environ.get("NOTESD_COUNT_ALLOCS")


def counts(db_url, path, n, out):
    """(h2o_mem_alloc_shared calls, malloc calls) of a server's life with n requests."""
    server = Notesd(db_url, env={"LD_PRELOAD": PRELOAD, "COUNT_ALLOCS_OUT": out,
                                 "POOL_MAX": "1"})
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    for _ in range(n):
        status, _, _ = request(server.port, "GET", path, conn=conn)
        assert status == 200, status
    conn.close()
    assert server.stop() == 0, server.output
    with open(out) as f:
        shared, mallocs = (int(x) for x in f.read().split())
    return shared, mallocs


@unittest.skipUnless(PRELOAD, "NOTESD_COUNT_ALLOCS (the counting library) is not set")
class OneAllocationPerRequestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("allocs")

    def per_request(self, path):
        out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"notesd-allocs-{os.getpid()}")
        try:
            few = counts(self.db_url, path, 100, out)
            many = counts(self.db_url, path, 1100, out)
        finally:
            if os.path.exists(out):
                os.unlink(out)
        per = [(m - f) / 1000 for f, m in zip(few, many)]
        print(f"{path}: {per[0]:.3f} h2o_mem_alloc_shared and {per[1]:.3f} malloc calls per request")
        return per

    # h2o itself makes an occasional shared allocation (a connection's buffer
    # linked to a request's pool), so the average may exceed 1 by a few per
    # thousand; a second allocation per request would make it 2.
    def test_json_makes_one_shared_allocation_per_request(self):
        self.assertAlmostEqual(self.per_request("/json")[0], 1.0, delta=0.01)

    def test_get_note_makes_one_shared_allocation_per_request(self):
        self.assertAlmostEqual(self.per_request("/notes/1")[0], 1.0, delta=0.01)


if __name__ == "__main__":
    main()
