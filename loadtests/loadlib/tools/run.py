"""Running load tools: one command to completion with its own resource usage
(run_measured), one adapter's run pinned to a CPU with the tool's CPU time in
the result (run_tool), and the list of adapters with what is missing (adapters).

The tool's CPU comes from wait4() on its pid, i.e. RUSAGE_CHILDREN of that one
child: every thread's user + system time, with nothing of ours mixed in.
"""
import importlib
import os
import pkgutil
import signal
import subprocess
import tempfile
import threading
import time

from .. import netcheck, procs

# commands of run_measured that are still running, for a cleanup on interruption
LIVE = set()


def stop_live():
    """Ends the commands run_measured started and has not reaped (an interrupted run)."""
    for p in list(LIVE):
        try:
            p.terminate()
            p.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            p.kill()
        LIVE.discard(p)


def run_measured(cmd, env=None, cwd=None, timeout=None, log_path=None, split_stderr=False):
    """Runs a command to completion; returns {"rc", "timed_out", "cpu_s", "maxrss_bytes",
    "elapsed_s", "output"} (stdout and stderr together, or "output" and "stderr" with
    split_stderr). A command that outlives `timeout` seconds gets SIGTERM, then SIGKILL."""
    out = open(log_path, "w+b") if log_path else subprocess.PIPE
    err = subprocess.PIPE if split_stderr else subprocess.STDOUT
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
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
    text, errtext = b"", b""
    if split_stderr:
        # both pipes at once, or a chatty tool blocks on the one nobody reads
        collected = {}
        reader = threading.Thread(target=lambda: collected.update(err=p.stderr.read()), daemon=True)
        reader.start()
    if out is subprocess.PIPE:
        text = p.stdout.read()
    if split_stderr:
        reader.join()
        errtext = collected.get("err", b"")
        p.stderr.close()
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
    res = {
        "rc": p.returncode,
        "timed_out": bool(killed),
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "maxrss_bytes": ru.ru_maxrss * 1024,
        "elapsed_s": elapsed,
        "output": text.decode("utf-8", "replace"),
    }
    if split_stderr:
        res["stderr"] = errtext.decode("utf-8", "replace")
    return res


class ToolFailed(RuntimeError):
    """The tool did not run, or ran and left nothing its adapter could parse."""


def run_tool(adapter, spec, cpu=None, workdir=None, timeout=None, env=None):
    """Runs one adapter's command for `spec` (pinned to `cpu` with taskset when given)
    and returns its ToolResult with cpu_s set to the tool's own user + system time.
    The URL must be on loopback (netcheck.NotLoopback otherwise)."""
    netcheck.require_loopback_url(spec.url, "the load's URL")
    own_dir = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix=f"loadlib-{adapter.NAME}-")
    try:
        argv = procs.taskset(adapter.command(spec, workdir), cpu)
        limit = timeout or (spec.duration_s or spec.timeout_s) + spec.timeout_s + 30
        res = run_measured(argv, env=env, cwd=workdir, timeout=limit, split_stderr=True)
        if res["timed_out"]:
            raise ToolFailed(f"{adapter.NAME} ran past {limit:.0f} s and was stopped")
        try:
            result = adapter.parse(res["output"], res["stderr"], workdir, spec)
        except (ValueError, KeyError, OSError) as e:
            tail = (res["stderr"].strip() or res["output"].strip()).splitlines()[-3:]
            raise ToolFailed(f"{adapter.NAME} exited with {res['rc']}: {e} ({' | '.join(tail) or 'no output'})") \
                from None
        result.cpu_s = res["cpu_s"]
        return result
    finally:
        if own_dir:
            import shutil
            shutil.rmtree(workdir, ignore_errors=True)


def adapters():
    """[(name, module or None, why)] for every adapter module in this package, in name
    order: module None and why = 'not installed: <INSTALL_HINT>' when its tool is
    missing, or 'cannot load: <error>' when the module itself is broken."""
    out = []
    for info in sorted(pkgutil.iter_modules(importlib.import_module(__package__).__path__), key=lambda i: i.name):
        if info.name in ("base", "run") or info.name.startswith(("_", "test", "ws_")):
            continue                         # ws_*: the WebSocket adapters (ws_run.py lists them)
        try:
            mod = importlib.import_module(f"{__package__}.{info.name}")
        except Exception as e:   # one broken adapter must not hide the others
            out.append((info.name, None, f"cannot load: {e}"))
            continue
        name = getattr(mod, "NAME", info.name)
        if not all(hasattr(mod, f) for f in ("available", "version", "command", "parse")):
            out.append((name, None, "cannot load: not an adapter (see tools/base.py)"))
        elif not mod.available():
            out.append((name, None, f"not installed: {getattr(mod, 'INSTALL_HINT', '')}".rstrip(": ")))
        else:
            out.append((name, mod, ""))
    return out
