"""Unit tests of loadlib: /usr/bin/python3 loadtests/loadlib/tests/test_<part>.py"""
