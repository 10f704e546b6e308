"""Tests of calibrate: cd loadtests && python3 -B -m tests.calibrate.test_calibrate_matrix"""
