#!/usr/bin/python3
"""Checks that tests/corpus/bad_requests.jsonl is what make_bad_requests.py
writes today, naming the first entry that differs and how to regenerate it.

    tests/corpus/check_corpus.py
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


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
    print(f"tests/corpus/bad_requests.jsonl: {len(kept)} entries, as make_bad_requests.py writes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
