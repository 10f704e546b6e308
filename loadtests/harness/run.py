#!/usr/bin/python3
"""The comparison run: notesd and the Express peer on Node, Bun and Deno, under
the same load. Started by loadtests/run.sh (see there for the options).

An entry point: the command is loadlib/commands/harness.py (`--help` lists the
options).
"""
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ next to the scripts
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # loadtests/
from loadlib.commands.harness import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
