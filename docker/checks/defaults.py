"""notesd's defaults and the paths the files name: ports, hosts and directories in the
Dockerfile, Compose and Prometheus agree with docs/configuration.md, and every
mounted or copied path exists."""
import re

from . import check
from .files import (COMPOSE_FILES, CONFIG_DOC, DOCKERFILE, HERE, PEER_BASES, PEERS_DOCKERFILE,
                    PROMETHEUS_CONFIGS, ROOT, compose, dockerfile_lines, dockerfile_stages,
                    documented_defaults, load_yaml, rel)


@check("ports and defaults agree with docs/configuration.md")
def check_defaults():
    problems = []
    d = documented_defaults()
    port, mport, host = d.get("PORT"), d.get("METRICS_PORT"), d.get("HOST")
    if not (port and mport and host):
        return [f"could not read PORT, METRICS_PORT, HOST defaults from {rel(CONFIG_DOC)}"]
    env_line = " ".join(i for i in dockerfile_stages(DOCKERFILE)[-1][1] if i.startswith("ENV "))
    env = dict(re.findall(r"([A-Z_]+)=(\S+)", env_line))
    if env.get("PORT") != port or env.get("METRICS_PORT") != mport or env.get("HOST") != host:
        problems.append(f"Dockerfile ENV HOST/PORT/METRICS_PORT {env} differ from {rel(CONFIG_DOC)} ({host}, {port}, {mport})")
    static = env.get("STATIC_DIR", "")
    copies = [i for i in dockerfile_stages(DOCKERFILE)[-1][1] if i.startswith("COPY loadtests/static/")]
    if not static or not copies or copies[0].split()[-1].rstrip("/") != static.rstrip("/"):
        problems.append(f"STATIC_DIR {static!r} is not where loadtests/static/ is copied")
    hc = [i for i in dockerfile_lines(DOCKERFILE) if i.startswith("HEALTHCHECK")]
    if hc and f"${{METRICS_PORT:-{mport}}}" not in hc[0]:
        problems.append(f"HEALTHCHECK does not default to METRICS_PORT {mport}")

    svc = compose(HERE / "compose.yaml")["services"]
    inner = {p.rsplit(":", 1)[1].split("/")[0] for p in svc["notesd"].get("ports", [])}
    if inner != {port, mport}:
        problems.append(f"compose notesd publishes container ports {sorted(inner)}, "
                        f"the documented defaults are {port}, {mport}")
    for rt in PEER_BASES:
        inner = {p.rsplit(":", 1)[1].split("/")[0] for p in svc[rt].get("ports", [])}
        if inner != {"8080", "9091"}:
            problems.append(f"compose {rt} publishes container ports {sorted(inner)}, the peer listens on 8080, 9091")
    peer_js = ROOT / "loadtests" / "peers" / "express" / "server.js"
    if peer_js.exists():
        js = peer_js.read_text(encoding="utf-8")
        for var, want in (("PORT", "8080"), ("METRICS_PORT", "9091")):
            m = re.search(rf"process\.env\.{var}\s*\|\|\s*(\d+)", js)
            if m and m.group(1) != want:
                problems.append(f"server.js default {var} is {m.group(1)}, compose assumes {want}")
    else:
        print("note loadtests/peers/express/server.js not present: peer port defaults not compared")
    k6_url = svc["k6"]["environment"]["BASE_URL"]
    if k6_url != f"http://notesd:{port}":
        problems.append(f"k6 default target {k6_url} is not http://notesd:{port}")
    if not svc["notesd"]["environment"]["DB_URL"].endswith("@db:5432/notes"):
        problems.append("notesd DB_URL does not default to the db service's notes database")

    prom = load_yaml(PROMETHEUS_CONFIGS[0])
    jobs = {j["job_name"]: [t for sc in j.get("static_configs", []) for t in sc.get("targets", [])]
            for j in prom["scrape_configs"]}
    if jobs.get("notesd") != [f"notesd:{mport}"]:
        problems.append(f"prometheus job notesd scrapes {jobs.get('notesd')}, expected notesd:{mport}")
    for rt in PEER_BASES:
        if jobs.get(rt) != [f"{rt}:9091"]:
            problems.append(f"prometheus job {rt} scrapes {jobs.get(rt)}, expected {rt}:9091")
    if not any(t == "postgres_exporter:9187" for ts in jobs.values() for t in ts):
        problems.append("prometheus does not scrape postgres_exporter:9187")
    three = load_yaml(PROMETHEUS_CONFIGS[1])
    tjobs = {j["job_name"]: [t for sc in j.get("static_configs", []) for t in sc.get("targets", [])]
             for j in three["scrape_configs"]}
    published = {"notesd": mport}
    for rt in PEER_BASES:
        for p in svc[rt].get("ports", []):
            if p.endswith(":9091"):
                published[rt] = p.rsplit(":", 2)[-2]
    for job, hp in published.items():
        if tjobs.get(job) != [f"app-host:{hp}"]:
            problems.append(f"three-machine job {job} scrapes {tjobs.get(job)}, "
                            f"but compose publishes its metrics on app-host:{hp}")
    return problems


@check("mounted and copied paths exist")
def check_paths():
    problems = []
    for path in COMPOSE_FILES:
        for name, svc in (compose(path).get("services") or {}).items():
            for v in svc.get("volumes", []) or []:
                src = v.split(":")[0]
                if not src.startswith((".", "/")):
                    continue  # named volume
                p = (path.parent / src).resolve()
                if not p.exists() and p != (HERE / "replay" / "data").resolve():
                    problems.append(f"{rel(path)} {name}: mount source {src} does not exist")
            b = svc.get("build")
            if isinstance(b, dict):
                ctx = (path.parent / b.get("context", ".")).resolve()
                if not (ctx / b.get("dockerfile", "Dockerfile")).exists():
                    problems.append(f"{rel(path)} {name}: {b.get('dockerfile')} not found in context {rel(ctx)}")
    svc = compose(HERE / "compose.yaml")["services"]
    script = svc["k6"]["command"][-1]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["k6"]["volumes"]}
    for target, src in mounts.items():
        if script.startswith(target + "/"):
            if not (HERE / src / script[len(target) + 1:]).exists():
                problems.append(f"k6 script {script} does not exist in {src}")
            break
    else:
        problems.append(f"k6 script {script} is not inside a mounted directory")
    home = svc["grafana"]["environment"].get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH", "")
    if home and not (HERE / "grafana" / "provisioning" / home.split("/etc/grafana/provisioning/", 1)[-1]).exists():
        problems.append(f"Grafana home dashboard {home} does not exist")
    for df in (DOCKERFILE, PEERS_DOCKERFILE):
        for ins in dockerfile_lines(df):
            if ins.startswith("COPY ") and "--from=" not in ins:
                for src in ins.split()[1:-1]:
                    if src.startswith("--"):
                        continue
                    if src != "." and not (ROOT / src).exists():
                        problems.append(f"{rel(df)}: COPY source {src} does not exist")
    return problems
