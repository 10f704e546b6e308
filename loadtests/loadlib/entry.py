"""The one entry point of notesd's load-testing commands:

    python3 -m loadlib COMMAND [options]             from loadtests/ (or with it on PYTHONPATH)
    loadtests/notesd-loadtests COMMAND [options]     from anywhere, by path
    notesd-loadtests COMMAND [options]               after `pip install -e loadtests`

COMMAND is one of COMMANDS; `COMMAND --help` lists its options. The scripts people
have always run (loadtests/run.sh, bench, calibrate, verify, reconcile and
harness/analyze.py) and the console scripts of pyproject.toml are one call of
main() here each, so every way in checks the checkout and starts a command alike.

A command's module is imported only when that command runs: `reconcile` starts
without bench's parts, and only `verify` needs psycopg2.
"""
import importlib
import os
import sys

from loadlib import paths

PROG = "notesd-loadtests"
# name -> (the module whose main(argv) runs it, what it does, the script that runs it by path);
# --help lists them in this order
COMMANDS = {
    "harness": ("loadlib.commands.harness.harness_command",
                "the runtime comparison: notesd and the Express peer, same load", "run.sh"),
    "analyze": ("loadlib.commands.harness.analyze",
                "the harness's report, again, from a results directory", "harness/analyze.py"),
    "reconcile": ("loadlib.commands.reconcile.reconcile_command",
                  "a load tool's counts and latency against the server's /metrics", "reconcile"),
    "verify": ("loadlib.commands.verify.verify_command",
               "does a target implement the notes API, and run its queries?", "verify"),
    "calibrate": ("loadlib.commands.calibrate.calibrate_command",
                  "the load tools against what notesd knows: latency, counts, the scorecard",
                  "calibrate"),
    "bench": ("loadlib.commands.bench.bench_command",
              "notesd against its limits and its peers; --compare REV: two builds", "bench"),
    "judge": ("loadlib.commands.judge.judge_command",
              "any load tool judged from the server's side: a verdict and a page", "judge"),
}


def usage():
    width = max(map(len, COMMANDS))
    lines = [f"usage: {PROG} COMMAND [options]   (or: python3 -m loadlib COMMAND ...)", "",
             "commands (COMMAND --help for its options; the script in loadtests/ that runs it):"]
    lines += [f"  {name:<{width}}  {what} (loadtests/{script})"
              for name, (_, what, script) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv=None):
    """Runs COMMAND with the rest of argv (default: this process's arguments); its exit
    status. 2 for an unknown command, or when loadlib is not in a notesd checkout."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"{PROG}: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        paths.require_checkout()
    except paths.NotACheckout as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    sys.dont_write_bytecode = True      # no __pycache__ in the checkout for what loads from here on
    return importlib.import_module(COMMANDS[name][0]).main(rest)


def console_script():
    """The console scripts of pyproject.toml: `notesd-loadtests COMMAND ...`, and one per
    command named after it (`notesd-bench ...` is `notesd-loadtests bench ...`)."""
    script = os.path.basename(sys.argv[0])
    return main(([SCRIPTS[script]] if script in SCRIPTS else []) + sys.argv[1:])


# the console scripts that run one command (pyproject.toml), from before the one entry point
SCRIPTS = {"notesd-loadtest": "harness", "notesd-analyze": "analyze", "notesd-bench": "bench",
           "notesd-verify": "verify", "notesd-reconcile": "reconcile",
           "notesd-calibrate": "calibrate", "notesd-judge": "judge"}
