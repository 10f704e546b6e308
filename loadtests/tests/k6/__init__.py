"""k6 for real (CTest loadtests_k6_*): every script of loadtests/k6/ run against
notesd and reconciled (test_live), split over runners as the k6-operator does it
(test_segments), one pinned k6 version everywhere (test_version); k6live is what
they share. Run from loadtests/ as modules:

    cd loadtests && NOTESD_BIN=../build/notesd NOTESD_PGSTATE=../build-test/pgstate.json \\
      K6=/path/to/k6 /usr/bin/python3 -B -m tests.k6.test_live
"""
