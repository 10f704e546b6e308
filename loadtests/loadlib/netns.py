"""Three hosts on one machine, for loadtests/bench --netns: network namespaces for
the load generator (nb-load), the server (nb-srv) and PostgreSQL (nb-db), two links
(load–server, server–database) with addresses of 198.18.0.0/15 only, a fixed one-way
delay on each link, entering a namespace, and removing all of it again.

Owns the plan (pure: names, addresses, the ip/tc command lines) and carrying it out
and undoing it. Which addresses load may go to is netcheck.py's (it accepts these
namespaces' addresses only while they exist); what runs inside them is the
benchmark's (commands/bench/bench_netns.py).

Two ways to delay a link:
  netem      veth pairs, with `tc qdisc add dev X root netem delay D limit N` on both
             ends of each pair: the standard tool, when the kernel has sch_netem;
  delayline  for kernels without it (CONFIG_NET_SCH_NETEM unset, as on this project's
             VM): one TUN device per namespace and loadtests/bench.d/delayline.c, a
             user-space wire that hands each IPv4 packet to the namespace owning its
             destination D later. TCP still runs end to end between the namespaces'
             own stacks; the wire costs CPU of its own (the benchmark measures it).
"""
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import time

from loadlib import netcheck, paths

NAMES = {"load": "nb-load", "srv": "nb-srv", "db": "nb-db"}
assert tuple(NAMES.values()) == netcheck.NETNS_NAMES
# the two links: (side a, its address, side b, its address), each a /30 of 198.18.0.0/15
LINKS = [("load", "198.18.1.1", "srv", "198.18.1.2"),
         ("srv", "198.18.2.1", "db", "198.18.2.2")]
PREFIX = 30
TUN = "nb-tun"
# netem's queue, in packets: the default of 1000 drops packets once more than that are
# in flight, i.e. at 200,000 packets/s with 5 ms of delay
NETEM_LIMIT = 100000
# where --cleanup finds what an interrupted run left: the delay line's pid
STATE_FILE = "/run/notesd-bench-netns.json"
DELAYLINE_SRC = paths.loadtests("bench.d", "delayline.c")
CLONE_NEWNET = 0x40000000


class NetnsError(RuntimeError):
    """A step of building the layout failed; the message names the command."""


# --------------------------------------------------------------------- the plan (pure)

def veth_name(role, peer):
    """The veth end in namespace `role` that faces `peer`: nb-load-srv, nb-srv-db, ..."""
    return f"nb-{role}-{peer}"


def addresses():
    """{role: [its addresses]}: the server has one on each link."""
    out = {role: [] for role in NAMES}
    for a, addr_a, b, addr_b in LINKS:
        out[a].append(addr_a)
        out[b].append(addr_b)
    return out


def address(role, towards):
    """The address of `role` on its link to `towards` (what the other side connects to)."""
    for a, addr_a, b, addr_b in LINKS:
        if (a, b) == (role, towards):
            return addr_a
        if (b, a) == (role, towards):
            return addr_b
    raise KeyError(f"no link between {role} and {towards}")


def delay_arg(delay_ms):
    """netem's spelling of a delay: 0.25 -> '250us', 1 -> '1ms'."""
    us = round(delay_ms * 1000)
    return f"{us // 1000}ms" if us % 1000 == 0 else f"{us}us"


def setup_commands(method, delay_ms):
    """The ip/tc command lines that build the layout, in order. For "delayline" the
    TUN devices are created by the delay line itself (started between the namespace
    commands and these address commands: see delayline_command)."""
    cmds = [["ip", "netns", "add", n] for n in NAMES.values()]
    cmds += [["ip", "-n", n, "link", "set", "lo", "up"] for n in NAMES.values()]
    if method == "netem":
        for a, addr_a, b, addr_b in LINKS:
            dev_a, dev_b = veth_name(a, b), veth_name(b, a)
            cmds.append(["ip", "link", "add", dev_a, "netns", NAMES[a], "type", "veth", "peer",
                         "name", dev_b, "netns", NAMES[b]])
            for role, dev, addr in ((a, dev_a, addr_a), (b, dev_b, addr_b)):
                cmds.append(["ip", "-n", NAMES[role], "addr", "add", f"{addr}/{PREFIX}", "dev",
                             dev])
                cmds.append(["ip", "-n", NAMES[role], "link", "set", dev, "up"])
                if delay_ms > 0:
                    cmds.append(["tc", "-n", NAMES[role], "qdisc", "add", "dev", dev, "root",
                                 "netem", "delay", delay_arg(delay_ms), "limit",
                                 str(NETEM_LIMIT)])
    elif method != "delayline":
        raise ValueError(f"unknown link method {method!r}")
    return cmds


def tun_commands():
    """For "delayline": addresses and routes on each namespace's TUN device, once it
    exists. Each address is a /32 with a route to the peer across the wire, its source
    the address on that link."""
    cmds = []
    for role, addrs in addresses().items():
        n = NAMES[role]
        cmds.append(["ip", "-n", n, "link", "set", TUN, "mtu", "1500", "txqueuelen", "10000",
                     "up"])
        for addr in addrs:
            cmds.append(["ip", "-n", n, "addr", "add", f"{addr}/32", "dev", TUN])
    for a, addr_a, b, addr_b in LINKS:
        cmds.append(["ip", "-n", NAMES[a], "route", "add", f"{addr_b}/32", "dev", TUN, "src",
                     addr_a])
        cmds.append(["ip", "-n", NAMES[b], "route", "add", f"{addr_a}/32", "dev", TUN, "src",
                     addr_b])
    return cmds


def delayline_command(binary, delay_ms):
    """argv of the delay line: the delay in microseconds, then NS=ADDR,... per namespace."""
    return [binary, str(round(delay_ms * 1000))] + [
        f"{NAMES[role]}={','.join(addrs)}" for role, addrs in addresses().items()]


def teardown_commands():
    """Deleting the namespaces removes their veth ends and qdiscs with them."""
    return [["ip", "netns", "del", n] for n in NAMES.values()]


def in_ns(role, argv):
    """argv run inside a namespace: nsenter execs it, so its pid is the command's."""
    return ["nsenter", f"--net=/run/netns/{NAMES[role]}", "--"] + list(argv)


# --------------------------------------------------------------------- carrying it out

def run(cmd):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        raise NetnsError(f"{' '.join(cmd)}: {(res.stderr or res.stdout).strip()}")
    return res.stdout


def netem_available():
    """True when this kernel accepts a netem qdisc (tried on a veth pair inside a
    scratch namespace, removed again)."""
    probe = "nb-probe"
    try:
        subprocess.run(["ip", "netns", "add", probe], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    try:
        subprocess.run(["ip", "-n", probe, "link", "add", "nb-p0", "type", "veth", "peer",
                        "name", "nb-p1"], capture_output=True, check=True)
        r = subprocess.run(["tc", "-n", probe, "qdisc", "add", "dev", "nb-p0", "root", "netem",
                            "delay", "1ms"], capture_output=True)
        return r.returncode == 0
    except (OSError, subprocess.CalledProcessError):
        return False
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)


def permitted():
    """(True, "") when namespaces can be made here, else (False, why)."""
    if os.geteuid() != 0:
        return False, "needs root (ip netns add)"
    for tool in ("ip", "tc", "nsenter"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            return False, f"{tool} not found (apt-get install -y iproute2 util-linux)"
    probe = "nb-probe"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return False, f"ip netns add is not permitted here: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return True, ""


def build_delayline(workdir):
    """Compiles delayline.c into workdir (cc -O2); returns the binary's path."""
    out = os.path.join(workdir, "nb-delayline")
    res = subprocess.run(["cc", "-O2", "-Wall", "-o", out, DELAYLINE_SRC], capture_output=True,
                         text=True)
    if res.returncode != 0:
        raise NetnsError(f"cc {DELAYLINE_SRC}: {res.stderr.strip()}")
    return out


class Layout:
    """The namespaces and links of one delay, built by up() and removed by down()
    (which is safe to call twice, and after a failed up()).

    cpus: where the delay line runs (its CPU time is reported); log_path: its output."""

    def __init__(self, method, delay_ms, workdir, cpus=None, log_path=None):
        self.method, self.delay_ms, self.workdir = method, delay_ms, workdir
        self.cpus, self.log_path = cpus, log_path
        self.wire = None

    def up(self):
        cleanup()  # a namespace left by an earlier run would make `ip netns add` fail
        for cmd in setup_commands(self.method, self.delay_ms):
            run(cmd)
        if self.method == "delayline":
            self.start_wire()
            for cmd in tun_commands():
                run(cmd)

    def start_wire(self):
        binary = build_delayline(self.workdir)
        log = open(self.log_path or os.devnull, "ab")
        argv = delayline_command(binary, self.delay_ms)
        if self.cpus:
            argv = ["taskset", "-c", ",".join(str(c) for c in sorted(self.cpus))] + argv
        self.wire = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log,
                                     stdin=subprocess.DEVNULL)
        log.close()
        with open(STATE_FILE, "w") as f:
            json.dump({"delayline_pid": self.wire.pid}, f)
        line = self.wire.stdout.readline().decode().strip()
        if line != "ready":
            self.wire.wait(5)
            raise NetnsError(f"the delay line did not start (exit {self.wire.returncode}); "
                             f"see {self.log_path}")

    def wire_cpu_seconds(self):
        """CPU time of the delay line so far (None with netem: the kernel does the work
        in softirq time, counted in the CPUs' busy time)."""
        if self.wire is None:
            return None
        from loadlib import procs
        return procs.cpu_seconds(self.wire.pid)

    def down(self):
        if self.wire is not None:
            self.wire.terminate()
            try:
                self.wire.wait(5)
            except subprocess.TimeoutExpired:
                self.wire.kill()
                self.wire.wait(5)
            self.wire = None
        cleanup()


def cleanup():
    """Removes whatever the benchmark's layout left, by name: every process inside the
    namespaces (SIGTERM, then SIGKILL), the namespaces themselves, and the delay line
    whose pid the state file holds (only if that pid still runs nb-delayline).
    Returns what it removed, as lines."""
    done = []
    try:
        with open(STATE_FILE) as f:
            pid = json.load(f).get("delayline_pid")
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() == "nb-delayline":
                os.kill(pid, signal.SIGTERM)
                done.append(f"stopped the delay line (pid {pid})")
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    with contextlib.suppress(OSError):
        os.unlink(STATE_FILE)
    for name in NAMES.values():
        if not os.path.exists(f"/run/netns/{name}"):
            continue
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = pids_in(name)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            if pids:
                done.append(f"sent {signal.Signals(sig).name} to {len(pids)} process(es) "
                            f"in {name}")
                deadline = time.monotonic() + 5
                while pids_in(name) and time.monotonic() < deadline:
                    time.sleep(0.05)
            if not pids_in(name):
                break
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        done.append(f"deleted namespace {name}")
    return done


def pids_in(name):
    """Pids of the processes whose network namespace is `name` (`ip netns pids`)."""
    res = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    return [int(p) for p in res.stdout.split() if p.isdigit()]


@contextlib.contextmanager
def entered(role):
    """Runs the block with this thread in the namespace of `role`: sockets opened in
    it belong to that namespace (and keep working after the block)."""
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{NAMES[role]}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise NetnsError(f"setns {NAMES[role]}: {os.strerror(ctypes.get_errno())}")
        try:
            yield
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:
                raise NetnsError(f"setns back: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(target)
        os.close(home)
