"""What /proc says about processes and CPUs, and where they may run: per-process
CPU time, RSS and private memory (USS, PSS), process trees (a PostgreSQL cluster is
one), per-core busy time, CPU pinning.

Owns reading and pinning only; starting and stopping servers is server.py,
sampling over time is sampler.py.
"""
import os
import re
import shutil
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


# --------------------------------------------------------------------- one process

def proc_stat(pid):
    """{"state", "ppid", "cpu_s", "sys_s", "child_cpu_s", "threads", "rss_bytes"} of a
    process (times in seconds, all threads, live and exited; sys_s: the kernel's part of
    cpu_s), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
        # comm may hold spaces and parentheses: the fields start after the last ')'
        fields = raw[raw.rindex(")") + 2:].split()
    except (OSError, ValueError):
        return None
    # fields[0] is field 3 (state) of proc(5), so field N is fields[N - 3]
    return {
        "state": fields[0],
        "ppid": int(fields[1]),
        "cpu_s": (int(fields[11]) + int(fields[12])) / CLK_TCK,
        "sys_s": int(fields[12]) / CLK_TCK,
        "child_cpu_s": (int(fields[13]) + int(fields[14])) / CLK_TCK,
        "threads": int(fields[17]),
        "rss_bytes": int(fields[21]) * PAGE_SIZE,
    }


def cpu_seconds(pid):
    """utime + stime of a process; None if gone."""
    s = proc_stat(pid)
    return None if s is None else s["cpu_s"]


def rss_bytes(pid):
    """Resident set of a process from /proc/PID/statm; None if gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return None


def memory(pid):
    """A process's memory from /proc/PID/smaps_rollup, in bytes: {"rss", "pss", "uss",
    "anon"}, or None when it is gone or may not be read. RSS counts every page the
    process has resident, the shared libraries' pages that every other process maps
    too included; PSS shares each page out among the processes that map it; USS
    (Private_Clean + Private_Dirty) is what only this process holds, what would be
    freed if it exited. anon is its anonymous memory (heap, stacks)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            text = f.read()
    except OSError:
        return None
    kb = {}
    for line in text.splitlines():
        m = re.match(r"(\w+):\s+(\d+) kB", line)
        if m:
            kb[m.group(1)] = int(m.group(2))
    if "Rss" not in kb:
        return None
    return {"rss": kb["Rss"] * 1024, "pss": kb.get("Pss", 0) * 1024,
            "uss": (kb.get("Private_Clean", 0) + kb.get("Private_Dirty", 0)) * 1024,
            "anon": kb.get("Anonymous", 0) * 1024}


# --------------------------------------------------------------------- trees

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


def children(pid):
    """A process's live children, from /proc/PID/task/*/children (a few small reads;
    kernels built with CONFIG_PROC_CHILDREN), or from a scan of every process where
    that file is missing. [] when the process is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue                      # the thread ended meanwhile
            return children_map().get(pid, [])
        except OSError:
            continue
    return out


def descendants(pid, cmap=None):
    """Every live descendant of a process (from `cmap`, a children_map(), when given)."""
    kids = children if cmap is None else (lambda p: cmap.get(p, []))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in kids(p):
            out.append(c)
            todo.append(c)
    return out


def tree_cpu_seconds(pid):
    """CPU time of a process tree: the root's own and its reaped children's time plus
    every live descendant's own time. For a postmaster this counts backends that
    exited during a run too, because the postmaster reaps them. None if the root is gone."""
    root = proc_stat(pid)
    if root is None:
        return None
    total = root["cpu_s"] + root["child_cpu_s"]
    for c in descendants(pid):
        s = proc_stat(c)
        if s is not None:
            total += s["cpu_s"]
    return total


def settle(pid, stable_s=0.1, limit_s=3.0):
    """Waits until a process's set of children has not changed for `stable_s` and none
    of them is a zombie: for the postmaster, until the backends of a client that just
    left have exited and been reaped, so that their CPU time is in the postmaster's
    child time and not lost in between. False when `limit_s` passed first."""
    deadline = time.monotonic() + limit_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        kids = {}
        for c in children(pid):
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


# --------------------------------------------------------------------- cores

def _core_jiffies():
    """{core: [user, nice, system, idle, iowait, irq, softirq, steal]} from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+)\s+(.*)", line)
            if m:
                out[int(m.group(1))] = ([int(x) for x in m.group(2).split()] + [0] * 8)[:8]
    return out


def core_times():
    """Per core, jiffies: [processes (user + nice + system), interrupts (irq + softirq),
    steal, total]. Guest time is already inside user."""
    return [[v[0] + v[1] + v[2], v[5] + v[6], v[7], sum(v)] for _, v in sorted(_core_jiffies().items())]


def cpu_times():
    """core -> {busy, idle, steal} in seconds, busy counting interrupts."""
    out = {}
    for core, v in _core_jiffies().items():
        user, nice, system, idle, iowait, irq, softirq, steal = (x / CLK_TCK for x in v)
        out[core] = {"busy": user + nice + system + irq + softirq, "idle": idle + iowait, "steal": steal}
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


# --------------------------------------------------------------------- pinning

def can_pin(cpus=(0, 1)):
    """True when this process may run on every CPU in `cpus` and taskset is installed."""
    return set(cpus) <= os.sched_getaffinity(0) and shutil.which("taskset") is not None


def taskset(argv, cpus):
    """argv run by `taskset -c CPUS` (taskset execs it, so the pid stays the command's);
    argv unchanged when cpus is None."""
    if cpus is None:
        return list(argv)
    if isinstance(cpus, int):
        cpus = [cpus]
    return ["taskset", "-c", ",".join(str(c) for c in sorted(cpus)), *argv]


def set_tree_affinity(pid, cpus):
    """Pins a process, all its threads and all its descendants' threads (what
    `taskset -apc` does for one process). Returns {pid: old cpus}."""
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


def restore_tree_affinity(old, root=None):
    """Undoes set_tree_affinity; descendants born since (which inherited the pin) get
    the root's old CPUs."""
    for pid, cpus in old.items():
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass
    if root is not None and root in old:
        for pid in descendants(root):
            try:
                os.sched_setaffinity(pid, old[root])
            except OSError:
                pass


# --------------------------------------------------------------------- the machine

def loadavg():
    """The three load averages, or None."""
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except (OSError, ValueError):
        return None


def machine_info():
    """{"cores", "kernel", "python", "cpu", "memory_mib", "os"} of this machine."""
    import platform
    info = {"cores": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version()}
    for path, pattern, key, cast in (("/proc/cpuinfo", r"^model name\s*:\s*(.*)$", "cpu", str.strip),
                                     ("/proc/meminfo", r"^MemTotal:\s*(\d+) kB", "memory_mib",
                                      lambda kb: int(kb) // 1024),
                                     ("/etc/os-release", r'^PRETTY_NAME="?([^"\n]*)', "os", str)):
        try:
            with open(path) as f:
                m = re.search(pattern, f.read(), re.M)
            info[key] = cast(m.group(1)) if m else None
        except OSError:
            pass
    return info
