"""Grafana's provisioning: the data source the dashboards name, the provider and the
mounts, and the dashboards themselves (they parse, use that data source, are what
grafana/make_dashboards.py writes, and hold valid PromQL)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

from . import check
from .files import (DATASOURCES, DEFINITIONS, HERE, PROMETHEUS_CONFIGS, PROVIDERS, all_panels,
                    dashboard_queries, dashboards, load_yaml, one_line, rel)
from .metrics import LABEL_VALUES


def provisioned_datasource():
    ds = load_yaml(DATASOURCES)["datasources"]
    if len(ds) != 1:
        raise ValueError(f"{rel(DATASOURCES)}: expected one data source, found {len(ds)}")
    return ds[0]


@check("grafana data source provisioning")
def check_datasource():
    problems = []
    cfg = load_yaml(DATASOURCES)
    if cfg.get("apiVersion") != 1:
        problems.append("datasources: apiVersion must be 1")
    ds = provisioned_datasource()
    want = {"type": "prometheus", "uid": "prometheus", "url": "http://prometheus:9090", "isDefault": True}
    for k, v in want.items():
        if ds.get(k) != v:
            problems.append(f"datasource {k} is {ds.get(k)!r}, expected {v!r}")
    interval = load_yaml(PROMETHEUS_CONFIGS[0])["global"]["scrape_interval"]
    if (ds.get("jsonData") or {}).get("timeInterval") != interval:
        problems.append(f"datasource jsonData.timeInterval must equal the scrape interval {interval!r}")
    return problems


@check("grafana dashboard provider and mounts")
def check_provider():
    problems = []
    cfg = load_yaml(PROVIDERS)
    if cfg.get("apiVersion") != 1:
        problems.append("dashboards provider: apiVersion must be 1")
    providers = cfg.get("providers") or []
    if len(providers) != 1 or providers[0].get("type") != "file":
        return problems + ["dashboards provider: expected one provider of type file"]
    path = (providers[0].get("options") or {}).get("path", "")
    # Both compose files mount grafana/provisioning at /etc/grafana/provisioning.
    prefix = "/etc/grafana/provisioning/"
    if not path.startswith(prefix):
        return problems + [f"provider path {path} is not under {prefix}"]
    local = HERE / "grafana" / "provisioning" / path[len(prefix):]
    if local.resolve() != DEFINITIONS.resolve():
        problems.append(f"provider path {path} is not {rel(DEFINITIONS)}")
    if not list(DEFINITIONS.glob("*.json")):
        problems.append(f"no dashboard JSON in {rel(DEFINITIONS)}")
    for compose in (HERE / "compose.yaml", HERE / "replay" / "compose.yaml"):
        vols = load_yaml(compose)["services"]["grafana"].get("volumes", [])
        mounts = {(compose.parent / v.split(":")[0]).resolve(): v.split(":")[1] for v in vols}
        if mounts.get((HERE / "grafana" / "provisioning").resolve()) != "/etc/grafana/provisioning":
            problems.append(f"{rel(compose)}: grafana/provisioning is not mounted at /etc/grafana/provisioning")
    return problems


@check("dashboards parse and use the provisioned data source")
def check_dashboards_parse():
    problems = []
    ds_uid = provisioned_datasource()["uid"]
    uids = {}
    boards = dashboards()
    if set(boards) != {"notesd-app.json", "postgres.json"}:
        problems.append(f"expected notesd-app.json and postgres.json, found {sorted(boards)}")
    for name, dash in boards.items():
        uid = dash.get("uid")
        if not uid or uid in uids:
            problems.append(f"{name}: missing or duplicate dashboard uid {uid!r}")
        uids[uid] = name
        ids = [p.get("id") for p in all_panels(dash)]
        if len(ids) != len(set(ids)):
            problems.append(f"{name}: duplicate panel ids")
        for panel in all_panels(dash):
            if panel.get("type") == "row":
                continue  # rows hold no queries
            if (panel.get("datasource") or {}).get("uid") != ds_uid:
                problems.append(f"{name}: panel {panel.get('title')!r} datasource is {panel.get('datasource')!r}")
            if not panel.get("targets"):
                problems.append(f"{name}: panel {panel.get('title')!r} has no query")
            for t in panel.get("targets", []):
                if (t.get("datasource") or {}).get("uid") != ds_uid:
                    problems.append(f"{name}: panel {panel.get('title')!r} query {t.get('refId')} "
                                    f"datasource is {t.get('datasource')!r}")
        for var in dash.get("templating", {}).get("list", []):
            if var.get("type") == "query" and (var.get("datasource") or {}).get("uid") != ds_uid:
                problems.append(f"{name}: variable {var.get('name')!r} datasource is {var.get('datasource')!r}")
        for ann in dash.get("annotations", {}).get("list", []):
            if (ann.get("datasource") or {}).get("uid") != ds_uid:
                problems.append(f"{name}: annotation {ann.get('name')!r} datasource is {ann.get('datasource')!r}")
    return problems


@check("dashboards are make_dashboards.py's output")
def check_dashboards_generated():
    sys.path.insert(0, str(HERE / "grafana"))
    try:
        import make_dashboards
    finally:
        sys.path.pop(0)
    problems = []
    if make_dashboards.DATASOURCE["uid"] != provisioned_datasource()["uid"]:
        problems.append("make_dashboards.DATASOURCE uid differs from the provisioned data source")
    for name, obj in make_dashboards.build().items():
        path = DEFINITIONS / name
        if not path.exists() or path.read_text(encoding="utf-8") != make_dashboards.render(obj):
            problems.append(f"{rel(path)} is not make_dashboards.py's output; rerun "
                            f"/usr/bin/python3 docker/grafana/make_dashboards.py")
    return problems


@check("dashboard queries are valid PromQL (promtool check rules)")
def check_promql_syntax():
    promtool = shutil.which("promtool")
    if not promtool:
        return ["promtool not found (Debian package `prometheus`)"]
    rules, where = [], []
    for name, dash in dashboards().items():
        for loc, expr in dashboard_queries(dash):
            if LABEL_VALUES.match(expr):
                continue  # Grafana's label_values(), not PromQL
            # Grafana variables become what Grafana would send: a duration, a regex.
            e = expr.replace("$__rate_interval", "1m").replace("$__interval", "1m")
            e = re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(?::[a-z]+)?\}?", ".*", e)
            rules.append({"record": f"dashboard:query_{len(rules)}", "expr": e})
            where.append(f"{name} {loc}")
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}, f)
        tmp = f.name
    try:
        r = subprocess.run([promtool, "check", "rules", tmp], capture_output=True, text=True)
    finally:
        os.unlink(tmp)
    if r.returncode != 0:
        out = one_line(r.stdout + r.stderr)
        bad = sorted({int(n) for n in re.findall(r"dashboard:query_(\d+)", out)})
        return [f"not valid PromQL: {where[n]}: {rules[n]['expr']!r}" for n in bad] + \
               [f"promtool check rules: {out}"]
    if f"SUCCESS: {len(rules)} rules found" not in r.stdout:
        return [f"promtool did not see all {len(rules)} queries: {r.stdout.strip()}"]
    return []
