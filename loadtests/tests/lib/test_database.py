"""loadlib.database.LocalDatabase against a real private PostgreSQL (sql/localdb.sh in a
temporary directory): started when not running and stopped by close() when asked,
its postmaster found from the data directory whether reached as the private cluster
or through its URL, pinned and given its CPUs back, reseeded, its CPU time read.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_database
"""
import os
import shutil
import tempfile
import unittest


from loadlib import pg, procs, server
from loadlib.database import LocalDatabase


def alive(pid):
    """True while the process runs (a zombie nobody has reaped yet does not)."""
    st = procs.proc_stat(pid)
    return st is not None and st["state"] != "Z"


class PrivateCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # below the kernel's ephemeral range (32768-60999), so no client connection of a
        # test running beside this one can hold the port between the check and the start
        ports = [p for p in range(24800, 24900) if server.port_free(p)]
        if not ports:
            raise unittest.SkipTest("no free port in 24800-24899")
        cls.tmp = tempfile.mkdtemp(prefix="loadlib-db-")
        os.chmod(cls.tmp, 0o755)      # as root the cluster runs as postgres, which must reach it
        cls.saved = {k: os.environ.get(k) for k in ("NOTESD_PGDATA", "NOTESD_PGPORT")}
        os.environ["NOTESD_PGDATA"] = os.path.join(cls.tmp, "pgdata")
        os.environ["NOTESD_PGPORT"] = str(ports[-1])
        cls.port = ports[-1]

    @classmethod
    def tearDownClass(cls):
        pg.localdb("stop", check=False)
        for k, v in cls.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_whole_life(self):
        lines = []
        pin = {0} if procs.can_pin((0, 1)) else None
        db = LocalDatabase(pin_cpus=pin, stop_when_done=True, log=lines.append).open()
        try:
            self.assertTrue(db.private and db.started_here and not db.remote)
            self.assertEqual(lines, ["starting the private PostgreSQL (sql/localdb.sh start)"])
            self.assertEqual((db.host, db.port, db.user, db.dbname), ("127.0.0.1", self.port, "postgres", "notes"))
            self.assertEqual(db.datadir, os.environ["NOTESD_PGDATA"])
            with open(f"/proc/{db.postmaster}/cmdline", "rb") as f:
                argv = f.read().decode().split("\0")
            self.assertIn(db.datadir, argv)                       # this cluster's postmaster, no other
            self.assertRegex(db.version or "", r"^\d+")
            if pin is not None:
                self.assertEqual(db.pinned, [0])
                self.assertEqual(os.sched_getaffinity(db.postmaster), pin)

            # the same server through its URL: the postmaster from the data directory it reports
            by_url = LocalDatabase(db.url).open()
            self.assertFalse(by_url.private or by_url.remote or by_url.started_here)
            self.assertEqual((by_url.datadir, by_url.postmaster), (db.datadir, db.postmaster))

            # running already: open() leaves it running, close() gives the CPUs back
            again = LocalDatabase(pin_cpus={1} if pin else None, stop_when_done=True).open()
            self.assertFalse(again.started_here)
            again.close()
            self.assertTrue(alive(db.postmaster))                 # it did not start it: still running
            if pin is not None:
                self.assertEqual(os.sched_getaffinity(db.postmaster), set(again.old_affinity[db.postmaster]))

            pg.psql(db.url, "-c", "insert into notes (title, body, tag, created_at) values ('x', 'y', 'js', now())")
            cpu0 = db.cpu()
            took = db.reset()
            self.assertGreater(took, 0)
            count = pg.psql(db.url, "-tA", "-c", "select count(*), max(id) from notes").stdout.split("|")
            self.assertEqual([int(c) for c in count], [200000, 200000])
            db.settle()
            self.assertGreater(db.cpu(), cpu0)                    # the reseed's work, reaped backends included
        finally:
            db.close()
        self.assertFalse(alive(db.postmaster))                   # it started the cluster: it stopped it
        self.assertNotEqual(pg.localdb("status", check=False).returncode, 0)

    def test_a_remote_url_has_no_postmaster(self):
        db = LocalDatabase("postgresql://notes@db.example.com:5432/notes")
        self.assertTrue(db.remote)
        self.assertFalse(db.private)
        self.assertEqual((db.host, db.port, db.dbname), ("db.example.com", 5432, "notes"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
