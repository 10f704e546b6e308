#!/usr/bin/python3
"""Holds docs/openapi.json to server/routes.h: every route of the table has a
path in the description with the same methods (each method a row names,
HEAD beside GET; a route answering any method is described as GET and HEAD), on the right port
(the metrics port's paths name it in their own `servers`), and the description
has no path and no operation the table lacks; `x-any-method` marks exactly the paths of
the routes that answer any method. Also: its version is the one CMakeLists.txt builds,
and every operation has an operationId of its own.

A template's `:param` is `{param}` in the description; a prefix route without a
parameter (`/static`, which serves a file path) is described as `/static/{file}`.
Each difference is printed, and the exit status is 1.

    tests/openapi/check_routes.py
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import route_table  # noqa: E402

REPO = route_table.REPO
METHODS = ("get", "head", "post", "put", "delete", "patch", "options", "trace")


def table_routes():
    """{template: (port, match, {methods}, any)} from server/routes.h (tests/route_table.py):
    each method a row names, with HEAD beside GET; a route answering any method
    ("*", `any`) is described as GET and HEAD."""
    routes = {}
    for r in route_table.read():
        if r.match == "MATCH_NONE":
            continue  # the 404's route, no path of its own
        methods = set()
        for name in r.methods:
            if name in ("GET", "*"):
                methods |= {"get", "head"}
            else:
                methods.add(name.lower())
        routes[r.template] = (r.port, r.match, methods, "*" in r.methods)
    return routes


def described_path(template, match):
    path = re.sub(r":(\w+)", r"{\1}", template)
    if match == "MATCH_PREFIX" and "{" not in path and template in ("/static",):
        path += "/{file}"
    return path


def main():
    routes = table_routes()
    with open(os.path.join(REPO, "docs", "openapi.json"), encoding="utf-8") as f:
        doc = json.load(f)
    problems = []
    if len(routes) < 10:
        print("could not read the route table from server/routes.h")
        return 1
    paths = doc.get("paths", {})
    expected = {}
    for template, (port, match, methods, any_method) in routes.items():
        expected[described_path(template, match)] = (template, port, methods, any_method)
    for path, (template, port, methods, any_method) in sorted(expected.items()):
        item = paths.get(path)
        if item is None:
            problems.append(f"{path}: no path in docs/openapi.json for {template} "
                            "(server/routes.h has it)")
            continue
        described = {m for m in METHODS if m in item}
        if item.get("x-any-method", False) != any_method:
            problems.append(f"{path}: " + ("answers any method, so it needs x-any-method: true"
                                           if any_method else
                                           "x-any-method, but server/routes.h names its methods"))
        for m in sorted(methods - described):
            problems.append(f"{path}: no {m.upper()} operation (server/routes.h answers it)")
        for m in sorted(described - methods):
            problems.append(f"{path}: a {m.upper()} operation that server/routes.h does not have")
        ports = {v.get("default") for s in item.get("servers", [])
                 for k, v in s.get("variables", {}).items() if k == "port"}
        if port == "PORT_METRICS" and ports != {"9091"}:
            problems.append(f"{path}: on the metrics port, so its servers must name port 9091")
        if port == "PORT_API" and "servers" in item:
            problems.append(f"{path}: on the API port, so it takes the document's servers")
    for path in sorted(set(paths) - set(expected)):
        problems.append(f"{path}: described, but server/routes.h has no such route")
    ids = [op.get("operationId") for item in paths.values() for m, op in item.items()
           if m in METHODS]
    for op_id in sorted({i for i in ids if ids.count(i) > 1 or i is None}, key=str):
        problems.append(f"operationId {op_id!r} is missing or not unique")
    with open(os.path.join(REPO, "CMakeLists.txt"), encoding="utf-8") as f:
        version = re.search(r"project\(notesd VERSION (\S+)", f.read()).group(1)
    if doc.get("info", {}).get("version") != version:
        problems.append(f"info.version is {doc.get('info', {}).get('version')!r}, "
                        f"CMakeLists.txt builds {version}")
    for p in problems:
        print(p)
    print(f"{len(routes)} routes in server/routes.h, {len(paths)} paths in docs/openapi.json, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
