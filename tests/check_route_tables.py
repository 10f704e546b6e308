#!/usr/bin/python3
"""Checks that the route tables of the documentation list exactly the routes of
server/routes.h (read by tests/route_table.py): docs/api.md's table under
"## Routes" the API port's, docs/metrics.md's under "## The port" the metrics
port's, one `METHOD /template` per method a route answers (GET for a route that
answers any method; HEAD is implied by GET and not listed). Also held to the
table: the `path` label values docs/metrics.md lists for http_requests_total
(every API route's template, and `other`), and tests/route_examples.py, the one
request per route that the tests touching every route send.

A table row is read from its first cell's code span, `METHOD /path...`, with the
query (`?…`), optional parts (`[…]`) and a trailing `/…` left out. Each
difference names the page, its line or the row of routes.h it comes from, and
what to write; the exit status is then 1.

    tests/check_route_tables.py             the check
    tests/check_route_tables.py --rows      prints a row to start from for every
                                            route, each page's table in order
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import route_examples  # noqa: E402
import route_table  # noqa: E402

REPO = route_table.REPO
CELL = re.compile(r"^\|\s*`([A-Z][A-Z-]*) (/[^`]*)`")
# (page, heading of the section whose first table is checked, port)
TABLES = [("docs/api.md", "## Routes", "PORT_API"),
          ("docs/metrics.md", "## The port", "PORT_METRICS")]


def table_rows(path, heading):
    """{(method, template): line number} of the first table after `heading`."""
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = lines.index(heading)
    found, in_table = {}, False
    for number, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("|"):
            in_table = True
            m = CELL.match(line)
            if m:
                template = re.split(r"[?\[]", m.group(2))[0]
                template = re.sub(r"/…$", "", template)
                found[(m.group(1), template)] = number
        elif in_table:
            break
    return found


def compare(page, heading, documented, routes, port):
    problems = []
    code = {}
    for r in routes:
        if r.port == port:
            for method, template in route_table.endpoints([r]):
                code[(method, template)] = r
    for (method, template), r in sorted(code.items()):
        if (method, template) not in documented:
            problems.append(f"{page}: the table under \"{heading}\" has no row for "
                            f"{method} {template}, which server/routes.h:{r.line} ({r.id}) "
                            f"answers: add a row whose first cell is `{method} {template}`")
    for (method, template), line in sorted(documented.items(), key=lambda kv: kv[1]):
        if (method, template) not in code:
            problems.append(f"{page}:{line}: the row {method} {template} is a route "
                            "server/routes.h does not answer on this port; remove the row, or "
                            "add the method to the route's row in server/routes.h")
    return problems


def path_labels(routes):
    """docs/metrics.md's list of http_requests_total's `path` values against the API port's
    templates and `other`."""
    with open(os.path.join(REPO, "docs", "metrics.md"), encoding="utf-8") as f:
        row = next((line for line in f if line.startswith("| `http_requests_total`")), "")
    m = re.search(r"`path` is the route template \(([^)]*)\)", row)
    if not m:
        return ["docs/metrics.md: the http_requests_total row no longer says \"`path` is the "
                "route template (`/a`, `/b`, ...)\""]
    listed = re.findall(r"`([^`]+)`", m.group(1))
    wanted = [r.template for r in routes if r.port == "PORT_API" and r.match != "MATCH_NONE"]
    wanted.append("other")
    if listed != wanted:
        return [f"docs/metrics.md: http_requests_total's `path` values are "
                f"{', '.join(listed)}; server/routes.h's API routes make them "
                f"{', '.join(wanted)} (in that order)"]
    return []


def examples(routes):
    """tests/route_examples.py against the table, both ways."""
    have, want = set(route_examples.EXAMPLES), route_table.endpoints(routes)
    out = [f"tests/route_examples.py has no example of {m} {t}, a route of server/routes.h: "
           "add one (a quick request that leaves the loop free)" for m, t in sorted(want - have)]
    out += [f"tests/route_examples.py has an example of {m} {t}, which server/routes.h does not "
            "answer: remove it" for m, t in sorted(have - want)]
    return out


def main():
    try:
        routes = route_table.read()
    except ValueError as e:
        print(e)
        return 1
    if "--rows" in sys.argv:
        for page, heading, port in TABLES:
            print(f"{page}, {heading}:")
            for r in routes:
                if r.port == port and r.match != "MATCH_NONE":
                    for method in r.methods:
                        print(f"| `{'GET' if method == '*' else method} {r.template}` | |")
        return 0
    problems = route_table.problems(routes)
    total = 0
    for page, heading, port in TABLES:
        documented = table_rows(page, heading)
        total += len(documented)
        problems += compare(page, heading, documented, routes, port)
    problems += path_labels(routes) + examples(routes)
    for p in problems:
        print(p)
    print(f"{len(route_table.endpoints(routes))} routes and methods in server/routes.h, "
          f"{total} rows in the docs' tables, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
