"""The comparison harness behind loadtests/run.sh, and its report.

harness_command.py  options, the database, each target started pinned, the load tool, the
                    sampler, reconcile (run as loadtests/reconcile), the rotation over rounds
analyze.py          the report of a results directory (also its own command, `analyze`):
                    medians over rounds, totals, problems, charts, summary.json
harness_figures.py  one test's figures from its raw files over its window
harness_report.py   report.md, one function per section
"""
