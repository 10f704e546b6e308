"""The commands, on top of the library: one subpackage per command (harness, with the
harness's report, analyze; reconcile; verify; calibrate; bench). Each keeps its main(argv)
in <command>_command.py (analyze: harness/analyze.py) and its parts beside it; loadlib/entry.py
runs them by name. A command imports the library below it and its own package, never
another command's (tests/lib/test_layers.py checks it); what two commands share moves
down into the library.
"""
