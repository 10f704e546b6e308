"""Tests of the comparison harness (run.sh), reconcile and the report: cd loadtests && python3 -B -m tests.harness.test_<part>"""
