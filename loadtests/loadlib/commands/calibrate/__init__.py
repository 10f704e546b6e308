"""calibrate: the load tools against what notesd knows (known latency, its own counters).

calibrate_command.py  the options, the target, the phases of both modes in order, the files written
calibrate_runs.py     the sections' measurements, one measure_*() each
calibrate_report.py   the sections' text, one section_*() each, with the truth each is judged against
matrix.py             --tools: the conformance matrix's checks 1-6, each tool's runs
calibrate_target.py   the matrix's notesd and the server's side of a run
verdicts.py           the matrix's verdicts, one judge_*() per check, with their thresholds
protocols.py          the matrix's check 7: HTTP/2 over TLS and h2c
scorecard.py          the scorecard: Markdown, JSON and two SVG charts
ws.py                 the WebSocket column (--ws, and with --tools)
"""
