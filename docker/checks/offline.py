"""compose.offline.yaml, the overlay for machines that cannot pull: host networking,
Debian stand-ins built from docker/offline/Dockerfile, ports below the ephemeral
range, and its Prometheus template rendering to a valid configuration."""
import os
import re
import shutil
import subprocess
import tempfile

from . import check
from .files import (HERE, OFFLINE_COMPOSE, OFFLINE_DOCKERFILE, OFFLINE_PROMETHEUS, compose, load_yaml,
                    one_line, rel)


@check("compose.offline.yaml: host networking, Debian stand-ins, ports")
def check_offline_overlay():
    problems = []
    overlay = compose(OFFLINE_COMPOSE)["services"]
    base = compose(HERE / "compose.yaml")["services"]
    if set(overlay) != set(base):
        problems.append(f"compose.offline.yaml must name every service of compose.yaml "
                        f"(host networking for all): {sorted(set(base) ^ set(overlay))}")
    for name, svc in overlay.items():
        if svc.get("network_mode") != "host":
            problems.append(f"compose.offline.yaml {name}: network_mode must be host")
    targets = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", OFFLINE_DOCKERFILE.read_text(), re.M | re.I))
    for name, svc in overlay.items():
        b = svc.get("build")
        if b:
            if b.get("dockerfile") != "docker/offline/Dockerfile" or b.get("target") not in targets:
                problems.append(f"compose.offline.yaml {name}: build must name a target of docker/offline/Dockerfile")
            if b.get("network") != "host":
                problems.append(f"compose.offline.yaml {name}: build.network must be host (apt-get in RUN)")
            if not svc.get("image", "").startswith("notesd-offline/"):
                problems.append(f"compose.offline.yaml {name}: stand-in images are named notesd-offline/*")
    for m in re.finditer(r"\$\{(OFFLINE_[A-Z_]+_PORT):-(\d+)\}", OFFLINE_COMPOSE.read_text()):
        if not 1024 < int(m.group(2)) < 32768:
            problems.append(f"{m.group(1)} defaults to {m.group(2)}, not below the ephemeral range (32768)")
    exporter = overlay["postgres_exporter"]
    query = next((a.split("=", 1)[1] for a in exporter.get("command", []) if a.startswith("--extend.query-path=")), "")
    mounts = {v.split(":")[1]: v.split(":")[0] for v in exporter.get("volumes", [])}
    if query not in mounts or not (HERE / mounts[query]).exists():
        problems.append("postgres_exporter's --extend.query-path must be a mounted file of docker/offline")
    if "--collector.stat_statements" not in (base["postgres_exporter"].get("command") or []):
        problems.append("compose.yaml's postgres_exporter needs --collector.stat_statements")
    return problems


@check("prometheus.offline.yml renders to a valid config")
def check_offline_prometheus():
    """The template, rendered as the stand-in's entrypoint does with the
    overlay's defaults, passes promtool; every variable it uses is set."""
    promtool = shutil.which("promtool")
    if not promtool:
        return ["promtool not found (Debian package `prometheus`)"]
    env = {k: str(v) for k, v in compose(OFFLINE_COMPOSE)["services"]["prometheus"]["environment"].items()}
    problems, lines = [], []
    for line in OFFLINE_PROMETHEUS.read_text(encoding="utf-8").splitlines():
        if not line.lstrip().startswith("#"):
            for name in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", line):
                if name not in env:
                    problems.append(f"{rel(OFFLINE_PROMETHEUS)} uses ${{{name}}}, which the overlay does not set")
                line = line.replace("${" + name + "}", env.get(name, "0"))
        lines.append(line)
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        tmp = f.name
    try:
        r = subprocess.run([promtool, "check", "config", tmp], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"promtool check config (rendered): {one_line(r.stdout + r.stderr)}")
        jobs = {j["job_name"] for j in load_yaml(tmp)["scrape_configs"]}
        if not {"notesd", "postgres", "prometheus"} <= jobs:
            problems.append(f"offline jobs {sorted(jobs)} lack notesd, postgres or prometheus")
    finally:
        os.unlink(tmp)
    return problems
