"""The commands, one module each, on top of the library: harness (run.sh) and its
report (analyze), bench and its report (bench_report), verify, calibrate and
reconcile. Each has a main() that a thin script under loadtests/ calls. A
command imports the library below it, never another command; the two reports
are parts of their one command (tests/test_layers.py checks both rules).
"""
