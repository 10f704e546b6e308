"""loadlib: the shared parts of notesd's load-testing commands.

Every command under loadtests/ (run.sh's harness, bench, verify, calibrate,
reconcile) is a thin entry point over this package, so each part exists once.
"""
