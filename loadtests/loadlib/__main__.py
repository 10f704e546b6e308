"""python3 -m loadlib COMMAND [options]: the one entry point (entry.py), run from loadtests/."""
import sys

from loadlib.entry import main

if __name__ == "__main__":
    sys.exit(main())
