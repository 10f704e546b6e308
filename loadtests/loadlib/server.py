"""A server under test: free ports, spawning it (pinned, logged, tied to our life),
waiting until it answers by polling (through httpc, loadlib's one HTTP client),
stopping it by its pid, and the Server-Timing sample that checks a client's
clock against the server's. ProcessUnderTest puts those together: the one
wrapper the harness, bench and calibrate start notesd, h2o and the Express peer
with. What differs between them (argv, environment, ports) stays with the command
that runs them; notesd's and the peer's own command lines are at the end, with
Target, the notesd calibrate's matrix and judge run tools against.
"""
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

from . import httpc, paths, procs, prom


class NotReady(RuntimeError):
    """The server exited or did not answer in time; the message says which."""


# --------------------------------------------------------------------- ports

def port_free(port, host="127.0.0.1"):
    """True when nothing listens on host:port (checked by binding it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def pick_ports(ports, offset):
    """The first port of `ports` that is free together with port + offset; None if none is."""
    for port in ports:
        if port_free(port) and port_free(port + offset):
            return port, port + offset
    return None


def free_port(host="127.0.0.1"):
    """A port nothing listens on now, chosen by the kernel (bound to port 0 and let go):
    for a process that any port will do for and that nobody addresses by hand (the
    conformance matrix's notesd, Locust's master). pick_ports() is for the ports a
    person sees and may configure: the first free ones of a fixed range."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------- HTTP probe

def server_timing_samples(base_url, path, n):
    """n sequential GETs on one keep-alive connection: [(client ms, Server-Timing total ms
    or None)]."""
    u = urllib.parse.urlsplit(base_url)
    out = []
    with httpc.Connection(u.port or 80, host=u.hostname, timeout=30) as conn:
        for _ in range(n):
            t0 = time.perf_counter()
            res = conn.request("GET", path)
            client = (time.perf_counter() - t0) * 1000
            m = re.search(r"total;dur=([0-9.]+)", res.headers.get("server-timing", ""))
            out.append((client, float(m.group(1)) if m else None))
    return out


# --------------------------------------------------------------------- spawning and stopping

def _die_with_parent():
    """In the child before exec: SIGTERM when we go away, whatever the reason
    (PR_SET_PDEATHSIG survives exec)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Spawned:
    """A server process with its output in `log_path` and stdin from /dev/null, in its
    own session (a terminal's Ctrl-C goes to us, and we stop it).

    cpus: pin it as `taskset -c` would, by spawning with that CPU mask (or prefix argv
    with procs.taskset() instead, which shows in the recorded command line).
    tied: the kernel sends it SIGTERM when we die; this needs fork + exec. Without it
    the process is started with posix_spawn (vfork), well under a millisecond where
    fork + exec from Python costs several, which matters for startup times measured
    from the spawn."""

    def __init__(self, argv, env, cwd, log_path, cpus=None, tied=False):
        exe = argv[0] if "/" in argv[0] else shutil.which(argv[0])
        if exe is None:
            raise OSError(f"{argv[0]}: not found")
        self.argv = list(argv)
        self.returncode = None
        self.started = time.monotonic()
        out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if tied:
                def child():
                    _die_with_parent()
                    if cpus is not None:
                        os.sched_setaffinity(0, cpus)
                self._popen = subprocess.Popen(self.argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                               stdout=out, stderr=subprocess.STDOUT,
                                               start_new_session=True, preexec_fn=child)
                self.pid = self._popen.pid
            else:
                self._popen = None
                null = os.open(os.devnull, os.O_RDONLY)
                actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, out, 1),
                           (os.POSIX_SPAWN_DUP2, out, 2)]
                here, mine = os.getcwd(), os.sched_getaffinity(0)
                try:
                    # the child inherits the working directory and the CPU mask
                    os.chdir(cwd)
                    if cpus is not None:
                        os.sched_setaffinity(0, cpus)
                    self.pid = os.posix_spawn(exe, self.argv, env, file_actions=actions, setsid=True)
                finally:
                    os.sched_setaffinity(0, mine)
                    os.chdir(here)
                    os.close(null)
        finally:
            os.close(out)

    def poll(self):
        """The exit code once it has exited (it is reaped then), else None."""
        if self.returncode is None:
            if self._popen is not None:
                self.returncode = self._popen.poll()
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid == self.pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout):
        """True when the process ended within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def stop(self, grace_s=10.0):
        """SIGTERM, then SIGKILL after `grace_s`; reaps it. Returns (exit code, seconds, killed)."""
        t0 = time.monotonic()
        killed = False
        if self.poll() is None:
            stop_pid(self.pid, signal.SIGTERM)
            if not self.wait(grace_s):
                stop_pid(self.pid, signal.SIGKILL)
                self.wait(5.0)
                killed = True
        return self.returncode, time.monotonic() - t0, killed


def stop_pid(pid, sig=signal.SIGTERM):
    """Sends `sig` to one process by its pid; a process already gone is not an error."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_ready(proc, port, path, t0, limit_s=30.0, poll_s=0.001, timeout_s=1.0,
               host="127.0.0.1"):
    """Polls GET path every `poll_s` from t0 (taken right before the spawn) until it
    answers 200; returns seconds since t0. Raises NotReady when the process exits or
    `limit_s` passes first."""
    while True:
        if proc.poll() is not None:
            raise NotReady(f"exited with status {proc.returncode} before answering")
        try:
            status = httpc.request(port, path, timeout=timeout_s, host=host).status
            if status == 200:
                return time.monotonic() - t0
        except OSError:
            pass
        if time.monotonic() - t0 > limit_s:
            raise NotReady(f"no 200 from {path} within {limit_s:.0f} s")
        time.sleep(poll_s)


class ProcessUnderTest:
    """One server under test: its command line, environment and working directory,
    where it answers (`port`, and `ready_path`, which answers 200 once it is ready)
    and how it is pinned. start() spawns it with its output in `log_path`,
    wait_ready() polls until the first 200, stop() ends it (SIGTERM, then SIGKILL)
    and may be called again, or before start().

    cpus: a CPU number or a set of them, or None for no pinning. taskset: pin by
    running it under `taskset -c`, which then shows in .argv (the harness records
    the command line); otherwise the spawn sets the CPU mask itself. tied: the
    kernel sends it SIGTERM when this process dies, which needs fork + exec;
    without it the spawn takes well under a millisecond (Spawned), which matters
    for startup times measured from the spawn. temporary_log: stop() removes the
    log. name: what messages call it (default: the program's name)."""

    def __init__(self, argv, env, cwd, log_path, port=None, ready_path="/status",
                 host="127.0.0.1", cpus=None, taskset=False, tied=False, temporary_log=False,
                 name=None):
        self.cpus = {cpus} if isinstance(cpus, int) else (None if cpus is None else set(cpus))
        self.taskset = taskset
        self.argv = procs.taskset(argv, self.cpus) if taskset else list(argv)
        self.env, self.cwd, self.log_path = env, cwd, log_path
        self.port, self.ready_path, self.host = port, ready_path, host
        self.tied, self.temporary_log = tied, temporary_log
        self.name = name or os.path.basename(argv[0])
        self.proc = None        # the Spawned process once started
        self.t0 = None          # time.monotonic() right before the spawn

    def start(self):
        """Spawns it; returns the monotonic time taken right before the spawn, which
        wait_ready() counts from. OSError when the program cannot be run."""
        self.t0 = time.monotonic()
        self.proc = Spawned(self.argv, self.env, self.cwd, self.log_path,
                            cpus=None if self.taskset else self.cpus, tied=self.tied)
        return self.t0

    def wait_ready(self, limit_s=30.0, poll_s=0.001, timeout_s=1.0, host=None):
        """Seconds from the spawn to the first 200 of ready_path, polled every poll_s;
        NotReady when it exits or limit_s passes first."""
        return wait_ready(self.proc, self.port, self.ready_path, self.t0, limit_s=limit_s,
                          poll_s=poll_s, timeout_s=timeout_s, host=host or self.host)

    def start_ready(self, **wait):
        """start() and wait_ready(**wait): seconds to the first 200. A server that does
        not come up is stopped before the NotReady goes on."""
        self.start()
        try:
            return self.wait_ready(**wait)
        except NotReady:
            self.stop()
            raise

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def poll(self):
        """Its exit code once it has exited, else None (also before start())."""
        return self.proc.poll() if self.proc is not None else None

    def log_text(self):
        """What it wrote to its log so far ('' when there is no log)."""
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, grace_s=10.0):
        """SIGTERM, then SIGKILL after grace_s; reaps it. Returns (exit code, seconds,
        killed): (None, 0.0, False) when it never started."""
        result = (None, 0.0, False) if self.proc is None else self.proc.stop(grace_s)
        if self.temporary_log:
            try:
                os.unlink(self.log_path)
            except FileNotFoundError:
                pass
        return result


# --------------------------------------------------------------------- what runs: notesd and the peer

PEER_DIR = paths.loadtests("peers", "express")
RUNTIME_BIN = paths.loadtests("peers", "runtimes", "node_modules", ".bin")
STATIC_DIR = paths.loadtests("static")
PEERS = ("node", "bun", "deno")


def target_command(runtime, notesd_bin):
    """(argv, cwd) of a target: the Express peer on a pinned runtime (node, bun, deno) from
    loadtests/peers/express, or, for any other name ("notesd"), notesd from the repository's top."""
    if runtime not in PEERS:
        return [notesd_bin], paths.REPO
    binary = os.path.join(RUNTIME_BIN, runtime)
    if runtime == "deno":
        return [binary, "run", "-A", "server.js"], PEER_DIR
    return [binary, "server.js"], PEER_DIR


def target_env(runtime, base, db_url, port, metrics_port, pool_max=20):
    """The environment of a target: `base` plus the settings every command gives it. Both
    listen on 127.0.0.1 only and serve loadtests/static (the peer's ./static is a link to
    it); notesd runs without Server-Timing (the reference's headers) and with the peer's
    /primes limit (PRIMES_MAX=10000000; notesd's own default is 1000000), so seed 001's
    CPU-bound rounds may ask either for the same ?below=."""
    env = dict(base)
    env.update({"DB_URL": db_url, "HOST": "127.0.0.1", "PORT": str(port), "METRICS_PORT": str(metrics_port),
                "POOL_MAX": str(pool_max), "STATIC_DIR": STATIC_DIR})
    if runtime in PEERS:
        env["PATH"] = RUNTIME_BIN + os.pathsep + env.get("PATH", "")
        if runtime == "deno":
            env["DENO_NO_UPDATE_CHECK"] = "1"
    else:
        env.update({"SERVER_TIMING": "0", "METRICS_HOST": "127.0.0.1", "PRIMES_MAX": "10000000"})
    return env


def runtime_installed(runtime):
    return os.access(os.path.join(RUNTIME_BIN, runtime), os.X_OK)


def peers_ready(runtimes):
    """True when every runtime named and the peer's node_modules are installed."""
    return (all(runtime_installed(r) for r in runtimes)
            and os.path.isdir(os.path.join(PEER_DIR, "node_modules", "express")))


def install_peers(runtimes, capture=True):
    """Runs loadtests/peers/install.sh (npm ci of the peer and the pinned runtimes).
    Returns (runtimes still missing, its CompletedProcess)."""
    res = subprocess.run([paths.loadtests("peers", "install.sh")], capture_output=capture, text=True)
    return [r for r in runtimes if not runtime_installed(r)], res


def runtime_version(runtime):
    """`<runtime> --version`'s first line for a peer runtime, else None."""
    if runtime not in PEERS:
        return None
    try:
        out = subprocess.run([os.path.join(RUNTIME_BIN, runtime), "--version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.splitlines()[0] if out else None


# A DB_URL for a notesd whose routes under load never query a database: it only has to parse.
NO_DATABASE = "postgresql://calibrate@127.0.0.1:9/unused"


class Target:
    """A notesd on free loopback ports for a load tool to run against (calibrate's
    matrix, judge), pinned to CPU 1 when `pin`, with Server-Timing on. db_url: its
    database (default NO_DATABASE: the routes used never query one); extra: more flags
    (TLS, h2c); journal: JOURNAL's records per loop (0: off). stop() ends it."""

    def __init__(self, notesd, pin, extra=(), journal=0, db_url=NO_DATABASE):
        self.port, self.metrics_port = free_port(), free_port()
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        env = dict(os.environ, DB_URL=db_url, LOG_LEVEL="warn", SERVER_TIMING="1",
                   JOURNAL=str(journal))
        argv = [os.path.abspath(notesd), "--host", "127.0.0.1", "--port", str(self.port),
                "--metrics-host", "127.0.0.1", "--metrics-port", str(self.metrics_port), *extra]
        log_path = tempfile.mktemp(prefix="loadlib-notesd-", suffix=".log")
        self.process = ProcessUnderTest(argv, env, paths.REPO, log_path, port=self.port,
                                        cpus=1 if pin else None, taskset=True, tied=True,
                                        temporary_log=True)
        self.process.start()
        try:
            self.process.wait_ready(limit_s=15, poll_s=0.05)
        except NotReady as e:
            text = self.process.log_text().strip()
            self.stop()
            raise RuntimeError(f"notesd {e}: {text}") from None

    def url(self, path, scheme="http", port=None):
        return f"{scheme}://127.0.0.1:{port or self.port}{path}"

    def scrape(self):
        return prom.scrape(self.metrics_url)

    def get(self, path):
        """(status, body) of one GET on the API port."""
        status, _, body = httpc.request(self.port, path, timeout=5)
        return status, body.decode("utf-8", "replace")

    def stop(self):
        self.process.stop(10)
