#!/usr/bin/python3
"""Checks that tests/corpus/bad_requests.jsonl is what make_bad_requests.py
writes today, naming the first entry that differs and how to regenerate it; and
that every API route of server/routes.h has entries in it, or is one of
COVERED_ELSEWHERE below, with the test that covers it.

    tests/corpus/check_corpus.py
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import route_table  # noqa: E402


# The API routes whose bad input is tested elsewhere, and where: a route of
# server/routes.h must be here or have entries in the corpus.
COVERED_ELSEWHERE = {
    "/delay/:ms": "test_edges.py (NumbersTest) and tests/unit's knob tests",
    "/fault/:status": "test_fixture.py and test_edges.py (NumbersTest)",
    "/bytes/:n": "test_fixture.py and test_edges.py (NumbersTest)",
    "/drip": "test_fixture.py and test_edges.py (NumbersTest)",
    "/stall": "test_fixture.py and test_edges.py (NumbersTest)",
    "/ws/echo": "test_ws.py: handshakes and frames",
    "/ws/feed": "test_ws.py: handshakes and frames",
    "/sse": "test_stream.py: Last-Event-ID and the knobs",
    "/stream/:n": "test_stream.py and test_edges.py (NumbersTest)",
}


def matches(route, path):
    """1 if a corpus path is the route's, as the router matches it (letters in any case)."""
    path = path.split("?", 1)[0].lower()
    base = route.template.split("/:", 1)[0]
    if route.match == "MATCH_PARAM":
        rest = path[len(base):].rstrip("/")
        return path.startswith(base + "/") and rest.count("/") == 1 and len(rest) > 1
    if route.match == "MATCH_PREFIX":
        return path == base or path.startswith(base + "/")
    return path in (base, base + "/")


def coverage(entries):
    """Problems: API routes with no entry and not covered elsewhere, and stale exemptions."""
    routes = [r for r in route_table.read() if r.port == "PORT_API" and r.match != "MATCH_NONE"]
    templates = [r.template for r in routes]
    problems = []
    for r in routes:
        t = r.template
        if not any(matches(r, e["path"]) for e in entries) and t not in COVERED_ELSEWHERE:
            problems.append(f"the route {t} has no entry in tests/corpus/bad_requests.jsonl: add "
                            "its bad requests to make_bad_requests.py, or name the test that "
                            "covers them in check_corpus.py's COVERED_ELSEWHERE")
    problems += [f"check_corpus.py: COVERED_ELSEWHERE names {t}, which is not an API route "
                 "of server/routes.h" for t in COVERED_ELSEWHERE if t not in templates]
    return problems


def main():
    made = subprocess.run([sys.executable, os.path.join(HERE, "make_bad_requests.py")],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    with open(os.path.join(HERE, "bad_requests.jsonl"), encoding="utf-8") as f:
        kept = f.read().splitlines()
    regenerate = ("regenerate it: python3 tests/corpus/make_bad_requests.py > "
                  "tests/corpus/bad_requests.jsonl")
    for i, (a, b) in enumerate(zip(kept, made), 1):
        if a != b:
            name = json.loads(b).get("name", "?")
            print(f"tests/corpus/bad_requests.jsonl:{i}: entry {name!r} is not what "
                  f"make_bad_requests.py writes;\n  file:      {a[:160]}\n  generator: {b[:160]}"
                  f"\n{regenerate}")
            return 1
    if len(kept) != len(made):
        print(f"tests/corpus/bad_requests.jsonl has {len(kept)} entries, make_bad_requests.py "
              f"writes {len(made)}; {regenerate}")
        return 1
    problems = coverage([json.loads(line) for line in kept])
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"tests/corpus/bad_requests.jsonl: {len(kept)} entries, as make_bad_requests.py writes; "
          "every API route covered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
