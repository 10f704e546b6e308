#!/usr/bin/python3
"""Turns a results directory of loadtests/run.sh into summary.json, report.md and
two SVG charts; run.sh calls it at the end, run it again by hand with

    /usr/bin/python3 loadtests/harness/analyze.py loadtests/results/<stamp>

An entry point: the command is loadlib/commands/analyze.py.
"""
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ next to the scripts
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # loadtests/
from loadlib.commands.analyze import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
