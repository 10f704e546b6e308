"""calibrate --tools, check 7: the counts and latency checks again over HTTP/2, TLS
(h2 by ALPN on notesd's --tls-port, with a certificate made for the run) and h2c
(prior knowledge on the cleartext port), for the tools whose adapters speak it,
against a second notesd started with both. A phase of the matrix with a notesd of
its own: calibrate_command.py runs it after the checks of matrix.py.
"""
import tempfile

from loadlib.commands.calibrate.matrix import (CONNECTIONS, COUNT_RPS, LABELS, PATHS, log, measure,
                                               spec_for)
from loadlib.commands.calibrate.calibrate_target import lacking, make_cert
from loadlib.server import Target, free_port
from loadlib.commands.calibrate.verdicts import judge_counts, judge_latency, skipped

# Protocols: the tools whose adapters speak HTTP/2, and over what ("tls": h2 by ALPN on
# the TLS port; "h2c": prior knowledge on the cleartext port).
HTTP2_TOOLS = {"h2load": ("tls", "h2c"), "curl": ("tls", "h2c"), "hey": ("tls",),
               "k6": ("tls",)}
PROTOCOL_SECONDS = {"counts": 3, "latency": 4}


def run_protocols(notesd, pin, chosen, features):
    """Check 7: counts and latency over HTTP/2, per tool and protocol: [row]."""
    rows = []
    tools = [(n, a, why) for n, a, why in chosen if n in HTTP2_TOOLS]
    if not tools:
        return rows
    wanted = {p for n, _, _ in tools for p in HTTP2_TOOLS[n]}
    why_tls, why_h2c = lacking(features, "tls"), lacking(features, "h2c")
    if (why_tls or "tls" not in wanted) and (why_h2c or "h2c" not in wanted):
        for n, a, why in tools:
            for proto in HTTP2_TOOLS[n]:
                rows.append({"tool": n, "protocol": proto, "installed": a is not None,
                             "why": why, "checks": {
                                 c: skipped(c, why_tls if proto == "tls" else why_h2c)
                                 for c in ("counts", "latency")}})
        return rows
    with tempfile.TemporaryDirectory(prefix="calibrate-tls-") as workdir:
        extra = []
        tls_port = None
        if not why_tls:
            cert, key = make_cert(workdir)
            tls_port = free_port()
            extra += ["--tls-port", str(tls_port), "--tls-cert", cert, "--tls-key", key]
        if not why_h2c:
            extra.append("--h2c")
        target = Target(notesd, pin, extra)
        try:
            for n, adapter, why in tools:
                for proto in HTTP2_TOOLS[n]:
                    row = {"tool": n, "protocol": proto, "installed": adapter is not None,
                           "why": why, "checks": {}, "runs": {}}
                    rows.append(row)
                    lack = why_tls if proto == "tls" else why_h2c
                    if adapter is None or lack:
                        row["checks"] = {c: skipped(c, lack or why) for c in ("counts", "latency")}
                        continue
                    for check, path in (("counts", PATHS["counts"]), ("latency", PATHS["latency"])):
                        url = (target.url(path, "https", tls_port) if proto == "tls"
                               else target.url(path))
                        spec = spec_for(adapter, url, CONNECTIONS[check], PROTOCOL_SECONDS[check],
                                        http2=True, count_rps=COUNT_RPS[check])
                        log(f"{n}: {check} over {'h2 (TLS)' if proto == 'tls' else 'h2c'}")
                        run = measure(adapter, spec, target, LABELS[path])
                        row["runs"][check] = run
                        row["checks"][check] = (judge_counts(run) if check == "counts"
                                                else judge_latency(run))
        finally:
            target.stop()
    return rows
