"""bench: notesd against its limits (h2o, pgbench) and its peers; --compare against another build.

bench_command.py   the run's state and options, the phases in order, bench.json, report.md
subjects.py        what runs where: subjects, tests, CPUs, ports, command lines
setup.py           before the rounds: tools, notesd's copy, peers, database, units, preflight
bench_runs.py      the rounds and their records; the start-up series
bench_figures.py   medians and ranges, pairs, ratios, targets, limits, the ceiling, scaling
headline.py        the headline figures (the report's first table), each with its range
bench_report.py    the Markdown report, one function per section
sweep.py           --sweep: 1 to 1000 connections
bench_netns.py     --netns: three network namespaces with a delay per link
revisions.py       --compare's two builds
compare.py         --compare: the cases, the interleaved schedule, the runs, callgrind
compare_report.py  --compare's figures, verdicts and report from bench.json alone
"""
