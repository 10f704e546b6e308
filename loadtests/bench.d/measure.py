"""What loadtests/bench measures with: /proc readings, pinned child
processes with their resource usage, wrk and pgbench runs, startup timing and
the metrics scrape. Standard library only (Debian's python3)."""

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------- /proc

def proc_stat(pid):
    """Fields of /proc/PID/stat that matter here, times in seconds; None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm may hold spaces and parentheses: the fields start after the last ')'
    rest = raw[raw.rindex(")") + 2:].split()
    # rest[0] is field 3 (state), so field N is rest[N - 3]
    return {
        "state": rest[0],
        "ppid": int(rest[1]),
        "utime": int(rest[11]) / CLK_TCK,
        "stime": int(rest[12]) / CLK_TCK,
        "cutime": int(rest[13]) / CLK_TCK,
        "cstime": int(rest[14]) / CLK_TCK,
    }


def cpu_seconds(pid):
    """utime + stime of a process (all its threads, live and exited); None if gone."""
    s = proc_stat(pid)
    return None if s is None else s["utime"] + s["stime"]


def children_map():
    """ppid -> [pid] over every process now."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        s = proc_stat(int(name))
        if s is not None:
            out.setdefault(s["ppid"], []).append(int(name))
    return out


def descendants(pid, cmap=None):
    cmap = children_map() if cmap is None else cmap
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in cmap.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def tree_cpu_seconds(pid):
    """CPU time of a process tree: the root's own and reaped children's time
    (cutime, cstime) plus every live descendant's own time. For the
    postmaster this counts backends that exited during a run too, because
    the postmaster reaps them. None if the root is gone."""
    root = proc_stat(pid)
    if root is None:
        return None
    total = root["utime"] + root["stime"] + root["cutime"] + root["cstime"]
    for c in descendants(pid):
        s = proc_stat(c)
        if s is not None:
            total += s["utime"] + s["stime"]
    return total


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def cpu_times():
    """cpu index -> {busy, idle, steal} in seconds, from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+)\s+(.*)", line)
            if not m:
                continue
            v = [int(x) / CLK_TCK for x in m.group(2).split()]
            user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
            out[int(m.group(1))] = {
                "busy": user + nice + system + irq + softirq,
                "idle": idle + iowait,
                "steal": steal,
            }
    return out


def cpu_busy_delta(before, after, elapsed):
    """Share of each CPU that was busy (0..1) between two cpu_times(), and steal."""
    out = {}
    for cpu, a in after.items():
        b = before.get(cpu)
        if b is None:
            continue
        out[str(cpu)] = {
            "busy": round((a["busy"] - b["busy"]) / elapsed, 4) if elapsed > 0 else None,
            "steal": round((a["steal"] - b["steal"]) / elapsed, 4) if elapsed > 0 else None,
        }
    return out


def set_tree_affinity(pid, cpus):
    """Pins a process, all its threads and all its descendants' threads
    (what `taskset -apc` does for one process). Returns {pid: old cpus}."""
    old = {}
    for p in [pid] + descendants(pid):
        try:
            old[p] = sorted(os.sched_getaffinity(p))
            for tid in os.listdir(f"/proc/{p}/task"):
                try:
                    os.sched_setaffinity(int(tid), cpus)
                except (ProcessLookupError, PermissionError):
                    pass
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            pass
    return old


class RssSampler(threading.Thread):
    """Samples a process's resident set every `period` seconds; keeps the peak."""

    def __init__(self, pid, period=0.1):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.peak, self.samples, self.last = None, 0, None
        self._halt = threading.Event()

    def sample(self):
        r = rss_bytes(self.pid)
        if r is not None:
            self.samples += 1
            self.last = r
            self.peak = r if self.peak is None else max(self.peak, r)

    def run(self):
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.period)

    def finish(self):
        self._halt.set()
        self.join()
        self.sample()
        return self.peak


# ---------------------------------------------------------------- child processes

def settle(pid, stable_s=0.1, limit_s=3.0):
    """Waits until a process's set of children has not changed for `stable_s`
    and none of them is a zombie: for the postmaster, until the backends of a
    client that just left have exited and been reaped, so that their CPU time
    is in the postmaster's cutime and not lost in between."""
    deadline = time.monotonic() + limit_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        kids = {}
        for c in children_map().get(pid, []):
            s = proc_stat(c)
            if s is not None:
                kids[c] = s["state"]
        now = time.monotonic()
        key = frozenset(kids)
        if key != last or "Z" in kids.values():
            last, since = key, now
        elif now - since >= stable_s:
            return True
        time.sleep(0.01)
    return False


class Spawned:
    """A server process started with posix_spawn, pinned to `cpus` as
    `taskset -c` would pin it. posix_spawn (vfork) costs well under a
    millisecond where fork + exec from Python costs several, which matters for
    startup times measured from the spawn. Output goes to `log_path`."""

    def __init__(self, argv, env, cwd, log_path, cpus):
        exe = argv[0] if "/" in argv[0] else shutil.which(argv[0])
        if exe is None:
            raise OSError(f"{argv[0]}: not found")
        out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, out, 1),
                   (os.POSIX_SPAWN_DUP2, out, 2)]
        here, mine = os.getcwd(), os.sched_getaffinity(0)
        try:
            # the child inherits the working directory and the CPU mask
            os.chdir(cwd)
            os.sched_setaffinity(0, cpus)
            self.pid = os.posix_spawn(exe, argv, env, file_actions=actions)
        finally:
            os.sched_setaffinity(0, mine)
            os.chdir(here)
            os.close(out)
            os.close(null)
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, sig):
        if self.poll() is None:
            os.kill(self.pid, sig)

    def wait(self, timeout):
        """True when the process ended within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def stop(self, grace_s=10.0):
        """SIGTERM, then SIGKILL after `grace_s`; reaps the process."""
        if self.poll() is not None:
            return
        self.send_signal(signal.SIGTERM)
        if not self.wait(grace_s):
            self.send_signal(signal.SIGKILL)
            self.wait(5.0)


# commands of run_measured that are still running, for a cleanup on interruption
LIVE = set()


def stop_live():
    """Ends the commands run_measured started and has not reaped (interrupted run)."""
    for p in list(LIVE):
        try:
            p.terminate()
            p.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            p.kill()
        LIVE.discard(p)


def run_measured(cmd, env=None, cwd=None, timeout=None, log_path=None):
    """Runs a command to completion; returns exit code, its resource usage
    (CPU seconds, peak RSS) from wait4, wall time and stdout text. A command
    that outlives `timeout` seconds is killed (SIGTERM, then SIGKILL)."""
    out = open(log_path, "w+b") if log_path else subprocess.PIPE
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    LIVE.add(p)
    timer = None
    killed = []
    if timeout:
        def expire():
            killed.append(True)
            try:
                p.send_signal(signal.SIGTERM)
                time.sleep(2)
                p.kill()
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, expire)
        timer.daemon = True
        timer.start()
    text = b""
    if out is subprocess.PIPE:
        text = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    LIVE.discard(p)
    elapsed = time.monotonic() - t0
    if timer:
        timer.cancel()
    if out is not subprocess.PIPE:
        out.seek(0)
        text = out.read()
        out.close()
    else:
        p.stdout.close()
    return {
        "rc": p.returncode,
        "timed_out": bool(killed),
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "maxrss_bytes": ru.ru_maxrss * 1024,
        "elapsed_s": elapsed,
        "output": text.decode("utf-8", "replace"),
    }


def parse_wrk(output):
    """The WRK_JSON {...} summary line of loadtests/wrk/notes.lua, or None."""
    for line in output.splitlines():
        if line.startswith("WRK_JSON "):
            try:
                return json.loads(line[len("WRK_JSON "):])
            except ValueError:
                return None
    return None


def parse_pgbench(output):
    """tps, transactions and failures from pgbench's summary."""
    def grab(pattern, cast=float):
        m = re.search(pattern, output, re.M)
        return cast(m.group(1)) if m else None
    return {
        "tps": grab(r"^tps = ([\d.]+) \(without initial connection time\)"),
        "transactions": grab(r"^number of transactions actually processed: (\d+)", int),
        "failed": grab(r"^number of failed transactions: (\d+)", int),
        "latency_avg_ms": grab(r"^latency average = ([\d.]+) ms"),
        "initial_connection_ms": grab(r"^initial connection time = ([\d.]+) ms"),
    }


def percentile(sorted_values, q):
    """Nearest-rank percentile (q in 0..100) of an ascending list."""
    if not sorted_values:
        return None
    k = math.ceil(len(sorted_values) * q / 100.0) - 1
    return sorted_values[max(0, min(len(sorted_values) - 1, k))]


def pgbench_log_latencies(paths):
    """Per-transaction latencies (ms, ascending) from pgbench --log files:
    `client_id transaction_no time_us script_no epoch_s epoch_us`."""
    lat = []
    for path in paths:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2].isdigit():
                    lat.append(int(parts[2]) / 1000.0)
    lat.sort()
    return lat


# ---------------------------------------------------------------- HTTP probes

def http_get(port, path, timeout=2.0, method="GET", body=None, headers=None):
    """One HTTP/1.1 request on a fresh connection: (status, headers, body).
    Raises OSError when nothing listens or the connection fails."""
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    for k, v in (headers or {}).items():
        head.append(f"{k}: {v}")
    if body is not None:
        head.append(f"Content-Length: {len(body)}")
    data = ("\r\n".join(head) + "\r\n\r\n").encode() + (body or b"")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            c = s.recv(65536)
            if not c:
                break
            chunks.append(c)
    raw = b"".join(chunks)
    header_end = raw.find(b"\r\n\r\n")
    if header_end < 0:
        raise OSError("incomplete response")
    lines = raw[:header_end].decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    payload = raw[header_end + 4:]
    if "content-length" in hdrs:
        payload = payload[:int(hdrs["content-length"])]
    return status, hdrs, payload


def wait_first_200(proc, port, path, t0, limit_s=30.0, poll_s=0.001):
    """Polls GET path every `poll_s` from t0 (taken right before the spawn)
    until it answers 200; returns seconds since t0. Raises RuntimeError when
    the process exits or `limit_s` passes first."""
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with status {proc.returncode} before answering")
        try:
            status, _, _ = http_get(port, path, timeout=1.0)
            if status == 200:
                return time.monotonic() - t0
        except OSError:
            pass
        if time.monotonic() - t0 > limit_s:
            raise RuntimeError(f"no 200 from {path} within {limit_s:.0f} s")
        time.sleep(poll_s)


def scrape_metrics(port, timeout=2.0):
    """Prometheus text from /metrics as {name (with labels): value}; None on failure."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
            text = r.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out


def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
