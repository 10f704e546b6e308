"""The Dockerfiles: notesd's image built by server/build.sh and run as UID 10001 with
the runtime packages its binary needs, the peers' image with one node_modules and the
runtimes the harness pins, and the dockerignore files beside them."""
import json
import os
import re
import shutil
import subprocess

from . import Skip, check
from .files import (DOCKERFILE, HERE, PEER_BASES, PEER_RUNTIMES, PEERS_DOCKERFILE, ROOT,
                    RUNTIMES_DOCKERFILE, compose, dockerfile_lines, dockerfile_stages, rel)

RUNTIME_PACKAGES = {"libh2o-evloop0.13", "libpq5", "libcjson1", "libbrotli1", "ca-certificates"}


def runtime_packages():
    """Packages the notesd runtime stage installs, or None when it does not
    install them in exactly one apt-get install."""
    run = dockerfile_stages(DOCKERFILE)[-1][1]
    installs = [i for i in run if "apt-get install" in i]
    if len(installs) != 1:
        return None, []
    words = installs[0].split("apt-get install", 1)[1].split("&&")[0].split()
    return {w for w in words if not w.startswith("-")}, words


@check("Dockerfile: build.sh build stage, non-root runtime stage")
def check_dockerfile():
    problems = []
    stages = dockerfile_stages(DOCKERFILE)[1:]
    if len(stages) != 2:
        return [f"expected two stages (build, runtime), found {len(stages)}"]
    (build_from, build), (run_from, run) = stages
    if "debian:bookworm" not in build_from or "debian:bookworm" not in run_from:
        problems.append("both stages must be debian:bookworm-*-slim")
    if build_from.split()[1] != run_from.split()[1]:
        problems.append("build and runtime stages must use the same base image tag")
    runs = [i for i in build if i.startswith("RUN ")]
    if not any(re.search(r"(^|[\s;&|])server/build\.sh(\s|$)", r[4:]) and "--deps-only" not in r for r in runs):
        problems.append("build stage does not build with server/build.sh")
    if any("apt-get install" in r for r in runs):
        problems.append("build stage installs packages itself; server/build.sh holds the list")
    build_sh = (ROOT / "server" / "build.sh").read_text(encoding="utf-8")
    m = re.search(r"^PACKAGES=\(([^)]*)\)", build_sh, re.M)
    if m:
        dup = [p for p in m.group(1).split() if p not in RUNTIME_PACKAGES and
               re.search(rf"(?<![\w.-]){re.escape(p)}(?![\w.-])", "\n".join(run + build))]
        if dup:
            problems.append(f"Dockerfile repeats build.sh's packages: {dup}")
    text_run = "\n".join(run)
    if "USER 10001" not in run:
        problems.append("runtime stage must have USER 10001")
    if not any(re.fullmatch(r"EXPOSE\s+8080\s+9091", i) for i in run):
        problems.append("runtime stage must EXPOSE 8080 9091")
    hc = [i for i in run if i.startswith("HEALTHCHECK")]
    if len(hc) != 1 or "/readyz" not in hc[0] or "127.0.0.1" not in hc[0]:
        problems.append("runtime stage needs one HEALTHCHECK on 127.0.0.1 .../readyz")
    else:
        cmd = json.loads(hc[0].split(" CMD ", 1)[1])
        if cmd[0] != "bash":
            problems.append("HEALTHCHECK uses bash's /dev/tcp (curl is not in the image)")
    if 'ENTRYPOINT ["/usr/local/bin/notesd"]' not in run:
        problems.append('ENTRYPOINT must be ["/usr/local/bin/notesd"]')
    if not re.search(r"groupadd\b[^\n]*--gid 10001", text_run) or \
       not re.search(r"useradd\b[^\n]*--no-log-init[^\n]*--uid 10001", text_run):
        problems.append("runtime stage must create group and user 10001 (useradd --no-log-init)")
    pkgs, words = runtime_packages()
    if pkgs is None:
        problems.append("runtime stage must install its libraries in one apt-get install")
    else:
        if pkgs != RUNTIME_PACKAGES:
            problems.append(f"runtime packages are {sorted(pkgs)}, expected {sorted(RUNTIME_PACKAGES)}")
        if "--no-install-recommends" not in words:
            problems.append("runtime apt-get install needs --no-install-recommends")
    for want in ("COPY --from=build", "COPY sql/", "COPY loadtests/static/"):
        if not any(i.startswith(want) for i in run):
            problems.append(f"runtime stage lacks {want}")
    return problems


@check("Dockerfile.peers: one node_modules, three runtimes")
def check_peers_dockerfile():
    problems = []
    lines = dockerfile_lines(PEERS_DOCKERFILE)
    stages = dockerfile_stages(PEERS_DOCKERFILE)
    glob_args = [i for i in stages[0][1] if i.startswith("ARG BASE")]
    if not glob_args:
        problems.append("ARG BASE must come before the first FROM")
    if len(stages) != 3:
        return problems + [f"expected two stages (deps, runtime), found {len(stages) - 1}"]
    (deps_from, deps), (run_from, run) = stages[1], stages[2]
    if not deps_from.startswith(f"FROM {PEER_BASES['node'][0]} AS"):
        problems.append(f"dependencies must be installed in {PEER_BASES['node'][0]}")
    if "RUN npm ci --omit=dev" not in deps:
        problems.append("dependency stage must run npm ci --omit=dev")
    if not any("package-lock.json" in i and i.startswith("COPY") for i in deps):
        problems.append("dependency stage must copy package-lock.json")
    if run_from.split()[1] not in ("${BASE}", "$BASE"):
        problems.append("runtime stage must be FROM ${BASE}")
    if not any(i.startswith("ARG RUNTIME") for i in run):
        problems.append("runtime stage needs ARG RUNTIME")
    if not any(i.startswith("COPY --from=deps") and "node_modules" in i for i in run):
        problems.append("runtime stage must copy node_modules from the dependency stage")
    if not any(re.fullmatch(r"EXPOSE\s+8080\s+9091", i) for i in run):
        problems.append("runtime stage must EXPOSE 8080 9091")
    if not any(re.match(r"USER\s+10001", i) for i in run):
        problems.append("runtime stage must run as UID 10001")
    ep = [i for i in lines if i.startswith("ENTRYPOINT")]
    script = " ".join(json.loads(ep[0].split(None, 1)[1])) if ep else ""
    for rt, (_, start) in PEER_BASES.items():
        if f"{rt}) exec {start} ;;" not in script:
            problems.append(f"ENTRYPOINT does not start {rt} with `{start}`")
    services = compose(HERE / "compose.yaml")["services"]
    for rt, (base, _) in PEER_BASES.items():
        svc = services.get(rt) or {}
        build = svc.get("build") or {}
        if build.get("dockerfile") != "docker/Dockerfile.peers" or \
           (build.get("args") or {}) != {"BASE": base, "RUNTIME": rt}:
            problems.append(f"compose service {rt} must build docker/Dockerfile.peers with BASE={base} RUNTIME={rt}")
        if svc.get("profiles") != ["peers"]:
            problems.append(f"compose service {rt} must be in profile peers")
    return problems


def image_version(ref):
    """The x.y.z in an image's tag: node:26.10.0-bookworm-slim, oven/bun:1.4.4-debian,
    denoland/deno:debian-2.9.6."""
    m = re.search(r"(?<![\d.])(\d+\.\d+\.\d+)(?![\d.])", ref.rsplit(":", 1)[-1])
    return m.group(1) if m else None


@check("peer bases run the harness's runtime versions (loadtests/peers/runtimes)")
def check_peer_versions():
    """The peer images run the runtimes the harness runs: every base's tag has
    the version loadtests/peers/runtimes pins (package.json and its lockfile),
    and the files that name the bases name these."""
    problems = []
    pins = json.loads((PEER_RUNTIMES / "package.json").read_text(encoding="utf-8"))["dependencies"]
    lock = json.loads((PEER_RUNTIMES / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    for rt, (base, _) in PEER_BASES.items():
        version = image_version(base)
        locked = (lock.get(f"node_modules/{rt}") or {}).get("version")
        if version is None:
            problems.append(f"{base}: no x.y.z version in the tag")
        elif version != pins.get(rt) or version != locked:
            problems.append(f"{base} runs {rt} {version}, the harness pins {pins.get(rt)} "
                            f"(package.json) and locks {locked}: bump them together")
    for path in (PEERS_DOCKERFILE, RUNTIMES_DOCKERFILE, HERE / "README.md"):
        text = path.read_text(encoding="utf-8")
        for rt, (base, _) in PEER_BASES.items():
            if base not in text:
                problems.append(f"{rel(path)} does not name {rt}'s base {base}")
    targets = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", RUNTIMES_DOCKERFILE.read_text(), re.M | re.I))
    if targets != set(PEER_BASES):
        problems.append(f"{rel(RUNTIMES_DOCKERFILE)} targets {sorted(targets)}, expected {sorted(PEER_BASES)}")
    return problems


def ignore_entries(path):
    return {l.strip() for l in path.read_text(encoding="utf-8").splitlines()
            if l.strip() and not l.startswith("#")}


@check("dockerignore files next to the Dockerfiles")
def check_dockerignore():
    problems = []
    root = ROOT / ".dockerignore"
    if not root.exists():
        problems.append(".dockerignore missing at the root (Engine 20.10 and the classic builder read only it)")
    for df in (DOCKERFILE, PEERS_DOCKERFILE):
        ign = df.with_name(df.name + ".dockerignore")
        if root.exists() and ign.exists() and ignore_entries(ign) != ignore_entries(root):
            problems.append(f"{rel(ign)} and .dockerignore list different paths")
    for df in (DOCKERFILE, PEERS_DOCKERFILE):
        ign = df.with_name(df.name + ".dockerignore")
        if not ign.exists():
            problems.append(f"{rel(ign)} missing (BuildKit reads <Dockerfile>.dockerignore)")
            continue
        entries = {l.strip() for l in ign.read_text(encoding="utf-8").splitlines()
                   if l.strip() and not l.startswith("#")}
        for want in (".git", ".localdb", "build", "build-*", "**/node_modules"):
            if want not in entries:
                problems.append(f"{rel(ign)} does not exclude {want}")
    return problems


@check("runtime packages cover the binary's shared libraries")
def check_runtime_libraries():
    binary = next((p for p in (ROOT / "build" / "notesd",) if p.exists()), None)
    tools = all(shutil.which(t) for t in ("ldd", "dpkg", "apt-cache"))
    if not binary or not tools:
        raise Skip("needs a built build/notesd and ldd, dpkg, apt-cache")
    packages, _ = runtime_packages()
    if not packages:
        return ["cannot read the runtime stage's apt-get install"]
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = re.findall(r"=>\s+(/\S+)", out)
    owners = set()
    problems = []
    for lib in libs:
        real = os.path.realpath(lib)
        r = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True)
        if r.returncode != 0:
            r = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"{lib}: no Debian package owns it")
            continue
        owners.add(r.stdout.split(":", 1)[0].split(",")[0].strip())
    r = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                        "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"]
                       + sorted(packages), capture_output=True, text=True)
    closure = {l.strip() for l in r.stdout.splitlines() if l and not l.startswith(" ")}
    closure = {c.split(":")[0] for c in closure}
    for pkg in sorted(owners - closure):
        problems.append(f"the binary needs {pkg}, which the runtime packages do not bring in")
    return problems
