#!/usr/bin/python3
"""Checks that every name the guided tour (server/README.md) cites exists.

The tour promises that each name in it is a real function, type, field or
file. This reads every `inline code` span outside the fenced examples and
checks the ones that name something:

  - a file or path (foo.c, LAYERS, diagrams/render.sh, tests/check_layers.py,
    test_api.py) must exist under server/, the repository's root, tests/ or
    tests/integration/;
  - an identifier (request_begin, LISTENER_FULL, pool_conn_t), or several
    joined by -> or . (pool->waiting, stats.open_connections), possibly with
    a call's parentheses (ROUTES(X), stats_now_ns()), must occur as a whole
    word in server/'s C files, in tests/ (a CTest name, a test's tool), in
    the installed headers of h2o and libpq (a library function the tour
    names), or be defined by the tour's own example code, so a renamed or
    removed function fails here;
  - a name placed in a file, as in "`on_accept` (listen.c)" or "`resolve_hosts`
    in pgparams.c", must occur in that file, so a function that moved to
    another file fails too;
  - the table of layers, rows "| N | `mod`, `mod` | ... |", must list the
    modules of each line of LAYERS, in its order, and every line, so a module
    added to LAYERS is added to the tour.

Anything else in backticks (a request line, a header, a flag, an expression)
is prose and is not checked. Each name that is missing is printed with its
line, and the exit status is 1.

    tests/check_tour.py                  check server/README.md
    tests/check_tour.py --readme FILE --root DIR --tests DIR
                                         check FILE against DIR's sources
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
NAME = re.compile(rf"^{IDENT}(?:(?:->|\.){IDENT})*(?:\([^()]*\))?$")
PATH = re.compile(r"^[\w./-]+\.(?:c|h|py|sh|dot|svg|md|sql|txt)$")
# Cited on purpose as what notesd does not call or have; they must stay absent.
ABSENT = {"PQexec"}


def spans(text):
    """(line number, code span) for each inline code span outside ``` fences."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            for m in re.finditer(r"`([^`]+)`", line):
                yield number, m.group(1).strip()


def server_words(root):
    """Every identifier-like word of server/'s C files."""
    words = set()
    for name in os.listdir(root):
        if name.endswith((".c", ".h")):
            with open(os.path.join(root, name)) as f:
                words.update(re.findall(IDENT, f.read()))
    return words


def test_words(tests):
    """Every identifier-like word of tests/'s sources (CTest names, the tools)."""
    words = set()
    for top, dirs, files in os.walk(tests):
        dirs[:] = [d for d in dirs if d not in ("corpus", "__pycache__")]
        for name in files:
            if name.endswith((".c", ".h", ".py", ".txt", ".sh")):
                with open(os.path.join(top, name), errors="replace") as f:
                    words.update(re.findall(IDENT, f.read()))
    return words


def library_words():
    """The identifiers the installed headers of h2o and libpq declare."""
    words = set()
    paths = ["/usr/include/h2o.h", "/usr/include/postgresql/libpq-fe.h"]
    for top in ("/usr/include/h2o",):
        for d, _, files in os.walk(top):
            paths += [os.path.join(d, f) for f in files if f.endswith(".h")]
    for path in paths:
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                words.update(re.findall(IDENT, f.read()))
    return words


def example_words(text):
    """The identifiers of the tour's fenced examples: the route it adds is its own."""
    words = set()
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        words.update(re.findall(IDENT, block))
    return words


# "`name` (file.c" or "`name` in file.c" (the file possibly in backticks too).
PLACED = re.compile(rf"`({IDENT})(?:\(\))?`\s*(?:\(|in\s+)`?(\w+\.[ch])\b")


def check(readme, root, tests=HERE):
    with open(readme) as f:
        text = f.read()
    in_server = server_words(root)
    words = in_server | test_words(tests) | library_words() | example_words(text)
    bases = (root, REPO, tests, os.path.join(tests, "integration"))
    problems, checked = [], 0
    for number, span in spans(text):
        if "/" not in span[:1] and any(os.path.isfile(os.path.join(b, span)) for b in bases):
            checked += 1  # a file
        elif PATH.match(span) and not span.startswith((".", "/")):
            checked += 1
            problems.append(f"{readme}:{number}: `{span}`: no such file")
        elif NAME.match(span):
            checked += 1
            for ident in re.findall(IDENT, span.split("(", 1)[0]):
                if ident in ABSENT:
                    if ident in in_server:
                        problems.append(f"{readme}:{number}: `{span}`: cited as absent, "
                                        f"but {ident} occurs in {root}")
                elif ident not in words:
                    problems.append(f"{readme}:{number}: `{span}`: {ident} occurs nowhere "
                                    f"in {root}'s C files, tests/ or h2o's and libpq's headers")
    for number, line in enumerate(text.splitlines(), 1):
        for name, filename in PLACED.findall(line):
            checked += 1
            path = os.path.join(root, filename)
            if not os.path.isfile(path):
                problems.append(f"{readme}:{number}: `{name}` ({filename}): no such file")
                continue
            with open(path) as f:
                if name not in re.findall(IDENT, f.read()):
                    problems.append(f"{readme}:{number}: `{name}` is not in {filename}")
    return problems + layer_problems(readme, text, root), checked


LAYER_ROW = re.compile(r"^\| (\d+) \| ((?:`\w+`(?:, )?)+) \|")


def layer_problems(readme, text, root):
    """The tour's table of layers against LAYERS, when the page has one."""
    path = os.path.join(root, "LAYERS")
    rows = [(number, int(m.group(1)), re.findall(r"`(\w+)`", m.group(2)))
            for number, line in enumerate(text.splitlines(), 1)
            for m in [LAYER_ROW.match(line)] if m]
    if not rows or not os.path.isfile(path):
        return []
    with open(path) as f:
        layers = [line.split() for line in f if line.strip() and not line.startswith("#")]
    problems = [f"{readme}:{number}: layer {n} lists {', '.join(mods)}; LAYERS has "
                f"{', '.join(layers[n]) if n < len(layers) else 'no such line'}"
                for number, n, mods in rows if n >= len(layers) or mods != layers[n]]
    missing = sorted(set(range(len(layers))) - {n for _, n, _ in rows})
    if missing:
        problems.append(f"{readme}: the table of layers has no row for layer(s) "
                        f"{', '.join(map(str, missing))} of LAYERS")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readme", default=os.path.join(REPO, "server", "README.md"))
    ap.add_argument("--root", default=os.path.join(REPO, "server"))
    ap.add_argument("--tests", default=HERE, help="where CTest names and tools are found")
    args = ap.parse_args()
    problems, checked = check(args.readme, args.root, args.tests)
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"check_tour: {checked} names cited, every one exists")


if __name__ == "__main__":
    main()
