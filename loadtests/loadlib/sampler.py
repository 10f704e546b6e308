"""Sampling while a load runs: a server's /metrics page and what /proc says about
it, the load tool, PostgreSQL and the cores (Sampler, once a second, written to
files), and a process's peak RSS, PSS and USS (RssSampler, in memory).

There is exactly one scraper per target. notesd and the peer report the
event-loop lag gauges over the window since the previous scrape, so a second
scraper would cut those windows short; the "before" and "after" pages that
reconcile compares are this scraper's first and last scrapes.
"""
import gzip
import json
import os
import threading
import time

from . import httpc, procs, prom


def in_flight(text):
    """http_requests_in_flight of a /metrics page (0 when absent)."""
    v = prom.value(prom.parse_lenient(text or ""), "http_requests_in_flight")
    return v or 0.0


class Sampler(threading.Thread):
    """Scrapes /metrics and samples /proc every `interval` seconds, aligned to its
    start, until finish() is called; then takes a last scrape once the target
    reports no request in flight (or `drain_timeout` has passed).

    Files written into `directory`:
      metrics.prom.gz  every scrape, each preceded by "# SCRAPE unix=<time> status=<http status>"
      before.prom      the first scrape (taken before the load starts)
      after.prom       the last scrape (taken after the load ended and drained)
      proc.jsonl       one JSON object per sample:
                       {"t", "target": {cpu_s, rss_bytes, threads, pss_bytes, uss_bytes},
                        "tool": {cpu_s, rss_bytes},
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
            status, _, body = httpc.request(self.metrics_port, "/metrics")
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
        return text

    def _write(self, name, body):
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(body)

    def _proc(self, out):
        sample = {"t": round(time.time(), 3)}
        st = procs.proc_stat(self.target_pid)
        if st:
            sample["target"] = {"cpu_s": st["cpu_s"], "rss_bytes": st["rss_bytes"], "threads": st["threads"]}
            mem = procs.memory(self.target_pid)
            if mem:
                sample["target"].update(pss_bytes=mem["pss"], uss_bytes=mem["uss"])
        if self.tool_pid:
            tl = procs.proc_stat(self.tool_pid)
            if tl:
                sample["tool"] = {"cpu_s": tl["cpu_s"], "rss_bytes": tl["rss_bytes"]}
        if self.pg_pid:
            pg = procs.tree_cpu_seconds(self.pg_pid)
            if pg is not None:
                sample["pg_cpu_s"] = pg
        try:
            sample["cores"] = procs.core_times()
        except OSError:
            pass
        out.write(json.dumps(sample) + "\n")

    def run(self):
        start = time.monotonic()
        tick = 0
        with gzip.open(os.path.join(self.dir, "metrics.prom.gz"), "wt", encoding="utf-8") as prom_out, \
                open(os.path.join(self.dir, "proc.jsonl"), "w") as proc_out:
            self._proc(proc_out)
            self._scrape(prom_out)
            self.first_done.set()
            while True:
                tick += 1
                if self._finish.wait(max(0.0, start + tick * self.interval - time.monotonic())):
                    break
                self._proc(proc_out)
                self._scrape(prom_out)
            # the load has ended: one more interval, then scrape until nothing is in flight
            deadline = time.monotonic() + self.drain_timeout
            while True:
                tick += 1
                time.sleep(max(0.0, start + tick * self.interval - time.monotonic()))
                self._proc(proc_out)
                text = self._scrape(prom_out)
                if text is not None and in_flight(text) == 0:
                    break
                if time.monotonic() > deadline:
                    self.errors.append(f"requests still in flight {self.drain_timeout:.0f} s after the load ended")
                    break
            proc_out.flush()
        if self.last_body is not None:
            self._write("after.prom", self.last_body)


class RssSampler(threading.Thread):
    """Samples a process's memory every `period` seconds and keeps the peaks: .peak
    (RSS), .peak_pss and .peak_uss (procs.memory: PSS, and USS, the private memory
    only this process holds)."""

    def __init__(self, pid, period=0.1):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.peak, self.samples, self.last = None, 0, None
        self.peak_pss = self.peak_uss = None
        self._halt = threading.Event()

    def sample(self):
        mem = procs.memory(self.pid)
        r = mem["rss"] if mem else procs.rss_bytes(self.pid)
        if r is not None:
            self.samples += 1
            self.last = r
            self.peak = r if self.peak is None else max(self.peak, r)
        if mem:
            self.peak_pss = max(self.peak_pss or 0, mem["pss"])
            self.peak_uss = max(self.peak_uss or 0, mem["uss"])

    def run(self):
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.period)

    def finish(self):
        self._halt.set()
        self.join()
        self.sample()
        return self.peak
