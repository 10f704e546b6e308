"""Shared pieces of the integration tests: a database per suite, the real
notesd binary on free ports, HTTP helpers, and the reference renderings the
responses are compared against.

The expected bytes are computed here independently of the server: rows are
read with psycopg2, the timestamp comes from PostgreSQL as epoch microseconds
and is truncated to milliseconds as node-postgres does, and the JSON is
Python's json.dumps with JSON.stringify's separators (the two agree on every
escape for UTF-8 text).
"""
import atexit
import datetime
import hashlib
import http.client
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

import psycopg2

REPO = os.environ.get("NOTESD_REPO") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The method of every 405 probe: no row of server/routes.h may name it
# (tests/route_table.py checks), so a probe can never reach a handler and never
# change data, whatever methods the routes gain.
PROBE_METHOD = "NOTESD-PROBE"
BIN = os.environ.get("NOTESD_BIN") or os.path.join(REPO, "build", "notesd")
TAGS = ["js", "ts", "node", "bun", "deno", "postgres", "http", "perf"]
SEED_BODY = "Seeded note body for the JS test. " * 4
SANITIZED = os.environ.get("NOTESD_SANITIZED", "0") not in ("", "0", "OFF", "FALSE")
TSAN = os.environ.get("NOTESD_TSAN", "0") not in ("", "0", "OFF", "FALSE")
# A proxy in front of every notesd this library starts (tests/openapi/prism_suites.py
# puts Prism's validation proxy there): a command to which the upstream's URL and a
# port to listen on are appended; started once and shared by the notesd processes
# that run one after the other (front_proxy.py). Tests then reach the API port
# through it (Notesd.port is the proxy's, Notesd.direct_port notesd's own), and every
# answer's `sl-violations` header is written to NOTESD_FRONT_LOG_DIR, with the
# proxy's log.
FRONT = os.environ.get("NOTESD_FRONT", "").split()
FRONT_LOG_DIR = os.environ.get("NOTESD_FRONT_LOG_DIR", "")
_front_ports = set()  # the ports of the proxies started, whose answers are recorded


def direct_only(reason):
    """Marks a test (or a class) that cannot run through the proxy of NOTESD_FRONT, and
    why; it is skipped there, and runs as usual without one."""
    return unittest.skipIf(FRONT, f"not through a proxy: {reason}")


def pg_state():
    with open(os.environ["NOTESD_PGSTATE"]) as f:
        return json.load(f)


def admin_dsn(dbname="postgres"):
    st = pg_state()
    return f"host={st['host']} port={st['port']} user=postgres dbname={dbname}"


# Every suite runs against the one PostgreSQL of its CTest run, beside the others, so
# its databases carry its name: two suites that both ask for "api" (test_api.py alone
# and through Prism) never drop each other's. NOTESD_SUITE is the CTest test's name
# (tests/CMakeLists.txt sets it for every test); run by hand, the script's own name.
SUITE = re.sub(r"\W", "_", os.environ.get("NOTESD_SUITE")
               or os.path.splitext(os.path.basename(sys.argv[0]))[0] or "notesd")
_databases = {}  # the names create_database was given -> the databases it made


def database_name(name):
    """The database create_database(name) makes: the suite's name, then `name`. Past
    PostgreSQL's 63 bytes the end is a hash, where the server would cut two long names
    to one."""
    full = f"{SUITE}__{name}"
    if len(full.encode()) > 63:
        digest = hashlib.sha1(full.encode()).hexdigest()[:12]
        full = f"{full.encode()[:50].decode(errors='ignore')}_{digest}"
    return full


def create_database(name):
    """Copies notes_template into a fresh database of this suite's, `name`
    (database_name); returns its URI. db_connect(name) connects to it."""
    full = _databases[name] = database_name(name)
    if len(_databases) == 1:
        atexit.register(_drop_databases)
    conn = psycopg2.connect(admin_dsn())
    conn.autocommit = True
    with conn.cursor() as cur:
        # a leftover of this suite's own last run, never another suite's database
        cur.execute(f'drop database if exists "{full}" with (force)')
        # file_copy copies the template's files (200,000 notes, ~70 MB) instead of
        # writing them through the WAL: a third of the time, and no WAL to keep.
        cur.execute(f'create database "{full}" template notes_template strategy file_copy')
    conn.close()
    st = pg_state()
    return f"postgresql://postgres@{st['host']}:{st['port']}/{full}"


def _drop_databases():
    """At exit, the suite's databases go: a whole run makes hundreds, and a cluster
    that keeps them all takes gigabytes and a long time to remove."""
    try:
        conn = psycopg2.connect(admin_dsn())
    except (OSError, KeyError, psycopg2.Error):
        return  # the cluster (or its state file) is gone already
    conn.autocommit = True
    with conn.cursor() as cur:
        for full in set(_databases.values()):
            try:
                cur.execute(f'drop database if exists "{full}" with (force)')
            except psycopg2.Error:
                pass  # still in use by a session the force cannot end: left for pg_stop
    conn.close()


def db_connect(name):
    """A connection as postgres to `name`: a database create_database made under that
    name, or any other by its own name (postgres, or one read from a URI)."""
    conn = psycopg2.connect(admin_dsn(_databases.get(name, name)))
    conn.autocommit = True
    return conn


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_in(lo, hi):
    """A loopback port in lo..hi, searched from the top, that nothing is bound to now."""
    for port in range(hi, lo - 1, -1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in {lo}..{hi}")


def slack(port, samples=5, factor=20):
    """The allowance an upper bound on a time adds for how busy the machine is now,
    measured in the calling test: `factor` times the slowest of `samples` GET /status
    round trips to notesd on `port` (a few ms idle, far more under load). A bound written
    `limit + slack(port)` is as strict as `limit` on an idle machine and widens itself on
    a busy one; a lower bound (no answer before its delay) needs none."""
    worst = 0.0
    for _ in range(samples):
        start = time.monotonic()
        request(port, "GET", "/status")
        worst = max(worst, time.monotonic() - start)
    return factor * worst


def poll(predicate, timeout=15.0, what="condition"):
    """Polls `predicate` until it returns a true value or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


_started = []


@atexit.register
def _kill_leftovers():
    """A test that fails before stopping its server must not leave it running."""
    for proc in _started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# "listening on http://H:P[ (h2c too)][, https://H:T (h2, http/1.1)], metrics on http://H:M/metrics"
LISTENING = re.compile(r"listening on http://\S+:(\d+)(?: \(h2c too\))?"
                       r"(?:, https://\S+:(\d+) \(h2, http/1\.1\))?, metrics on http://\S+:(\d+)/metrics")


class Notesd:
    """The real binary on ports the kernel picks (PORT=0, METRICS_PORT=auto),
    read back from its start-up line, so no other process can take them between
    a probe and the bind; `stop()` returns its exit code."""

    def __init__(self, db_url, args=(), env=None, port=None, wrapper=(), ready_timeout=15.0):
        """`port`: kept for callers that choose the port with args; the start-up line says it too."""
        full_env = {k: v for k, v in os.environ.items()
                    if k not in ("PORT", "HOST", "POOL_MAX", "METRICS_PORT", "PREPARED",
                                 "PIPELINE_DEPTH")}
        full_env.update({"DB_URL": db_url, "PORT": "0", "HOST": "127.0.0.1",
                         "METRICS_PORT": "auto", "METRICS_HOST": "127.0.0.1",
                         "LOG_LEVEL": "warn"})
        # h2o's per-thread recycling caches are freed by the OS at exit, not by
        # the library; LeakSanitizer would report them on every run.
        full_env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
        full_env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        # Under ThreadSanitizer the first race ends the process with status 66,
        # so every test that checks notesd's exit status also checks for races.
        full_env.setdefault("TSAN_OPTIONS", "halt_on_error=1:exitcode=66:second_deadlock_stack=1")
        full_env.update(env or {})
        self.proc = subprocess.Popen([*wrapper, BIN, *args], env=full_env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        _started.append(self.proc)
        self._early = b""  # what notesd printed up to its start-up line
        self._output = []  # that, then each chunk as the drainer reads it
        self.port, self.tls_port, self.metrics_port = self._read_ports(ready_timeout)
        # Read the rest as it comes: a notesd whose output nobody reads blocks in its log
        # writes once the pipe's 64 KiB are full, and a busy machine, which makes a test
        # run longer, then makes a chatty server (LOG_LEVEL=debug) stop answering.
        self._output.append(self._early)
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        if port is not None:
            self.port = port
        poll(self._ready, timeout=ready_timeout, what="notesd to answer /status")
        self.direct_port, self.front = self.port, None
        if FRONT:
            self._start_front()

    def _start_front(self):
        """Points `port` at a proxy of NOTESD_FRONT relaying to this notesd: a free one
        of this process, else a new one (front_proxy.py)."""
        import front_proxy   # beside this file; only with a proxy (k6live.py loads this file by path)
        self.front = front_proxy.take(self, self.direct_port, FRONT, free_port, FRONT_LOG_DIR)
        _front_ports.add(self.front.port)

        def answers():
            if self.front.proc.poll() is not None:
                raise AssertionError(f"the proxy exited with {self.front.proc.returncode}")
            if self.proc.poll() is not None:
                raise AssertionError(f"notesd exited with {self.proc.returncode} behind the proxy: "
                                     f"{self.read_output()}")
            try:
                return request(self.front.port, "GET", "/status")[0] == 200
            except OSError:
                return False
        poll(answers, timeout=60, what="the proxy in front of notesd to answer /status")
        self.port = self.front.port

    def _read_ports(self, timeout):
        """(API port, TLS port or None, metrics port) from the start-up line, read as it is
        printed."""
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            m = LISTENING.search(self._early.decode(errors="replace"))
            if m:
                return (int(m.group(1)), int(m.group(2)) if m.group(2) else None,
                        int(m.group(3)))
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no start-up line from notesd: {self._early.decode()}")
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.proc.wait(5)
                    raise AssertionError(f"notesd exited with {self.proc.returncode}: "
                                         f"{self._early.decode()}")
                self._early += chunk

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"notesd exited with {self.proc.returncode}: {self.read_output()}")
        try:
            return request(self.port, "GET", "/status")[0] == 200
        except OSError:
            return False

    def _drain(self):
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            self._output.append(chunk)  # one writer; readers join a copy of the list

    def output_so_far(self):
        """What notesd has printed until now, while it runs."""
        return b"".join(list(self._output) or [self._early]).decode(errors="replace")

    def read_output(self):
        """Everything notesd printed, once it has exited."""
        if getattr(self, "_drainer", None) is not None:
            self._drainer.join(30)
        return self.output_so_far()

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.front is not None:
            self.front.give_back()
            self.front = None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self.output = self.read_output()
        self.proc.stdout.close()
        return self.proc.returncode

    def metrics(self):
        status, _, body = request(self.metrics_port, "GET", "/metrics")
        assert status == 200, status
        return body.decode()

    def settled_metrics(self, timeout=10.0):
        """/metrics once notesd has disposed of every request it received
        (http_requests_in_flight 0). A request is counted, journaled and given its exemplar
        when its loop disposes of it, just after its last byte is written: with several
        loops, a scrape served by another one can come before that, while the client that
        sent the request already has its answer."""
        def settled():
            text = self.metrics()
            m = re.search(r"^http_requests_in_flight (\d+)$", text, re.M)
            return text if m and m.group(1) == "0" else None
        return poll(settled, timeout, "every request disposed of")


def request(port, method, path, body=None, headers=None, conn=None):
    """One HTTP/1.1 request; returns (status, {lower-case header: value}, body bytes)."""
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            headers = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=body, headers=headers or {})
        res = conn.getresponse()
        data = res.read()
        got = {k.lower(): v for k, v in res.getheaders()}
        if port in _front_ports:
            _record_front(method, path, res.status, got)
        return res.status, got, data
    finally:
        if own:
            conn.close()


def _record_front(method, path, status, headers):
    """Appends one answer that came through the proxy, and the violations its
    `sl-violations` header reports, to this process's record in NOTESD_FRONT_LOG_DIR."""
    violations = json.loads(headers.get("sl-violations", "[]"))
    with open(os.path.join(FRONT_LOG_DIR or tempfile_dir(), f"answers-{os.getpid()}.jsonl"),
              "a") as f:
        f.write(json.dumps({"method": method, "path": path, "status": status,
                            "violations": violations}) + "\n")


def raw_request(port, data, timeout=10):
    """Sends raw bytes; returns everything read until the server closes or a
    full response with Content-Length has arrived."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while True:
            head, sep, rest = buf.partition(b"\r\n\r\n")
            if sep:
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v)
                if len(rest) >= length:
                    return buf
            chunk = s.recv(65536)
            if not chunk:
                return buf
            buf += chunk


def iso_from_epoch_us(us):
    """Date.toISOString() of a timestamp given in microseconds (truncated to ms)."""
    ms = us // 1000
    dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


ROW_SQL = ("select id::text, title, body, tag, "
           "(extract(epoch from created_at) * 1000000)::bigint from notes")


def note_obj(row):
    return {"id": row[0], "title": row[1], "body": row[2], "tag": row[3],
            "created_at": iso_from_epoch_us(row[4])}


def js_json(value):
    """JSON.stringify(value): no spaces, UTF-8 kept, the same escapes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def expected_note(db, note_id):
    with db.cursor() as cur:
        cur.execute(ROW_SQL + " where id = %s", (note_id,))
        row = cur.fetchone()
    return None if row is None else js_json(note_obj(row))


def expected_list(db, tag):
    with db.cursor() as cur:
        cur.execute(ROW_SQL + " where tag = %s order by notes.id desc limit 20", (tag,))
        return js_json([note_obj(r) for r in cur.fetchall()])


def table_state(db):
    """(rows, largest id) of the notes table: equal before and after a request
    that must write nothing; a row inserted, updated in place or deleted shows."""
    with db.cursor() as cur:
        cur.execute("select count(*), coalesce(max(id), 0) from notes")
        return cur.fetchone()


# CTest's SKIP_RETURN_CODE for these suites (tests/CMakeLists.txt): a suite
# that skipped everything it had is reported as skipped, not as passed.
EXIT_SKIPPED = 77


def main():
    """Runs the calling suite; exits 0 when it passed, 1 when it failed, and
    EXIT_SKIPPED when it ran nothing but skips (a suite with some skips and
    some passes has passed; its skips are listed in its output)."""
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped and len(result.skipped) >= result.testsRun:
        print(f"all {len(result.skipped)} test(s) skipped", flush=True)
        sys.exit(EXIT_SKIPPED)
    sys.exit(0)


class PrivatePostgres:
    """A PostgreSQL cluster of one test's own, for tests that stop and start
    the database. Holds the schema and `rows` seeded notes."""

    def __init__(self, rows=1000):
        import pg_fixture
        self.fx = pg_fixture
        self.state_path = os.path.join(tempfile_dir(), f"pg-{os.getpid()}-{id(self)}.json")
        pg_fixture.start(self.state_path, template=False)
        with open(self.state_path) as f:
            self.st = json.load(f)
        self.port = self.st["port"]
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        conn = self.connect()
        with conn.cursor() as cur, open(os.path.join(REPO, "sql", "schema.sql")) as f:
            cur.execute(f.read())
            cur.execute("insert into notes (title, body, tag, created_at) "
                        "select 'n' || i, 'b', 't', now() from generate_series(1, %s) i", (rows,))
        conn.close()

    def connect(self):
        conn = psycopg2.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres")
        conn.autocommit = True
        return conn

    def pg_ctl(self, *args):
        subprocess.run(self.fx.as_owner([f"{self.st['bindir']}/pg_ctl", "-D", self.st["data"],
                                         "-l", os.path.join(self.st["base"], "log"), *args]),
                       check=True, stdout=subprocess.DEVNULL)

    def stop(self, mode="fast"):
        self.pg_ctl("-m", mode, "-w", "stop")

    def start(self):
        self.pg_ctl("-w", "start")

    def destroy(self):
        self.fx.stop(self.state_path)


def tempfile_dir():
    import tempfile
    return tempfile.gettempdir()


def proc_stat(pid):
    """(cpu seconds, rss bytes, open fds) of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return cpu, rss, fds


class ServerTestCase(unittest.TestCase):
    """A suite with a database of its own (a copy of the seeded template) and
    one notesd on it. Subclasses set `database` and may set `env`/`args`."""

    database = None
    env = None
    args = ()

    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database(cls.database)
        cls.db = db_connect(cls.database)
        cls.server = Notesd(cls.db_url, cls.args, env=cls.env)
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.db.close()
        assert code == 0, f"notesd exited with {code}: {cls.server.output}"
