"""The commands, on top of the library: harness (run.sh), bench, verify, calibrate
and reconcile, each a module with a main() that a thin script under loadtests/
calls, and each with its parts beside it (the harness's analyze, analyze_figures
and analyze_report; bench_*; verify_*; calibrate_*; reconcile_client). A command imports the library below it and its own parts,
never another command or another command's parts (tests/lib/test_layers.py
checks it).
"""
