#!/usr/bin/python3
"""Renders the two provisioned Grafana dashboards from their data.

    /usr/bin/python3 docker/grafana/make_dashboards.py          # rewrite the JSON files
    /usr/bin/python3 docker/grafana/make_dashboards.py --check  # exit 1 if they are stale

dashboards/NAME.yaml is a dashboard as data: its variables, annotations, and rows of
panels with their queries (dashboards/notesd-app.yaml's header says how one is
written). This script places the panels on Grafana's grid and writes the JSON
Grafana reads, provisioning/dashboards/definitions/NAME.json, committed;
docker/check.py fails when the two differ. Edit the data, then rerun.

notesd-app.json  the server under test: one `job` per target (notesd, node, bun,
                 deno), and a k6 row, the runs picked by `testid`.
postgres.json    the database, from postgres_exporter.
"""

import json
import sys
from pathlib import Path

import yaml

DATASOURCE = {"type": "prometheus", "uid": "prometheus"}  # provisioning/datasources/prometheus.yaml
HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "dashboards"
OUT_DIR = HERE / "provisioning" / "dashboards" / "definitions"
# What a panel's data may say; anything else is a typo, refused rather than ignored.
PANEL_KEYS = {"title", "type", "unit", "min", "stack", "w", "h", "hide", "description", "queries"}


class Layout:
    """Places panels left to right in a 24-column grid, rows of equal height."""

    def __init__(self):
        self.panels = []
        self.x = 0
        self.y = 0
        self.row_h = 0

    def _next_id(self):
        return len(self.panels) + 1

    def row(self, title):
        if self.x:
            self.y += self.row_h
        self.x, self.row_h = 0, 0
        self.panels.append({
            "id": self._next_id(),
            "type": "row",
            "title": title,
            "collapsed": False,
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
            "panels": [],
        })
        self.y += 1

    def add(self, panel, w=12, h=8):
        if self.x + w > 24:
            self.y += self.row_h
            self.x, self.row_h = 0, 0
        panel["id"] = self._next_id()
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.panels.append(panel)
        self.x += w
        self.row_h = max(self.row_h, h)


def target(ref, expr, legend, instant=False):
    t = {"refId": ref, "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
    if instant:
        t.update({"instant": True, "range": False, "format": "table"})
    else:
        t.update({"instant": False, "range": True})
    return t


def timeseries(title, description, unit, targets, minimum=0, stack=False):
    custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10 if stack else 0,
              "showPoints": "never", "spanNulls": False}
    if stack:
        custom["stacking"] = {"mode": "normal", "group": "A"}
    defaults = {"unit": unit, "custom": custom}
    if minimum is not None:
        defaults["min"] = minimum
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                       "calcs": ["mean", "max", "lastNotNull"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": [target(chr(ord("A") + i), e, l) for i, (e, l) in enumerate(targets)],
    }


def stat(title, description, unit, expr, legend):
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "value", "graphMode": "area", "textMode": "auto"},
        "targets": [target("A", expr, legend)],
    }


def query_variable(name, label, query, default=None):
    v = {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": name},
        "refresh": 2,
        "sort": 1,
        "regex": "",
        "multi": True,
        "includeAll": True,
    }
    if default is None:
        v["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
    else:
        v["current"] = {"selected": True, "text": [default], "value": [default]}
    return v


def dashboard(uid, title, description, variables, panels, annotations=()):
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["notesd"],
        "editable": False,
        "graphTooltip": 1,
        "timezone": "utc",
        "refresh": "5s",
        "time": {"from": "now-15m", "to": "now"},
        "schemaVersion": 39,
        "version": 1,
        "annotations": {"list": list(annotations)},
        "links": [],
        "templating": {"list": variables},
        "panels": panels,
    }


def table(title, description, queries, hide):
    """The latest value of each series as a row; the columns in `hide` left out."""
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {}, "overrides": []},
        "options": {"showHeader": True},
        "transformations": [{"id": "organize", "options": {
            "excludeByName": {column: True for column in hide}}}],
        "targets": [target(chr(ord("A") + i), q["expr"], q["legend"], instant=q.get("instant", False))
                    for i, q in enumerate(queries)],
    }


def panel(p):
    """A panel object from its data: a timeseries unless `type` says stat or table."""
    unknown = set(p) - PANEL_KEYS
    if unknown:
        raise ValueError(f"panel {p.get('title')!r}: unknown {sorted(unknown)}; a panel says {sorted(PANEL_KEYS)}")
    kind = p.get("type", "timeseries")
    queries = p["queries"]
    if kind == "timeseries":
        return timeseries(p["title"], p["description"], p["unit"],
                          [(q["expr"], q["legend"]) for q in queries],
                          minimum=p.get("min", 0), stack=p.get("stack", False))
    if kind == "stat":
        (q,) = queries
        return stat(p["title"], p["description"], p["unit"], q["expr"], q["legend"])
    if kind == "table":
        return table(p["title"], p["description"], queries, p["hide"])
    raise ValueError(f"panel {p['title']!r}: no panel type {kind!r}")


def from_data(spec):
    """A dashboard object from its data (one dashboards/*.yaml, loaded)."""
    L = Layout()
    for row in spec["rows"]:
        L.row(row["row"])
        for p in row["panels"]:
            L.add(panel(p), w=p.get("w", 12), h=p.get("h", 8))
    variables = [query_variable(v["name"], v["label"], v["query"], default=v.get("default"))
                 for v in spec["variables"]]
    annotations = [{"name": a["name"], "datasource": DATASOURCE,
                    **{k: v for k, v in a.items() if k != "name"}}
                   for a in spec.get("annotations", [])]
    return dashboard(spec["uid"], spec["title"], spec["description"], variables, L.panels,
                     annotations=annotations)


def build():
    """File name -> dashboard object: dashboards/NAME.yaml becomes NAME.json."""
    out = {}
    for path in sorted(DATA_DIR.glob("*.yaml")):
        with open(path, encoding="utf-8") as f:
            out[path.stem + ".json"] = from_data(yaml.safe_load(f))
    return out


def render(obj):
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print("usage: make_dashboards.py [--check]", file=sys.stderr)
        return 2
    stale = []
    for name, obj in build().items():
        path = OUT_DIR / name
        text = render(obj)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print("stale (rerun docker/grafana/make_dashboards.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
