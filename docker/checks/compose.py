"""The Compose files: they parse, pin every image, start the servers after a healthy
database, give the database and Prometheus the settings the comparison needs, and
docker-compose accepts them."""
import concurrent.futures
import os
import re
import shutil
import subprocess

from . import Skip, check
from .files import (COMPOSE_FILES, COMPOSE_TEST_ENV, DOCKERFILE, HERE, OVERLAYS, PEERS_DOCKERFILE, ROOT,
                    compose, dockerfile_lines, image_pinned, load_yaml, one_line, rel)
from .metrics import POSTGRES_EXPORTER_TAG


@check("compose files parse")
def check_compose_parse():
    problems = []
    for path in COMPOSE_FILES:
        data = load_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
            problems.append(f"{rel(path)}: no services mapping")
    return problems


@check("images pinned (compose, build args, FROM), no :latest")
def check_images_pinned():
    problems = []
    for path in COMPOSE_FILES:
        for name, svc in (compose(path).get("services") or {}).items():
            if "image" in svc and not image_pinned(svc["image"]):
                problems.append(f"{rel(path)} service {name}: image {svc['image']!r} has no pinned tag")
            if "image" not in svc and "build" not in svc and path.name not in OVERLAYS:
                problems.append(f"{rel(path)} service {name}: neither image nor build")
            args = ((svc.get("build") or {}) if isinstance(svc.get("build"), dict) else {}).get("args") or {}
            if "BASE" in args and not image_pinned(args["BASE"]):
                problems.append(f"{rel(path)} service {name}: build arg BASE {args['BASE']!r} is not pinned")
    exporter = compose(HERE / "compose.yaml")["services"]["postgres_exporter"]["image"]
    if exporter.rsplit(":", 1)[-1] != POSTGRES_EXPORTER_TAG:
        problems.append(f"postgres_exporter is now {exporter}: check POSTGRES_EXPORTER_METRICS against "
                        f"that release, then update POSTGRES_EXPORTER_TAG")
    for df in (DOCKERFILE, PEERS_DOCKERFILE):
        args = {}
        for ins in dockerfile_lines(df):
            m = re.match(r"ARG\s+([A-Za-z_]+)=(\S+)", ins)
            if m:
                args[m.group(1)] = m.group(2)
            m = re.match(r"FROM\s+(?:--platform=\S+\s+)?(\S+)", ins, re.I)
            if m:
                ref = re.sub(r"\$\{?([A-Za-z_]+)\}?", lambda a: args.get(a.group(1), "$" + a.group(1)), m.group(1))
                if not image_pinned(ref):
                    problems.append(f"{rel(df)}: {ins!r} is not a pinned image")
    for path in sorted(HERE.rglob("*")):
        if path.is_file() and path.suffix in {".yaml", ".yml", ".md", ""} and path.name != "check.py":
            for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if re.search(r"[\w/.-]+:latest\b", line):
                    problems.append(f"{rel(path)}:{i}: refers to a :latest image")
    return problems


@check("server and peers wait for a healthy database")
def check_depends_healthy():
    problems = []
    services = compose(HERE / "compose.yaml")["services"]
    for name in ("notesd", "node", "bun", "deno", "postgres_exporter"):
        dep = (services.get(name) or {}).get("depends_on")
        if not isinstance(dep, dict) or (dep.get("db") or {}).get("condition") != "service_healthy":
            problems.append(f"compose.yaml service {name}: depends_on db must have condition: service_healthy")
    return problems


@check("db service: TCP health check, init scripts, settings")
def check_db_healthcheck():
    problems = []
    db = compose(HERE / "compose.yaml")["services"]["db"]
    test = (db.get("healthcheck") or {}).get("test") or []
    words = test if isinstance(test, list) else test.split()
    if "pg_isready" not in words:
        problems.append("db healthcheck does not run pg_isready")
    if not any(words[i] == "-h" and words[i + 1] == "127.0.0.1" for i in range(len(words) - 1)):
        problems.append("db healthcheck must connect over TCP: pg_isready -h 127.0.0.1")
    if db.get("image", "").split(":")[0] != "postgres":
        problems.append("db image is not the official postgres image")
    env = db.get("environment") or {}
    if env.get("POSTGRES_DB") != "notes" or not env.get("POSTGRES_PASSWORD"):
        problems.append("db needs POSTGRES_DB=notes and a POSTGRES_PASSWORD")
    cmd = " ".join(db.get("command") or [])
    for want in ("shared_preload_libraries=pg_stat_statements", "max_connections=200"):
        if want not in cmd:
            problems.append(f"db command lacks {want}")
    mounts = {v.split(":")[1]: v.split(":")[0] for v in db.get("volumes", []) if ":" in v}
    for target, source in (("/docker-entrypoint-initdb.d/01-schema.sql", "../sql/schema.sql"),
                           ("/docker-entrypoint-initdb.d/02-seed.sql", "../sql/seed.sql"),
                           ("/docker-entrypoint-initdb.d/03-pg_stat_statements.sql", "../sql/pg_stat_statements.sql")):
        if mounts.get(target) != source:
            problems.append(f"db: {source} must be mounted at {target}")
    if not db.get("shm_size"):
        problems.append("db: set shm_size")
    return problems


@check("prometheus flags, replay retention, k6 remote write")
def check_prometheus_service():
    problems = []
    svc = compose(HERE / "compose.yaml")["services"]["prometheus"]
    cmd = svc.get("command") or []
    for flag in ("--web.enable-remote-write-receiver", "--web.enable-admin-api"):
        if flag not in cmd:
            problems.append(f"prometheus lacks {flag}")
    replay = compose(HERE / "replay" / "compose.yaml")["services"]["prometheus"].get("command") or []
    if "--storage.tsdb.retention.time=100y" not in replay:
        problems.append("replay prometheus must keep old data: --storage.tsdb.retention.time=100y")
    k6 = compose(HERE / "compose.yaml")["services"]["k6"]
    kcmd = k6.get("command") or []
    if "experimental-prometheus-rw" not in kcmd or "-o" not in kcmd:
        problems.append("k6 must run with -o experimental-prometheus-rw")
    if (k6.get("environment") or {}).get("K6_PROMETHEUS_RW_SERVER_URL") != "http://prometheus:9090/api/v1/write":
        problems.append("k6 K6_PROMETHEUS_RW_SERVER_URL must be http://prometheus:9090/api/v1/write")
    for var in ("MODE", "VUS", "DURATION", "RT", "ROUND", "TESTID", "BASE_URL"):
        if var not in (k6.get("environment") or {}):
            problems.append(f"k6 environment lacks {var}")
    if any(a == "--tag" or str(a).startswith("--tag=") for a in kcmd):
        problems.append("k6 must not run with --tag: it replaces the script's tags (runtime, mode, "
                        "round), which every dashboard panel selects; TESTID adds testid to them")
    return problems


@check("docker-compose config -q")
def check_docker_compose_config():
    exe = shutil.which("docker-compose")
    if not exe:
        raise Skip("docker-compose not installed (Debian package docker-compose); "
                   "the compose files are checked by this script only")
    problems = []
    runs = [([HERE / "compose.yaml"], {}),
            ([HERE / "compose.yaml", HERE / "compose.load.yaml"], COMPOSE_TEST_ENV),
            ([HERE / "replay" / "compose.yaml"], {}),
            ([HERE / "compose.yaml", HERE / "compose.offline.yaml"], {})]
    def config(files, extra):
        cmd = [exe]
        for f in files:
            cmd += ["-f", str(f)]
        cmd += ["--profile", "peers", "--profile", "k6", "config", "-q"]
        env = dict(os.environ, **extra)
        for k in ("APP_HOST", "DB_HOST"):
            if k not in extra:
                env.pop(k, None)
        return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT))
    # Side by side: each run is mostly docker-compose's own start-up.
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        results = list(pool.map(lambda run: config(*run), runs))
    for (files, _), r in zip(runs, results):
        if r.returncode != 0:
            problems.append(f"docker-compose {' '.join(rel(f) for f in files)} config -q: "
                            f"{one_line(r.stdout + r.stderr)}")
    return problems
