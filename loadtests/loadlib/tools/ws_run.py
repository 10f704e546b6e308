"""Running WebSocket load tools: the ws_* adapters (tools/ws_base.py's contract)
and one adapter's run, pinned to a CPU, with the tool's own CPU time in the result."""
import importlib
import pkgutil
import shutil
import tempfile
import urllib.parse

from .. import netcheck, procs
from .run import ToolFailed, run_measured


def ws_adapters():
    """[(name, module or None, why)] of every tools/ws_<tool>.py, in name order; module None
    and why 'not installed: <INSTALL_HINT>' when the tool is missing."""
    out = []
    for info in sorted(pkgutil.iter_modules(importlib.import_module(__package__).__path__), key=lambda i: i.name):
        if not info.name.startswith("ws_") or info.name in ("ws_base", "ws_run"):
            continue
        mod = importlib.import_module(f"{__package__}.{info.name}")
        if mod.available():
            out.append((mod.NAME, mod, ""))
        else:
            out.append((mod.NAME, None, f"not installed: {mod.INSTALL_HINT}"))
    return out


def run_ws_tool(adapter, spec, cpu=None, timeout=60, env=None):
    """Runs one WebSocket adapter for `spec` (pinned to `cpu` when given); its WsResult with
    cpu_s set. The URL must be ws:// or wss:// on loopback."""
    u = urllib.parse.urlsplit(spec.url)
    if u.scheme not in ("ws", "wss"):
        raise netcheck.NotLoopback(f"a WebSocket load needs a ws:// URL (got {spec.url!r})")
    netcheck.require_loopback_url(spec.url.replace("ws", "http", 1), "the load's URL")
    workdir = tempfile.mkdtemp(prefix=f"loadlib-ws-{adapter.NAME}-")
    try:
        argv = procs.taskset(adapter.command(spec, workdir), cpu)
        res = run_measured(argv, env=env, cwd=workdir, timeout=timeout, split_stderr=True)
        if res["timed_out"]:
            raise ToolFailed(f"{adapter.NAME} ran past {timeout:.0f} s and was stopped")
        try:
            result = adapter.parse(res["output"], res["stderr"], workdir, spec)
        except (ValueError, KeyError, OSError) as e:
            tail = (res["stderr"].strip() or res["output"].strip()).splitlines()[-3:]
            raise ToolFailed(f"{adapter.NAME} exited with {res['rc']}: {e} "
                             f"({' | '.join(tail) or 'no output'})") from None
        result.cpu_s = res["cpu_s"]
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
