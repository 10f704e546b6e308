"""Tests of the load-tool adapters (loadlib/tools): each tool's parser on output
captured from real runs (fixtures/tools/<tool>/<case>/), the install hints, and
the live smoke run of the conformance matrix (smoke_live):

    cd loadtests && /usr/bin/python3 -B -m tests.tools.test_ab
    cd loadtests && /usr/bin/python3 -B -m tests.tools.smoke_live [--capture TOOL...]
"""
import os

from tests import FIXTURES

TOOL_FIXTURES = os.path.join(FIXTURES, "tools")
