#!/usr/bin/python3
"""The tour checker must fail, naming the line, on a name that exists nowhere,
on a file that does not exist and on a name placed in the wrong file, and pass
a page whose names all exist (including the names of its own example code)."""
import os
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_tour.py")
SOURCES = {"a.c": "int alpha_begin(void) { return 0; }\n",
           "b.h": "struct beta { int gamma; } *b;\n",
           "LAYERS": "# bottom first\na\nb c\n"}
failures = 0


def run(readme):
    with tempfile.TemporaryDirectory() as root:
        for name, text in SOURCES.items():
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write(readme)
        p = subprocess.run([sys.executable, CHECKER, "--root", root, "--tests", root, "--readme",
                            os.path.join(root, "README.md")], capture_output=True, text=True)
        return p.returncode, p.stdout


def expect(name, readme, status, *needles):
    global failures
    rc, out = run(readme)
    ok = rc == status and all(n in out for n in needles)
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        failures += 1
        print(f"  status {rc}, wanted {status}; output:\n{out}")


expect("existing_names_pass",
       "`alpha_begin` (a.c) sets `b->gamma`; see `a.c` and `b.h`, or run `GET /x`.\n"
       "```c\nint example_only(void);\n```\nThen `example_only()`.\n", 0, "every one exists")
expect("a_missing_name_is_named", "one\n`alpha_end` is gone\n", 1, "README.md:2", "alpha_end")
expect("a_missing_file_is_named", "`c.c` and `diagrams/x.svg`\n", 1, "c.c", "no such file")
expect("a_misplaced_name_is_named", "`alpha_begin` (b.h)\n", 1, "`alpha_begin` is not in b.h")
expect("a_name_in_a_fence_is_not_checked", "```\n`nowhere`\n```\n", 0, "every one exists")
expect("layers_as_in_LAYERS_pass", "| 0 | `a` | x |\n| 1 | `b`, `c` | y |\n", 0, "every one exists")
expect("a_module_missing_from_a_layer_is_named", "| 0 | `a` | x |\n| 1 | `b` | y |\n", 1,
       "README.md:2: layer 1 lists b; LAYERS has b, c")
expect("a_layer_missing_from_the_table_is_named", "| 0 | `a` | x |\n", 1, "no row for layer(s) 1")
sys.exit(1 if failures else 0)
