"""The comparison run: notesd and the Express peer on Node, Bun and Deno, under
the same load, against the same freshly reset PostgreSQL, in rotated order.
Started by loadtests/run.sh (see there for the options)."""
import argparse
import datetime
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from loadlib import cli, openmetrics, pg, procs, server
from loadlib.commands.harness import analyze, arrivals
from loadlib.database import LocalDatabase
from loadlib.netcheck import db_hosts, remote_db_hosts
from loadlib.procs import loadavg, machine_info
from loadlib.report import logger
from loadlib.sampler import Sampler
from loadlib.paths import LOADTESTS, REPO
from loadlib.tools import k6 as k6tool, wrk

TARGETS = ("notesd", "node", "bun", "deno")
# older spellings still accepted on the command line; results, reports and charts use the name
ALIASES = {"native": "notesd"}
MODES = ("read", "write", "mixed", "json")
TARGET_PORTS = range(18100, 18200)
METRICS_OFFSET = 1000                      # metrics port = target port + 1000 (19100-19199)
STARTUP_PATH = "/notes?tag=js"
STARTUP_POLL_S = 0.005
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
SEED = {"rounds": 3, "modes": "read,write,mixed,json", "duration": "180s", "vus": 100, "pause": "15s",
        "warmup": "30s"}
QUICK = {"rounds": 1, "duration": "10s", "pause": "2s", "warmup": "2s"}
# k6 is in neither Debian nor npm: K6=/path/to/k6 or k6 on PATH (loadlib/tools/k6.py), or the
# Compose stack's service (docker/README.md)
K6_HINT = ("k6 is not in Debian or npm. Put it on PATH or set K6=/path/to/k6, run it from the "
           "Compose stack instead, `docker compose -f docker/compose.yaml run --rm k6` "
           "(docker/README.md, \"Running k6\"), or use --tool wrk")
# k6's web dashboard report of each test, when the k6 at hand has the dashboard (k6tool)
K6_REPORT = "k6-report.html"


log = logger(stream="stdout")   # progress on stdout, errors on stderr


class HarnessError(Exception):
    pass


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="loadtests/run.sh",
        description="Compare notesd with the Express peer on Node, Bun and Deno under the seed's load.")
    ap.add_argument("targets", nargs="+", metavar="TARGET", help="notesd, node, bun or deno (native: notesd)")
    ap.add_argument("--quick", action="store_true",
                    help="1 round, 10 s per mode, 2 s pause, 2 s warm-up (explicit options still win)")
    ap.add_argument("--rounds", type=int, help=f"rounds (default {SEED['rounds']})")
    ap.add_argument("--modes", help=f"comma-separated modes (default {SEED['modes']})")
    ap.add_argument("--duration", help=f"length of each test (default {SEED['duration']})")
    ap.add_argument("--vus", type=int, help=f"virtual users / connections (default {SEED['vus']})")
    ap.add_argument("--pause", help=f"pause between tests (default {SEED['pause']})")
    ap.add_argument("--warmup", help=f"wait after the first 200 before the first test (default {SEED['warmup']})")
    ap.add_argument("--out", help="results directory (default loadtests/results/<UTC timestamp>/)")
    ap.add_argument("--allow-remote-db", action="store_true",
                    help="accept a DB_URL whose host is not on this machine (its notes table is dropped and reseeded)")
    ap.add_argument("--journal", action="store_true",
                    help="notesd keeps a request journal; each notesd test's records go to "
                         "journal.ndjson.gz beside its summary, and the report charts arrivals "
                         "per second (loadlib/commands/harness/arrivals.py)")
    ap.add_argument("--tool", choices=("auto", "k6", "wrk"), default="auto",
                    help="load tool: k6 when K6 names one or it is on PATH, else wrk (default auto)")
    a = ap.parse_args(argv)

    base = dict(SEED)
    if a.quick:
        base.update(QUICK)
    for key in ("rounds", "modes", "duration", "vus", "pause", "warmup"):
        if getattr(a, key) is None:
            setattr(a, key, base[key])

    a.targets = [ALIASES.get(t, t) for t in a.targets]
    bad = [t for t in a.targets if t not in TARGETS]
    if bad:
        ap.error(f"unknown target(s) {', '.join(bad)} (choose from {', '.join(TARGETS)})")
    if len(set(a.targets)) != len(a.targets):
        ap.error("a target is named twice")
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    bad = [m for m in a.modes if m not in MODES]
    if bad or not a.modes:
        ap.error(f"unknown mode(s) {', '.join(bad) or '(none)'} (choose from {', '.join(MODES)})")
    if not 1 <= a.rounds <= 20:
        ap.error("--rounds must be 1..20")
    if not 1 <= a.vus <= 10000:
        ap.error("--vus must be 1..10000")
    try:
        a.duration_s = cli.seconds(a.duration, "duration")
        a.pause_s = cli.seconds(a.pause, "pause")
        a.warmup_s = cli.seconds(a.warmup, "warmup")
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    if a.duration_s != int(a.duration_s) or not 1 <= a.duration_s <= 3600:
        ap.error("--duration must be whole seconds, 1s..1h")
    a.duration_s = int(a.duration_s)
    if not 0 <= a.pause_s <= 600 or not 0 <= a.warmup_s <= 600:
        ap.error("--pause and --warmup must be 0..600 s")
    return a


# --------------------------------------------------------------------- the database

def open_database(allow_remote):
    """The notes database: the private one of sql/localdb.sh (DB_URL unset), or DB_URL,
    which must be on this machine unless allow_remote."""
    url = os.environ.get("DB_URL", "")
    remote = remote_db_hosts(url) if url else []
    if remote and not allow_remote:
        raise HarnessError(f"DB_URL names {', '.join(remote)}, which is not on this machine; every run "
                           "drops and reseeds its notes table. Pass --allow-remote-db if that is meant.")
    try:
        return LocalDatabase(url).open()
    except pg.DatabaseError as e:
        raise HarnessError(str(e)) from None


def reset_database(db):
    """Drop, recreate and reseed the notes table; returns seconds taken."""
    try:
        return db.reset()
    except pg.DatabaseError as e:
        raise HarnessError(str(e)) from None


# --------------------------------------------------------------------- targets

def free_ports():
    ports = server.pick_ports(TARGET_PORTS, METRICS_OFFSET)
    if ports is None:
        raise HarnessError("no free port pair in 18100-18199 / 19100-19199")
    return ports


def pinning():
    """(target cpu, tool cpu) or (None, None) when this machine has fewer than two usable CPUs."""
    return (1, 0) if procs.can_pin((0, 1)) else (None, None)


def target_process(name, notesd_bin, db_url, port, metrics_port, cpu, log_path, journal=False):
    """A target, to be started pinned to `cpu` by taskset (which execs it, so the pid is
    the server's own, and the recorded command line shows the pinning) and tied to the
    harness: if the harness dies, the kernel sends it SIGTERM."""
    argv, cwd = server.target_command(name, notesd_bin)
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR") if k in os.environ}
    env = server.target_env(name, base, db_url, port, metrics_port, pool_max=20)
    if journal and name == "notesd":
        env["JOURNAL"] = str(arrivals.RECORDS)
    return server.ProcessUnderTest(argv, env, cwd, log_path, port=port, ready_path=STARTUP_PATH, cpus=cpu,
                                   taskset=True, tied=True, name=name)


def ensure_binaries(targets):
    notesd_bin = os.environ.get("NOTESD_BIN") or os.path.join(REPO, "build", "notesd")
    if "notesd" in targets:
        if os.environ.get("NOTESD_BIN"):
            if not os.access(notesd_bin, os.X_OK):
                raise HarnessError(f"NOTESD_BIN={notesd_bin} is not executable")
        else:
            log("== building notesd (server/build.sh)")
            res = subprocess.run([os.path.join(REPO, "server", "build.sh")], capture_output=True, text=True)
            if res.returncode != 0 or not os.access(notesd_bin, os.X_OK):
                raise HarnessError(f"server/build.sh failed:\n{res.stdout}{res.stderr}")
    peers = [t for t in targets if t != "notesd"]
    if peers and not server.peers_ready(peers):
        missing = [t for t in peers if not server.runtime_installed(t)]
        log(f"== installing the peer and runtimes (loadtests/peers/install.sh){': missing ' + ', '.join(missing) if missing else ''}")
        missing, res = server.install_peers(peers)
        if res.returncode != 0 and missing:
            raise HarnessError(f"loadtests/peers/install.sh failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    return notesd_bin


# --------------------------------------------------------------------- load tools

class Tool:
    def __init__(self, choice, vus, duration_s):
        k6 = k6tool.path()
        if choice == "k6" and not k6:
            raise HarnessError(f"--tool k6: k6 is not on PATH (or K6 names no executable). "
                               f"{K6_HINT}.")
        if choice in ("auto", "k6") and k6:
            self.name, self.path = "k6", k6
        elif wrk.available():
            self.name, self.path = "wrk", wrk.path()
        else:
            raise HarnessError(f"neither k6 nor wrk is on PATH ({wrk.INSTALL_HINT})")
        self.vus = vus
        self.duration_s = duration_s
        if self.name == "wrk":
            self.version = wrk.version() or self.name
            return
        try:
            out = subprocess.run([self.path, "--version"], capture_output=True, text=True, timeout=10)
            first = (out.stdout + out.stderr).strip().splitlines()[0]
            self.version = re.sub(r"\s*Copyright.*$", "", first).strip() or self.name
        except (OSError, subprocess.TimeoutExpired, IndexError):
            self.version = self.name

    def summary_file(self, directory):
        return os.path.join(directory, "k6-summary.json" if self.name == "k6" else "wrk.txt")

    def command(self, port, mode, target, rnd, directory):
        base = f"http://127.0.0.1:{port}"
        if self.name == "k6":
            argv = [self.path, "run", "--quiet",
                    "-e", f"BASE_URL={base}", "-e", f"MODE={mode}", "-e", f"VUS={self.vus}",
                    "-e", f"DURATION={self.duration_s}s", "-e", f"RT={target}", "-e", f"ROUND={rnd}",
                    "-e", f"SUMMARY={self.summary_file(directory)}",
                    os.path.join(LOADTESTS, "k6", "notes.js")]
            env = {**os.environ, "K6_NO_USAGE_REPORT": "true",
                   **k6tool.web_dashboard_env(os.path.join(directory, K6_REPORT), self.path)}
        else:
            argv = [self.path, "-t1", f"-c{self.vus}", f"-d{self.duration_s}s", "--timeout", "10s",
                    "-s", os.path.join(LOADTESTS, "wrk", "notes.lua"), base]
            env = {**os.environ, "MODE": mode, "BREAKDOWN": "1"}
        return argv, env


# --------------------------------------------------------------------- one run

def write_openmetrics(mdir, target, mode, rnd):
    """metrics.om next to metrics.prom.gz: the test's scrapes as OpenMetrics with their
    timestamps and the test's labels, for promtool's backfill (docker/replay/backfill.sh).
    Returns {"scrapes": written, "skipped": left out}, or {"error": why}."""
    try:
        with gzip.open(os.path.join(mdir, "metrics.prom.gz"), "rt", encoding="utf-8", errors="replace") as f:
            stream = f.read()
        text, written, skipped = openmetrics.convert(stream, target, mode, rnd)
        with open(os.path.join(mdir, "metrics.om"), "w", encoding="utf-8") as f:
            f.write(text)
    except (OSError, EOFError) as e:      # the raw scrapes stay; the run goes on without this file
        return {"error": str(e)}
    return {"scrapes": written, "skipped": skipped}


class Run:
    def __init__(self, a):
        self.a = a
        self.failures = []

    def progress_every(self):
        d = self.a.duration_s
        return 10 if d >= 60 else 5

    def run_mode(self, rnd, target, proc_pid, port, metrics_port, mode, tdir, tool, tool_cpu, db):
        a = self.a
        mdir = os.path.join(tdir, mode)
        os.makedirs(mdir, exist_ok=True)
        tag = f"[round {rnd}/{a.rounds}] {target} {mode}"
        sampler = Sampler(mdir, metrics_port, proc_pid, pg_pid=db.postmaster)
        sampler.start()
        if not sampler.first_done.wait(10):
            raise HarnessError(f"{tag}: the first scrape of /metrics did not finish")
        tap = arrivals.Tap(mdir, metrics_port) if a.journal and target == "notesd" else None
        if tap:
            tap.start()
        argv, env = tool.command(port, mode, target, rnd, mdir)
        if tool_cpu is not None:
            argv = ["taskset", "-c", str(tool_cpu)] + argv
        info = {"target": target, "round": rnd, "mode": mode, "tool": tool.name, "tool_version": tool.version,
                "argv": argv, "vus": a.vus, "duration_s": a.duration_s, "port": port,
                "metrics_port": metrics_port, "loadavg_at_start": loadavg()}
        stdout_path = os.path.join(mdir, "wrk.txt" if tool.name == "wrk" else "k6.txt")
        p = None
        try:
            with open(stdout_path, "wb") as out, open(os.path.join(mdir, "tool.stderr"), "wb") as err:
                info["start_unix"] = time.time()
                t0 = time.monotonic()
                p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                     start_new_session=True)
                sampler.tool_pid = p.pid
                every = self.progress_every()
                next_line = 0.0
                limit = a.duration_s + 60
                timed_out = False
                while True:
                    elapsed = time.monotonic() - t0
                    if elapsed >= next_line:
                        left = max(0, int(round(a.duration_s - elapsed)))
                        if left > 0:
                            log(f"{tag}: {left}s left")
                        next_line += every
                    try:
                        p.wait(timeout=max(0.05, min(1.0, next_line - (time.monotonic() - t0))))
                        break
                    except subprocess.TimeoutExpired:
                        if time.monotonic() - t0 > limit:
                            os.killpg(p.pid, signal.SIGKILL)
                            p.wait()
                            timed_out = True
                            break
                info["end_unix"] = time.time()
                info["tool_rc"] = p.returncode
                info["tool_timed_out"] = timed_out
        finally:
            if p is not None and p.poll() is None:      # interrupted: the tool must not outlive the run
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            sampler.finish()
            sampler.join(30)
            if tap:
                info["journal"] = tap.finish(info.get("start_unix", time.time()))
        info["scrapes"] = sampler.scrapes
        info["sampler_errors"] = sampler.errors
        info["openmetrics"] = write_openmetrics(mdir, target, mode, rnd)
        with open(os.path.join(mdir, "test.json"), "w") as f:
            json.dump(info, f, indent=2)

        # reconcile the tool's counts with the server's
        rec_json = os.path.join(mdir, "reconcile.json")
        res = subprocess.run([sys.executable, os.path.join(LOADTESTS, "reconcile"), "--tool", tool.name,
                              "--summary", tool.summary_file(mdir),
                              "--before", os.path.join(mdir, "before.prom"),
                              "--after", os.path.join(mdir, "after.prom"),
                              "--tolerance", str(a.vus), "--json", rec_json],
                             capture_output=True, text=True)
        with open(os.path.join(mdir, "reconcile.txt"), "w") as f:
            f.write(res.stdout + res.stderr)
        verdict = {0: "OK", 1: "MISMATCH"}.get(res.returncode, "ERROR")
        line = f"{tag}: "
        try:
            with open(rec_json) as f:
                rec = json.load(f)
            c = rec["client"]
            p99 = c["percentiles_ms"].get("p99")
            line += (f"{c['total']} requests, {c['rps'] or 0:,.0f} req/s, p99 "
                     f"{'-' if p99 is None else f'{p99:.2f} ms'}, {c['failed']} {c['failed_what']}, "
                     f"server {rec['server']['total']} ({rec['difference']:+d}): reconcile {verdict}")
            if c["failed"] or (c.get("socket_errors") or 0):
                self.failures.append(f"{tag}: {c['failed']} {c['failed_what']}, "
                                     f"{c.get('socket_errors') or 0} socket errors")
        except (OSError, ValueError, KeyError):
            line += f"reconcile {verdict}: {(res.stderr or res.stdout).strip()[:300]}"
        log(line)
        if verdict != "OK":
            for l in res.stdout.splitlines():
                if l.startswith("MISMATCH"):
                    log(f"  {l}")
            self.failures.append(f"{tag}: reconcile {verdict}")
        if info["tool_rc"] not in (0, None) and not (tool.name == "k6" and info["tool_rc"] == 99):
            self.failures.append(f"{tag}: {tool.name} exited with {info['tool_rc']}")
        if timed_out:
            self.failures.append(f"{tag}: {tool.name} did not stop by itself and was killed")

    def run_target(self, rnd, target, db, tool, notesd_bin, cpus):
        a = self.a
        tdir = os.path.join(a.out, f"r{rnd}", target)
        os.makedirs(tdir, exist_ok=True)
        tag = f"[round {rnd}/{a.rounds}] {target}"
        info = {"target": target, "round": rnd}
        info["reset_s"] = round(reset_database(db), 3)      # a database that cannot be reset ends the run
        t = None
        try:
            port, metrics_port = free_ports()
            info.update({"port": port, "metrics_port": metrics_port, "cpu": cpus[0]})
            t = target_process(target, notesd_bin, db.url, port, metrics_port, cpus[0],
                               os.path.join(tdir, "target.log"), journal=a.journal)
            t.start()
            info.update({"argv": t.argv, "cwd": t.cwd, "pid": t.pid})
            try:
                info["startup_s"] = round(t.wait_ready(limit_s=STARTUP_TIMEOUT_S, poll_s=STARTUP_POLL_S,
                                                       timeout_s=2.0), 4)
            except server.NotReady as e:
                raise HarnessError(f"{target}: {e}") from None
            log(f"{tag}: notes table reset in {info['reset_s']:.1f}s; first 200 after {info['startup_s']:.3f}s "
                f"(pid {t.proc.pid}, port {port}, metrics {metrics_port})")
            if a.warmup_s:
                log(f"{tag}: warming up {a.warmup_s:g}s")
                self.sleep_watching(t, a.warmup_s)
            for i, mode in enumerate(a.modes):
                self.run_mode(rnd, target, t.proc.pid, port, metrics_port, mode, tdir, tool, cpus[1], db)
                if t.proc.poll() is not None:
                    raise HarnessError(f"{target} exited with {t.proc.returncode} during {mode}")
                if i + 1 < len(a.modes) and a.pause_s:
                    self.sleep_watching(t, a.pause_s)
        except HarnessError as e:
            info["error"] = str(e)
            self.failures.append(f"{tag}: {e}")
            log(f"{tag}: FAILED: {e}")
        finally:
            code, took, killed = t.stop(STOP_TIMEOUT_S) if t else (None, 0.0, False)
            info.update({"exit_code": code, "stop_s": round(took, 3), "killed": killed})
            with open(os.path.join(tdir, "start.json"), "w") as f:
                json.dump(info, f, indent=2)
        if killed:
            self.failures.append(f"{tag}: did not stop within {STOP_TIMEOUT_S:.0f} s of SIGTERM; killed")
        log(f"{tag}: stopped (exit {code}, {took:.1f}s)")

    @staticmethod
    def sleep_watching(target, s):
        end = time.monotonic() + s
        while time.monotonic() < end:
            if target.proc.poll() is not None:
                raise HarnessError(f"{target.name} exited with {target.proc.returncode}")
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))


def on_signal(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    # SIGTERM and SIGHUP clean up like Ctrl-C: the tool and the target are stopped, what ran is analysed
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    a.out = os.path.abspath(a.out or os.path.join(LOADTESTS, "results", stamp))
    run = Run(a)
    started = time.time()
    try:
        tool = Tool(a.tool, a.vus, a.duration_s)
        db = open_database(a.allow_remote_db)
        notesd_bin = ensure_binaries(a.targets)
    except (HarnessError, subprocess.CalledProcessError) as e:
        print(f"run.sh: {e}", file=sys.stderr)
        return 2
    # only once the tool, the database and the binaries are there: a run that cannot
    # start leaves no empty results directory behind
    os.makedirs(a.out, exist_ok=True)
    cpus = pinning()
    orders = [a.targets[(r - 1) % len(a.targets):] + a.targets[:(r - 1) % len(a.targets)]
              for r in range(1, a.rounds + 1)]
    per_target = a.warmup_s + len(a.modes) * (a.duration_s + 1.5) + (len(a.modes) - 1) * a.pause_s + 4
    estimate = a.rounds * len(a.targets) * per_target
    config = {
        "started_utc": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv[1:] if argv is None else argv, "quick": a.quick,
        "targets": a.targets, "modes": a.modes, "rounds": a.rounds, "orders": orders,
        "duration_s": a.duration_s, "vus": a.vus, "pause_s": a.pause_s, "warmup_s": a.warmup_s,
        "tool": tool.name, "tool_version": tool.version, "tool_cpu": cpus[1], "target_cpu": cpus[0],
        "db": {"private": db.private, "host": ", ".join(db_hosts(db.url)) or "unix socket", "port": db.port,
               "version": db.version, "postmaster_pid": db.postmaster},
        "versions": {t: server.runtime_version(t) for t in a.targets},
        "machine": machine_info(),
    }
    with open(os.path.join(a.out, "run.json"), "w") as f:
        json.dump(config, f, indent=2)
    log(f"== {len(a.targets)} target(s) x {a.rounds} round(s) x {len(a.modes)} mode(s), {a.duration_s}s each, "
        f"{a.vus} connections, {tool.name}; about {estimate / 60:.0f} min; results in {a.out}")
    if cpus[0] is None:
        log("   (fewer than 2 usable CPUs: target and load tool are not pinned)")
    else:
        log(f"   target pinned to CPU {cpus[0]}, {tool.name} to CPU {cpus[1]}; "
            f"database: {'private PostgreSQL' if db.private else 'DB_URL'} on port {db.port}")

    interrupted = False
    try:
        for rnd in range(1, a.rounds + 1):
            log(f"== round {rnd}/{a.rounds}: {' '.join(orders[rnd - 1])}")
            for target in orders[rnd - 1]:
                run.run_target(rnd, target, db, tool, notesd_bin, cpus)
    except KeyboardInterrupt:
        interrupted = True
        run.failures.append("interrupted")
        log("run.sh: interrupted; analysing what finished")
    except HarnessError as e:
        run.failures.append(str(e))
        log(f"run.sh: {e}")

    try:
        report = analyze.analyze(a.out)
    except Exception as e:  # the raw files stay; say so and fail
        log(f"run.sh: analysis failed: {e!r}; raw files are in {a.out}")
        return 1
    run.failures.extend(report.get("problems", []))
    log(f"== done in {(time.time() - started) / 60:.1f} min: {os.path.join(a.out, 'report.md')}")
    problems = sorted(set(run.failures))
    if problems:
        log(f"== {len(problems)} problem(s):")
        for p in problems:
            log(f"   {p}")
        return 130 if interrupted else 1
    log("== every test reconciled, 0 failed requests")
    return 0

