"""reconcile: a load tool's counts and percentiles against the server's /metrics deltas.

reconcile_command.py  the options, the server's side (ServerCounts), the comparison per route and
                      status, the text report
client.py             what the load tool reported: k6's summary or wrk's WRK_JSON line, as counts
                      per route and status, percentiles and failures
"""
