"""The Prometheus configurations: promtool accepts each, no scrape times out after its
interval, the live ones scrape every second."""
import shutil
import subprocess

from . import check, register
from .files import LIVE_CONFIGS, PROMETHEUS_CONFIGS, duration_seconds, load_yaml, one_line, rel


def check_promtool(path):
    def fn():
        promtool = shutil.which("promtool")
        if not promtool:
            return ["promtool not found (Debian package `prometheus`)"]
        r = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
        if r.returncode != 0:
            return [f"promtool check config {rel(path)}: {one_line(r.stdout + r.stderr)}"]
        return []
    return fn


for _path in PROMETHEUS_CONFIGS:
    register(f"promtool check config {rel(_path)}", check_promtool(_path))


@check("prometheus scrape_timeout <= scrape_interval, 1s scrapes")
def check_scrape_timing():
    problems = []
    for path in PROMETHEUS_CONFIGS:
        cfg = load_yaml(path) or {}
        g = cfg.get("global", {}) or {}
        g_int = duration_seconds(g.get("scrape_interval", "1m"))
        g_to = duration_seconds(g.get("scrape_timeout", "10s"))
        if path in LIVE_CONFIGS and (g_int != 1 or "scrape_timeout" not in g):
            problems.append(f"{rel(path)}: global scrape_interval must be 1s with an explicit scrape_timeout")
        if g_to > g_int:
            problems.append(f"{rel(path)}: global scrape_timeout {g_to}s > scrape_interval {g_int}s")
        for job in cfg.get("scrape_configs", []) or []:
            i = duration_seconds(job.get("scrape_interval", g.get("scrape_interval", "1m")))
            t = duration_seconds(job.get("scrape_timeout", g.get("scrape_timeout", "10s")))
            if t > i:
                problems.append(f"{rel(path)} job {job.get('job_name')}: scrape_timeout {t}s > scrape_interval {i}s")
    return problems
