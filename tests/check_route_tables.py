#!/usr/bin/python3
"""Checks that the route tables of the documentation list exactly the routes of
server/routes.h: README.md's table every route of both ports, docs/api.md's every
route of the API port, one method and template per route (`GET /notes/:id`).

A row of routes.h gives its template and its handlers for GET (and HEAD), POST,
PUT and any other method; a route with only the last is listed as GET. A row of
a table is read from its first cell's code span, `METHOD /path...`, with the
query (`?…`), optional parts (`[…]`) and a trailing `/…` left out. Each
difference is printed, and the exit status is 1.

    tests/check_route_tables.py
"""
import os
import re
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ROW = re.compile(r'X\(\s*ROUTE_\w+\s*,\s*"([^"]+)"\s*,\s*(PORT_\w+)\s*,\s*MATCH_\w+\s*,'
                 r'\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)')
CELL = re.compile(r"^\|\s*`([A-Z]+) (/[^`]*)`")


def code_routes(path):
    """{port: {(method, template)}} from the ROUTES(X) rows of routes.h."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    routes = {}
    for template, port, get, post, put, other in ROW.findall(text):
        if template == "other":
            continue  # the 404's route, no path of its own
        methods = [m for m, h in (("GET", get), ("POST", post), ("PUT", put)) if h != "NULL"]
        if not methods and other != "NULL":
            methods = ["GET"]
        routes.setdefault(port, set()).update((m, template) for m in methods)
    return routes


def table_routes(path, heading):
    """{(method, template)} of the first table after the line `heading` in a page."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index("\n" + heading + "\n")
    found, in_table = set(), False
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            in_table = True
            m = CELL.match(line)
            if m:
                template = re.split(r"[?\[]", m.group(2))[0]
                template = re.sub(r"/…$", "", template)
                found.add((m.group(1), template))
        elif in_table:
            break
    return found


def compare(name, documented, code):
    problems = []
    for method, template in sorted(code - documented):
        problems.append(f"{name}: no row for {method} {template} (server/routes.h has it)")
    for method, template in sorted(documented - code):
        problems.append(f"{name}: a row for {method} {template}, which server/routes.h does not have")
    return problems


def main():
    code = code_routes(os.path.join(REPO, "server", "routes.h"))
    api, metrics = code.get("PORT_API", set()), code.get("PORT_METRICS", set())
    if len(api) < 5 or not metrics:
        print("could not read the route table from server/routes.h")
        return 1
    problems = compare("README.md", table_routes(os.path.join(REPO, "README.md"), "## Routes"),
                       api | metrics)
    problems += compare("docs/api.md",
                        table_routes(os.path.join(REPO, "docs", "api.md"), "## Routes"), api)
    for p in problems:
        print(p)
    print(f"{len(api | metrics)} routes in server/routes.h, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
