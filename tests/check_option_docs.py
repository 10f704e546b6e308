#!/usr/bin/python3
"""Checks that docs/configuration.md's settings table is what server/config.c's
option table makes of it (notesd-docgen markdown), so --help, the man page and
the page cannot drift apart. On a difference it prints a unified diff and the
command that rewrites the table.

    tests/check_option_docs.py BUILD_DIR/packaging/notesd-docgen
"""
import difflib
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, "docs", "configuration.md")
BEGIN = "<!-- settings: generated from server/config.c by notesd-docgen; edit there -->\n"
END = "<!-- end of settings -->\n"


def main():
    docgen = sys.argv[1]
    generated = subprocess.run([docgen, "markdown"], check=True, capture_output=True,
                               text=True).stdout
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        print(f"{PAGE}: the table must sit between one line {BEGIN.strip()!r} and one {END.strip()!r}")
        return 1
    committed = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = [line for line in generated.splitlines() if line.startswith("| `--")]
    if committed == generated:
        print(f"docs/configuration.md: the settings table is the option table's ({len(rows)} settings)")
        return 0
    sys.stdout.writelines(difflib.unified_diff(
        committed.splitlines(True), generated.splitlines(True),
        "docs/configuration.md (committed)", "notesd-docgen markdown (server/config.c)"))
    print("\nthe settings table differs from server/config.c's option table; rewrite it with\n"
          "  cmake --build BUILD_DIR --target option-docs")
    return 1


if __name__ == "__main__":
    sys.exit(main())
