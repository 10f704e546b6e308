#!/usr/bin/python3
"""Turns a results directory of loadtests/run.sh into summary.json, report.md and
two SVG charts; run.sh calls it at the end, run it again by hand with

    /usr/bin/python3 loadtests/harness/analyze.py loadtests/results/<stamp>

An entry point: the command is loadlib/commands/analyze.py, run here as
`python3 -m loadlib.commands.analyze` with loadtests/ on PYTHONPATH, the way
run.sh runs the harness (README.md, "Running the commands").
"""
import os
import sys

LOADTESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":
    path = os.pathsep.join(p for p in (LOADTESTS, os.environ.get("PYTHONPATH")) if p)
    os.execve(sys.executable, [sys.executable, "-B", "-m", "loadlib.commands.analyze", *sys.argv[1:]],
              dict(os.environ, PYTHONPATH=path))
