#!/usr/bin/python3
"""server/routes.h's route table, read once for every check that holds
something to it (check_route_tables.py: the docs' tables; openapi/check_routes.py:
docs/openapi.json).

A row is `X(ROUTE_ID, "template", PORT_x, MATCH_x, setup, {"METHOD", handler}, ...)`;
each `{"METHOD", handler}` pair is a method the route answers ("GET" answers
HEAD too, "*" any method), `{NULL, NULL}` none.

    python3 tests/route_table.py        prints every (port, method, template), and
                                        fails if a row is malformed or names the
                                        reserved probe method
"""
import os
import re
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ROUTES_H = os.path.join(REPO, "server", "routes.h")
# The method of every 405 probe in the tests (notes_testlib.PROBE_METHOD, the
# bad-request corpus, the Docker tests): no row may name it, so a probe can
# never reach a handler and never change data.
PROBE_METHOD = "NOTESD-PROBE"

ROW = re.compile(r'X\(\s*(ROUTE_\w+)\s*,\s*"([^"]*)"\s*,\s*(PORT_\w+)\s*,\s*(MATCH_\w+)\s*,'
                 r'\s*(\w+)\s*,(.*?)\)\s*(?:\\|$)', re.M)
PAIR = re.compile(r'\{\s*(?:"([^"]+)"|NULL)\s*,\s*(\w+)\s*\}')


class Route:
    def __init__(self, route_id, template, port, match, setup, methods, line):
        self.id, self.template, self.port, self.match = route_id, template, port, match
        self.setup, self.methods, self.line = setup, methods, line  # methods: {name: handler}

    def __repr__(self):
        return f"{self.id} ({self.template})"


def read(path=ROUTES_H):
    """The rows of ROUTES(X), in table order, each with the line it starts on.
    Raises ValueError naming the line of a row it cannot read."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index("#define ROUTES(X)")
    end = text.index("\n\n", start)
    block = text[start:end]
    first_line = text.count("\n", 0, start) + 1
    routes = []
    # One row may span lines (continued with backslashes): join them, keeping line numbers.
    rows = re.split(r"\n(?=\s*X\()", block)
    line = first_line
    for chunk in rows:
        if "X(" not in chunk:
            line += chunk.count("\n") + 1
            continue
        joined = re.sub(r"\\\s*\n\s*", " ", chunk.strip().rstrip("\\").strip())
        m = ROW.search(joined + " \\")
        if not m:
            raise ValueError(f"server/routes.h:{line}: cannot read this row: {joined[:100]}")
        route_id, template, port, match, setup, rest = m.groups()
        methods = {}
        for name, handler in PAIR.findall(rest):
            if name:
                methods[name] = handler
        routes.append(Route(route_id, template, port, match, setup, methods, line))
        line += chunk.count("\n") + 1
    return routes


def problems(routes):
    """What is wrong with the table itself."""
    found = []
    for r in routes:
        if PROBE_METHOD in r.methods:
            found.append(f"server/routes.h:{r.line}: {r.id} names {PROBE_METHOD}, the method "
                         "the tests' 405 probes use: pick another method name")
        if "HEAD" in r.methods:
            found.append(f"server/routes.h:{r.line}: {r.id} names HEAD; \"GET\" answers HEAD too")
    return found


def endpoints(routes, port=None):
    """{(method, template)} of the routes (of `port`): GET for "GET" (HEAD is
    implied), and GET for a route that answers any method ("*")."""
    out = set()
    for r in routes:
        if r.match == "MATCH_NONE" or (port is not None and r.port != port):
            continue
        for name in r.methods:
            out.add(("GET" if name == "*" else name, r.template))
    return out


def main():
    try:
        routes = read()
    except ValueError as e:
        print(e)
        return 1
    for r in routes:
        for name in r.methods:
            print(f"{r.port}\t{name}\t{r.template}")
    bad = problems(routes)
    for p in bad:
        print(p)
    return 1 if bad or len(routes) < 5 else 0


if __name__ == "__main__":
    sys.exit(main())
