"""Once-a-second sampling during a test: the target's /metrics page and what
/proc says about the target, the load tool, PostgreSQL and the CPU cores.

There is exactly one scraper per target. notesd and the peer report the
event-loop lag gauges over the window since the previous scrape, so a second
scraper would cut those windows short; the "before" and "after" pages that
reconcile compares are this scraper's first and last scrapes.
"""
import gzip
import http.client
import json
import os
import re
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


# --------------------------------------------------------------------- /proc

def proc_stat(pid):
    """{"cpu_s", "child_cpu_s", "rss_bytes", "threads", "ppid"} of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # fields[0] is field 3 (state) of proc(5)
    return {
        "ppid": int(fields[1]),
        "cpu_s": (int(fields[11]) + int(fields[12])) / CLK_TCK,
        "child_cpu_s": (int(fields[13]) + int(fields[14])) / CLK_TCK,
        "threads": int(fields[17]),
        "rss_bytes": int(fields[21]) * PAGE_SIZE,
    }


def children_of(pid):
    """Direct children of a process (scans /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_stat(int(name))
        if st and st["ppid"] == pid:
            out.append(int(name))
    return out


def cluster_cpu(postmaster):
    """CPU seconds of a PostgreSQL cluster: the postmaster, its reaped backends
    (its children's time) and the live ones."""
    st = proc_stat(postmaster)
    if st is None:
        return None
    total = st["cpu_s"] + st["child_cpu_s"]
    for child in children_of(postmaster):
        c = proc_stat(child)
        if c:
            total += c["cpu_s"]
    return total


def find_postmaster(port):
    """pid of the postgres server started with `-p PORT` (None if there is none on this machine)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if not argv or not os.path.basename(argv[0].decode(errors="replace")) in ("postgres", "postmaster"):
            continue
        args = [a.decode(errors="replace") for a in argv]
        for i, a in enumerate(args):
            if (a == "-p" and i + 1 < len(args) and args[i + 1] == str(port)) or a == f"-p{port}":
                st = proc_stat(int(name))
                if st is not None:
                    return int(name)
    return None


def core_times():
    """Per core, jiffies from /proc/stat: [processes (user + nice + system), interrupts
    (irq + softirq), steal, total]. Guest time is already inside user."""
    out = []
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+)\s+(.*)", line)
            if not m:
                continue
            v = [int(x) for x in m.group(2).split()] + [0] * 8
            out.append([v[0] + v[1] + v[2], v[5] + v[6], v[7], sum(v[:8])])
    return out


# --------------------------------------------------------------------- HTTP

def http_get(port, path, timeout=2.0):
    """(status, body bytes) of GET http://127.0.0.1:PORT/PATH."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        return res.status, res.read()
    finally:
        conn.close()


IN_FLIGHT = re.compile(rb"^http_requests_in_flight(?:\{\})?\s+(\S+)", re.M)


def in_flight(body):
    m = IN_FLIGHT.search(body or b"")
    return float(m.group(1)) if m else 0.0


# --------------------------------------------------------------------- the sampler

class Sampler(threading.Thread):
    """Scrapes /metrics and samples /proc every `interval` seconds, aligned to its
    start, until finish() is called; then takes a last scrape once the target
    reports no request in flight (or `drain_timeout` has passed).

    Files written into `directory`:
      metrics.prom.gz  every scrape, each preceded by "# SCRAPE unix=<time> status=<http status>"
      before.prom      the first scrape (taken before the load starts)
      after.prom       the last scrape (taken after the load ended and drained)
      proc.jsonl       one JSON object per sample:
                       {"t", "target": {cpu_s, rss_bytes, threads}, "tool": {cpu_s, rss_bytes},
                        "pg_cpu_s", "cores": [[processes, interrupts, steal, total] jiffies per core]}
    """

    def __init__(self, directory, metrics_port, target_pid, pg_pid=None, interval=1.0, drain_timeout=10.0):
        super().__init__(daemon=True)
        self.dir = directory
        self.metrics_port = metrics_port
        self.target_pid = target_pid
        self.pg_pid = pg_pid
        self.tool_pid = None
        self.interval = interval
        self.drain_timeout = drain_timeout
        self.first_done = threading.Event()
        self._finish = threading.Event()
        self.errors = []
        self.scrapes = 0
        self.last_body = None
        self.first_body = None

    def finish(self):
        self._finish.set()

    def _scrape(self, out):
        t = time.time()
        try:
            status, body = http_get(self.metrics_port, "/metrics")
        except OSError as e:
            self.errors.append(f"{t:.3f} scrape failed: {e}")
            out.write(f"# SCRAPE unix={t:.3f} status=error\n")
            return None
        out.write(f"# SCRAPE unix={t:.3f} status={status}\n")
        if status != 200:
            self.errors.append(f"{t:.3f} scrape answered {status}")
            return None
        text = body.decode("utf-8", errors="replace")
        out.write(text if text.endswith("\n") else text + "\n")
        self.scrapes += 1
        if self.first_body is None:
            self.first_body = body
            self._write("before.prom", body)
        self.last_body = body
        return body

    def _write(self, name, body):
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(body)

    def _proc(self, out):
        sample = {"t": round(time.time(), 3)}
        st = proc_stat(self.target_pid)
        if st:
            sample["target"] = {"cpu_s": st["cpu_s"], "rss_bytes": st["rss_bytes"], "threads": st["threads"]}
        if self.tool_pid:
            tl = proc_stat(self.tool_pid)
            if tl:
                sample["tool"] = {"cpu_s": tl["cpu_s"], "rss_bytes": tl["rss_bytes"]}
        if self.pg_pid:
            pg = cluster_cpu(self.pg_pid)
            if pg is not None:
                sample["pg_cpu_s"] = pg
        try:
            sample["cores"] = core_times()
        except OSError:
            pass
        out.write(json.dumps(sample) + "\n")

    def run(self):
        start = time.monotonic()
        tick = 0
        with gzip.open(os.path.join(self.dir, "metrics.prom.gz"), "wt", encoding="utf-8") as prom, \
                open(os.path.join(self.dir, "proc.jsonl"), "w") as proc:
            self._proc(proc)
            self._scrape(prom)
            self.first_done.set()
            while True:
                tick += 1
                if self._finish.wait(max(0.0, start + tick * self.interval - time.monotonic())):
                    break
                self._proc(proc)
                self._scrape(prom)
            # the load has ended: one more interval, then scrape until nothing is in flight
            deadline = time.monotonic() + self.drain_timeout
            while True:
                tick += 1
                time.sleep(max(0.0, start + tick * self.interval - time.monotonic()))
                self._proc(proc)
                body = self._scrape(prom)
                if body is not None and in_flight(body) == 0:
                    break
                if time.monotonic() > deadline:
                    self.errors.append(f"requests still in flight {self.drain_timeout:.0f} s after the load ended")
                    break
            proc.flush()
        if self.last_body is not None:
            self._write("after.prom", self.last_body)
