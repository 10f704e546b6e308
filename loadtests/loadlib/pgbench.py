"""pgbench's output, as loadtests/bench reads it: the summary's figures (tps,
transactions, failures) and the per-transaction latencies of its --log files."""

import re


def parse_pgbench(output):
    """tps, transactions and failures from pgbench's summary."""
    def grab(pattern, cast=float):
        m = re.search(pattern, output, re.M)
        return cast(m.group(1)) if m else None
    return {
        "tps": grab(r"^tps = ([\d.]+) \(without initial connection time\)"),
        "transactions": grab(r"^number of transactions actually processed: (\d+)", int),
        "failed": grab(r"^number of failed transactions: (\d+)", int),
        "latency_avg_ms": grab(r"^latency average = ([\d.]+) ms"),
        "initial_connection_ms": grab(r"^initial connection time = ([\d.]+) ms"),
    }


def pgbench_log_latencies(paths):
    """Per-transaction latencies (ms, ascending) from pgbench --log files:
    `client_id transaction_no time_us script_no epoch_s epoch_us`."""
    lat = []
    for path in paths:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2].isdigit():
                    lat.append(int(parts[2]) / 1000.0)
    lat.sort()
    return lat
