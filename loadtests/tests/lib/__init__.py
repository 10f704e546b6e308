"""Tests of loadlib, the shared package: cd loadtests && python3 -B -m tests.lib.test_<part>"""
