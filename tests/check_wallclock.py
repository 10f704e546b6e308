#!/usr/bin/python3
"""Fails on a test that asserts a wall-clock upper bound a busy machine can break.

    tests/check_wallclock.py            every test of the repository
    tests/check_wallclock.py FILE ...   these files

A wall-clock upper bound is an assertion that a time measured in the test stays below
a fixed figure: `assertLess(took, 0.5)`, `assert elapsed <= 2`. It passes on an idle
machine and fails on a busy one (two cores shared by four suites and a sanitizer
build) for reasons that have nothing to do with the code. Write instead, in this order
of preference:

- the property, against a baseline measured in the same test: three answers behind a
  lock get their 504s together (their spread), a jittered delay against the plain one,
  the server's duration of a stream within the client's own window;
- the bound widened by the machine's load, `limit + slack(port)` (notes_testlib.slack:
  twenty times the slowest of five GET /status round trips measured in the test), or
  a name assigned from slack() in the same file: as strict as `limit` when idle;
- where the comparison is no wall-clock limit at all (a reading of one clock against
  another, CPU seconds, a figure against the run it is part of), say so on the line:
  `# not a wall-clock limit: WHY`.

How it finds them: it parses each file (Python's ast) and looks at every
assertLess/assertLessEqual (their first argument is the measured side),
assertGreater/assertGreaterEqual (the second), and `assert` or assertTrue of a `<`,
`<=`, `>`, `>=` comparison (the smaller side). A measured side reads time when it
calls time.monotonic(), time.time() or time.perf_counter(), or holds a name, attribute
or string whose words (split at `_` and at capitals) include one of TIME_WORDS, or end
in `s` or `ms` (startup_s, testRunDurationMs); CPU seconds are not wall-clock time. It
passes when the bound calls slack(), names a variable assigned from slack(), or holds
a time measured in the test (a lower-case name that reads time: `lag <= took + 0.05`),
or the marker is on the assertion's lines or the line above. Exit status 1 when one is
found, each printed as `file:line: source`.
"""
import ast
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The trees that hold tests; node_modules and build trees are never ours.
TEST_TREES = ["tests", "loadtests/tests", "docker/tests", "packaging/tests"]
SKIP_DIRS = {"node_modules", "__pycache__"}
TIME_WORDS = {"took", "elapsed", "seconds", "secs", "duration", "latency", "lag", "wall",
              "spent", "startup", "monotonic", "perf", "time", "noticed"}
UNIT_WORDS = {"s", "ms"}  # the last word of startup_s, testRunDurationMs
MARKER = "# not a wall-clock limit:"
UPPER_FIRST = {"assertLess", "assertLessEqual"}       # (measured, bound)
UPPER_SECOND = {"assertGreater", "assertGreaterEqual"}  # (bound, measured)


def words(identifier):
    """'testRunDurationMs' -> ['test', 'run', 'duration', 'ms']; 'startup_s' -> [.., 's']."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", identifier)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def identifiers(node):
    """Names, attributes and identifier-like strings anywhere in an expression."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and \
                re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n.value):
            yield n.value


def is_time(ident):
    w = words(ident)
    if "cpu" in w:
        return False  # CPU seconds: a busy machine gives a process fewer, not more
    return bool(TIME_WORDS & set(w)) or (len(w) > 1 and w[-1] in UNIT_WORDS)


def reads_time(node):
    """The identifier that makes `node` a measured time, or None."""
    return next((ident for ident in identifiers(node) if is_time(ident)), None)


def measured_in_test(node):
    """Whether a bound holds a time measured in the test (a variable or attribute in
    lower case): the comparison is then against a baseline, not a fixed figure."""
    for n in ast.walk(node):
        ident = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if ident and not ident.isupper() and is_time(ident) and ident not in ("time", "monotonic"):
            return True
    return False


def calls_slack(node, slack_names):
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if (isinstance(f, ast.Name) and f.id == "slack") or \
               (isinstance(f, ast.Attribute) and f.attr == "slack"):
                return True
        if isinstance(n, ast.Name) and n.id in slack_names:
            return True
    return False


def slack_assigned(tree):
    """Names assigned from an expression that calls slack() anywhere in the file."""
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and \
                calls_slack(n.value, set()):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name):
                        names.add(name.id)
    return names


def upper_bounds(node):
    """(measured, bound) pairs an assertion node states as measured < bound."""
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        if len(node.args) >= 2 and name in UPPER_FIRST:
            return [(node.args[0], node.args[1])]
        if len(node.args) >= 2 and name in UPPER_SECOND:
            return [(node.args[1], node.args[0])]
        if name == "assertTrue" and node.args:
            return comparisons(node.args[0])
        return []
    if isinstance(node, ast.Assert):
        return comparisons(node.test)
    return []


def comparisons(test):
    if isinstance(test, ast.BoolOp):
        return [pair for v in test.values for pair in comparisons(v)]
    if not isinstance(test, ast.Compare):
        return []
    out, left = [], test.left
    for op, right in zip(test.ops, test.comparators):
        if isinstance(op, (ast.Lt, ast.LtE)):
            out.append((left, right))
        elif isinstance(op, (ast.Gt, ast.GtE)):
            out.append((right, left))
        left = right
    return out


def check_source(text, name="<test>"):
    """['file:line: source', ...] for every wall-clock upper bound in `text`."""
    tree = ast.parse(text, name)
    lines = text.splitlines()
    slack_names = slack_assigned(tree)
    found = []
    for node in ast.walk(tree):
        for measured, bound in upper_bounds(node):
            ident = reads_time(measured)
            if not ident or calls_slack(bound, slack_names) or measured_in_test(bound):
                continue
            span = lines[max(node.lineno - 2, 0):node.end_lineno]
            if any(MARKER in line for line in span):
                continue
            found.append(f"{name}:{node.lineno}: {lines[node.lineno - 1].strip()}  "
                         f"[{ident!r} is a time]")
    return found


def test_files():
    for tree in TEST_TREES:
        for root, dirs, files in os.walk(os.path.join(REPO, tree)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for f in sorted(files):
                if f.endswith(".py"):
                    yield os.path.join(root, f)


def main(argv):
    paths = argv[1:] or list(test_files())
    found = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            found += check_source(f.read(), os.path.relpath(path, REPO))
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} wall-clock upper bound(s): assert the property against a baseline "
              f"measured in the test, widen the bound with slack(), or mark a comparison that "
              f"is no wall-clock limit '{MARKER} why' (tests/README.md, \"No wall-clock upper "
              f"bounds\")")
        return 1
    print(f"{len(paths)} test files, no wall-clock upper bound")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
