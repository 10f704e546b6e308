#!/usr/bin/python3
"""Runs integration suites through Prism's validation proxy, which checks every
request and every answer against docs/openapi.json, and fails on any answer that
departs from it.

    tests/openapi/prism_suites.py api fixture     (CTest: integration_prism_api, ...)

Each suite (tests/integration/test_<name>.py) runs unchanged, with NOTESD_FRONT
naming prism_front.sh: notes_testlib puts a Prism in front of each notesd (one
started per suite, reused by the servers that follow; tests/integration/front_proxy.py)
and sends the API port's requests through it, recording the `sl-violations` header of each
answer. Tests that cannot go through an HTTP proxy are skipped there, each with
its reason (notes_testlib.direct_only). Then every violation is judged:

- any violation in a response (`response.…`: status, header, body, content type)
  is a failure: notesd answered something the description does not allow;
- a violation in a request is expected when notesd refused the request (a 4xx):
  the test sent bad input on purpose, and description and server agree it is
  bad; with any other status it is a failure (the description refuses what
  notesd accepts, or a route is missing from it); a 404 for a path Prism fits to
  a template only by leaving a path parameter empty ("/delay/") is expected too:
  no route of notesd matches it;
- every request Prism logged must be one the suite recorded, and every violation
  Prism logged one the suite saw, so no answer escapes the check.

It prints how many answers were checked and the violations by kind. Exit 0 when
the suites passed and nothing failed, 1 otherwise, 77 (skip) when npm cannot
install Prism.
"""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXIT_SKIPPED = 77


def judge(answers):
    """(failures, expected): lists of lines describing violations."""
    failures, expected = [], collections.Counter()
    for a in answers:
        # Prism matches "/delay/" to /delay/{ms} with the segment missing; to notesd
        # that path is no route at all, and its 404 is not an answer of that operation.
        no_route = a["status"] == 404 and any(
            str(v.get("message", "")).startswith("Request path must have required property")
            for v in a["violations"])
        for v in a["violations"]:
            where = ".".join(str(x) for x in v.get("location", []))
            line = f"{a['method']} {a['path']} -> {a['status']}: {v.get('severity')} {where}: " \
                   f"{v.get('message')}"
            if where.startswith("response") and no_route and "status code" in str(v.get("message")):
                expected[f"{v.get('severity')} {where}: 404 for a path no route matches"] += 1
            elif where.startswith("response"):
                failures.append("response departs from the description: " + line)
            elif 400 <= a["status"] < 500:
                expected[f"{v.get('severity')} {where or 'request'}: {v.get('message')}"] += 1
            else:
                failures.append("the description refuses a request notesd answered " +
                                f"{a['status']}: " + line)
    return failures, expected


def prism_log_counts(log_dir):
    """(requests received, violations logged, requests Prism could not forward or
    check: their log lines) over every Prism log in log_dir."""
    received = violations = 0
    errors = []
    for name in glob.glob(os.path.join(log_dir, "front-*.log")):
        with open(name, encoding="utf-8", errors="replace") as f:
            for line in f:
                received += "Request received" in line
                violations += "Violation:" in line
                if "Request terminated with error" in line:
                    errors.append(line.strip())
    return received, violations, errors


def run_suite(name, log_dir):
    env = dict(os.environ, NOTESD_FRONT=f"bash {os.path.join(HERE, 'prism_front.sh')}",
               NOTESD_FRONT_LOG_DIR=log_dir, PYTHONUNBUFFERED="1")
    script = os.path.join(REPO, "tests", "integration", f"test_{name}.py")
    print(f"== {name}: {script} through Prism", flush=True)
    return subprocess.run([sys.executable, "-B", script], env=env).returncode


def main(suites):
    install = subprocess.run(["bash", os.path.join(HERE, "install.sh")])
    if install.returncode == EXIT_SKIPPED:
        print("Prism could not be installed from npm: skipped")
        return EXIT_SKIPPED
    if install.returncode != 0:
        return 1
    ok = True
    for name in suites:
        with tempfile.TemporaryDirectory(prefix=f"prism-{name}-") as log_dir:
            code = run_suite(name, log_dir)
            answers = []
            for path in glob.glob(os.path.join(log_dir, "answers-*.jsonl")):
                with open(path) as f:
                    answers += [json.loads(line) for line in f]
            received, logged, errors = prism_log_counts(log_dir)
            failures, expected = judge(answers)
            failures += [f"Prism could not check an answer: {line}" for line in errors]
            seen = sum(len(a["violations"]) for a in answers)
            if received != len(answers):
                failures.append(f"Prism received {received} requests, the suite recorded "
                                f"{len(answers)} answers through it")
            if logged != seen:
                failures.append(f"Prism logged {logged} violations, the answers carried {seen}")
            if not answers:
                failures.append("no request went through Prism")
            print(f"== {name}: {len(answers)} answers checked against docs/openapi.json; "
                  f"{seen} violations: {len(failures)} failures, "
                  f"{sum(expected.values())} in requests notesd refused (4xx)")
            for what, n in sorted(expected.items()):
                print(f"   expected, {n}x: {what}")
            for line in failures:
                print(f"   FAILED: {line}")
            if code != 0:
                print(f"== {name}: the suite itself exited {code}")
            ok = ok and code in (0, EXIT_SKIPPED) and not failures
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["api", "fixture"]))
