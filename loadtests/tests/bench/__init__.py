"""Tests of loadtests/bench: cd loadtests && python3 -B -m tests.bench.test_bench (tests.bench.smoke_netns: the --netns run)"""
