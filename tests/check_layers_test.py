#!/usr/bin/python3
"""The layer checker must fail, naming the line, on an upward include and on a
cycle, and pass a tree that follows its LAYERS."""
import os
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")
failures = 0


def run(files, layers):
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "LAYERS"), "w") as f:
            f.write(layers)
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True,
                           text=True)
        return p.returncode, p.stdout


def expect(name, files, layers, status, *needles):
    global failures
    rc, out = run(files, layers)
    ok = rc == status and all(n in out for n in needles)
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        failures += 1
        print(f"  status {rc}, wanted {status}; output:\n{out}")


expect("clean_tree_passes", {"a.h": "", "b.c": '#include "a.h"\n'}, "a\nb\n", 0, "0 problem(s)")
expect("upward_include_names_the_line",
       {"a.c": '#include <stdio.h>\n#include "b.h"\n', "b.h": ""}, "a\nb\n", 1,
       "a.c:2: #include \"b.h\"", "higher layer")
expect("cycle_in_one_layer_is_found",
       {"a.h": '#include "b.h"\n', "b.h": '#include "a.h"\n'}, "a b\n", 1, "include cycle")
expect("unlisted_module_fails", {"a.h": "", "c.c": '#include "a.h"\n'}, "a\n", 1,
       "module 'c' is not listed")
print(f"{4 - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
