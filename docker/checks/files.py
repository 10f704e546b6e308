"""Where the files that docker/'s checks read are, and how they are read: YAML,
Compose's variables, Dockerfile instructions, the tables of docs/configuration.md and
docs/metrics.md, the provisioned dashboards. It holds no checks; the other modules of
the package read through it.
"""
import json
import re
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent.parent  # docker/, the directory the checks are about
ROOT = HERE.parent

TESTRUN = HERE / "kubernetes" / "overlays" / "k6" / "testrun.yaml"
OFFLINE_COMPOSE = HERE / "compose.offline.yaml"
OFFLINE_PROMETHEUS = HERE / "prometheus" / "prometheus.offline.yml"
OFFLINE_DOCKERFILE = HERE / "offline" / "Dockerfile"
PROMETHEUS_CONFIGS = [
    HERE / "prometheus" / "prometheus.yml",
    HERE / "prometheus" / "prometheus.three-machines.yml",
    HERE / "replay" / "prometheus.yml",
]
LIVE_CONFIGS = PROMETHEUS_CONFIGS[:2]  # scraping ones: 1 s, as the comparison
COMPOSE_FILES = [HERE / "compose.yaml", HERE / "compose.load.yaml", HERE / "replay" / "compose.yaml",
                 HERE / "compose.offline.yaml"]
OVERLAYS = {"compose.load.yaml", "compose.offline.yaml"}  # services there may add to compose.yaml's
# Variables compose.load.yaml requires (${VAR:?...}); any address will do here.
COMPOSE_TEST_ENV = {"APP_HOST": "192.0.2.10", "DB_HOST": "192.0.2.11"}
DATASOURCES = HERE / "grafana" / "provisioning" / "datasources" / "prometheus.yaml"
PROVIDERS = HERE / "grafana" / "provisioning" / "dashboards" / "dashboards.yaml"
DEFINITIONS = HERE / "grafana" / "provisioning" / "dashboards" / "definitions"
DOCKERFILE = HERE / "Dockerfile"
PEERS_DOCKERFILE = HERE / "Dockerfile.peers"
# notesd's documented settings and metrics, which the files here must agree with.
CONFIG_DOC = ROOT / "docs" / "configuration.md"
METRICS_DOC = ROOT / "docs" / "metrics.md"
# The three runtime images and start commands. Their versions are the harness's
# (PEER_RUNTIMES, from npm), which check_peer_versions holds them to.
PEER_BASES = {
    "node": ("node:26.10.0-bookworm-slim", "node server.js"),
    "bun": ("oven/bun:1.4.4-debian", "bun server.js"),
    "deno": ("denoland/deno:debian-2.9.6", "deno run -A server.js"),
}
PEER_RUNTIMES = ROOT / "loadtests" / "peers" / "runtimes"
# The image test's stand-ins for those bases, one target per runtime.
RUNTIMES_DOCKERFILE = HERE / "tests" / "Dockerfile.runtimes"


def one_line(text):
    return " | ".join(l.strip() for l in text.strip().splitlines() if l.strip())


def rel(p):
    try:
        return str(Path(p).resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


_INTERP = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def interpolate(value, env=None):
    """Compose-style ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?err}, $$."""
    env = env or {}

    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(4)
        op, arg = m.group(2), m.group(3)
        val = env.get(name)
        if op in (":-", "-"):
            if val is None or (op == ":-" and val == ""):
                return arg
            return val
        if op in (":?", "?"):
            if val is None or (op == ":?" and val == ""):
                raise ValueError(f"${{{name}}} required: {arg}")
            return val
        return val or ""

    if isinstance(value, str):
        return _INTERP.sub(sub, value)
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def duration_seconds(text):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    parts = re.findall(r"(\d+)(ms|[smhdwy])", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * units[u] for n, u in parts)


def image_pinned(ref):
    """A reference with an explicit tag other than latest (or a digest)."""
    if "@sha256:" in ref:
        return True
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last:
        return False
    tag = last.split(":", 1)[1]
    return bool(tag) and tag != "latest" and "$" not in tag


def dockerfile_lines(path):
    """Instructions with continuation lines joined and comments dropped."""
    text = Path(path).read_text(encoding="utf-8")
    out, cur = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        out.append(cur.strip())
        cur = ""
    if cur:
        out.append(cur.strip())
    return out


def dockerfile_stages(path):
    """[(from_line, [instructions])]; global instructions before FROM under None."""
    stages = [(None, [])]
    for ins in dockerfile_lines(path):
        if ins.upper().startswith("FROM "):
            stages.append((ins, []))
        else:
            stages[-1][1].append(ins)
    return stages


def compose(path):
    """A compose file with variables at their defaults (compose.load.yaml's
    required ones set to test addresses)."""
    env = COMPOSE_TEST_ENV if Path(path).name == "compose.load.yaml" else {}
    return interpolate(load_yaml(path), env)


def documented_metrics():
    """name -> type, from docs/metrics.md's metrics table rows: | `name` | type | ..."""
    rows = re.findall(r"^\|\s*`([A-Za-z_:][A-Za-z0-9_:]*)`\s*\|\s*(counter|gauge|histogram|summary|untyped)\s*\|",
                      METRICS_DOC.read_text(encoding="utf-8"), re.M)
    return dict(rows)


def documented_defaults():
    """VARIABLE -> default, from docs/configuration.md's settings table."""
    rows = re.findall(r"^\|\s*`--[a-z-]+`\s*\|\s*`([A-Z_]+)`\s*\|\s*`?([^`|]*?)`?\s*\|",
                      CONFIG_DOC.read_text(encoding="utf-8"), re.M)
    return dict(rows)


def dashboards():
    out = {}
    for path in sorted(DEFINITIONS.glob("*.json")):
        out[path.name] = json.loads(path.read_text(encoding="utf-8"))
    return out


def dashboard_queries(dash):
    """(where, expr) for every panel target and every query variable."""
    out = []
    for panel in all_panels(dash):
        for t in panel.get("targets", []):
            if t.get("expr"):
                out.append((f"panel {panel.get('title')!r} {t.get('refId')}", t["expr"]))
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            q = var.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            if q:
                out.append((f"variable {var.get('name')!r}", q))
    for ann in dash.get("annotations", {}).get("list", []):
        if ann.get("expr"):
            out.append((f"annotation {ann.get('name')!r}", ann["expr"]))
    return out


def all_panels(dash):
    for panel in dash.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # panels inside collapsed rows
