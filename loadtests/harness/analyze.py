#!/usr/bin/python3
"""Turns a results directory of loadtests/run.sh into summary.json, report.md and
two SVG charts; run.sh calls it at the end, run it again by hand with

    /usr/bin/python3 loadtests/harness/analyze.py loadtests/results/<stamp>

An entry point: `analyze` of loadlib/entry.py, the one entry point, run here through
loadtests/notesd-loadtests beside this folder, the way run.sh runs the harness
(README.md, "Running the commands").
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(os.path.dirname(HERE), "notesd-loadtests")

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, "-B", LAUNCHER, "analyze", *sys.argv[1:]])
