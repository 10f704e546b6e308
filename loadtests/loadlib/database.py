"""The notes database a command runs against, on this machine: DB_URL, or the
private PostgreSQL of sql/localdb.sh. One class for the harness, bench (and its
--netns cluster, through a subclass) and bench.d/pg_cpu_per_query.py: open it
(the private cluster is started when it is not running), find its postmaster,
pin it, reseed the notes table between runs, read its CPU time, close it.

The postmaster is found one way: the first line of postmaster.pid in the
server's data directory. For the private cluster that is the directory
`sql/localdb.sh status` reports; for DB_URL the one the server reports itself
(`show data_directory`, for a superuser or a member of pg_read_all_settings).
Without it (a remote server, or a role that may not ask) there is no postmaster
and so no PostgreSQL CPU figures, and nothing is pinned.
"""
import time
import urllib.parse

from . import netcheck, pg, procs


class LocalDatabase:
    """url: DB_URL, or None for the private cluster (NOTESD_PGDATA and NOTESD_PGPORT
    from the environment pick which). pin_cpus: pin the cluster's processes there
    while open (restored by close()). stop_when_done: close() stops a private
    cluster that open() started. log: a progress line printer (nothing by default).

    After open(): url, private, remote (DB_URL names another machine), port, host,
    user, dbname, datadir, postmaster (pid or None), pinned (CPUs or None),
    version (`show server_version`, or None)."""

    def __init__(self, url=None, pin_cpus=None, stop_when_done=False, log=None):
        self.private = not url
        self.url = url or None
        self.remote = bool(url) and bool(netcheck.remote_db_hosts(url))
        self.pin_cpus = pin_cpus
        self.stop_when_done = stop_when_done
        self.log = log or (lambda msg: None)
        self.started_here = False
        self.datadir = self.postmaster = self.pinned = self.version = None
        self.old_affinity = {}

    def localdb(self, verb, check=True):
        """`sql/localdb.sh VERB` for this cluster (a subclass runs it elsewhere)."""
        return pg.localdb(verb, check)

    def open(self):
        """Starts the private cluster when it is not running (`sql/localdb.sh start`,
        which also makes sure the notes table is there and seeded), finds the
        postmaster and pins it. DatabaseError when the cluster cannot be used."""
        if self.private:
            if self.localdb("status", check=False).returncode != 0:
                self.log("starting the private PostgreSQL (sql/localdb.sh start)")
                self.started_here = True
            self.localdb("start")
            self.url, self.datadir = pg.parse_status(self.localdb("status", check=False))
        elif not self.remote:
            self.datadir = pg.data_directory(self.url)
        self.attach()
        self.version = pg.server_version(self.url)
        return self

    def attach(self):
        """The postmaster from the data directory's postmaster.pid, pinned to pin_cpus
        with all its processes."""
        self.postmaster = pg.postmaster_pid(self.datadir) if self.datadir else None
        if self.pin_cpus is not None and self.postmaster:
            self.old_affinity = procs.set_tree_affinity(self.postmaster, self.pin_cpus)
            self.pinned = sorted(self.pin_cpus)

    @property
    def port(self):
        return netcheck.db_port(self.url) if self.url else None

    @property
    def host(self):
        hosts = netcheck.db_hosts(self.url) if self.url else []
        return hosts[0] if hosts else None

    @property
    def user(self):
        u = urllib.parse.urlsplit(self.url or "")
        return urllib.parse.unquote(u.username) if u.username else None

    @property
    def dbname(self):
        return urllib.parse.urlsplit(self.url or "").path.lstrip("/") or None

    def reset(self):
        """Puts the seeded notes table back (`localdb.sh reset` for the private cluster:
        a copy of its seeded template; sql/reset.sql otherwise); returns the seconds it took.
        DatabaseError when it fails."""
        t0 = time.monotonic()
        if self.private:
            self.localdb("reset")
        else:
            pg.reset(self.url, private=False)
        return time.monotonic() - t0

    def cpu(self):
        """CPU seconds of the postmaster and all its processes, reaped backends
        included; None without a postmaster."""
        return procs.tree_cpu_seconds(self.postmaster) if self.postmaster else None

    def settle(self):
        """Waits until the cluster's process list is quiet (the backends of a client
        that just left are reaped), so CPU readings are complete."""
        if self.postmaster:
            procs.settle(self.postmaster)

    def close(self):
        """Stops a private cluster open() started when stop_when_done; otherwise gives
        the cluster's processes their CPUs back (backends forked while pinned
        inherited the pin and get them too)."""
        if self.started_here and self.stop_when_done:
            self.log("stopping the private PostgreSQL this run started")
            self.localdb("stop", check=False)
            return
        procs.restore_tree_affinity(self.old_affinity, self.postmaster)
