"""calibrate --tools: what the matrix's notesd (loadlib.server.Target, on free loopback
ports, pinned to CPU 1) offers of the fixture API (its routes, counters and options,
probed), the server's side of one run (deltas of its /metrics), and the self-signed
certificate of its TLS port.
"""
import os
import subprocess

from loadlib import prom


def server_features(notesd, target):
    """What the started server offers of the fixture API: {feature: bool}. Routes are
    probed with a request they must refuse (400 when the route exists, 404 when not),
    counters read from /metrics, options from --help."""
    helptext = subprocess.run([notesd, "--help"], capture_output=True, text=True).stdout
    samples = target.scrape() or []
    names = {n for n, _, _ in samples}
    return {
        "fault": target.get("/fault/503?every=0")[0] != 404,
        "stall": target.get("/stall?ms=0")[0] != 404,
        "connections_counter": "notes_http_connections_accepted_total" in names,
        "stall_counters": "notes_stalls_total" in names,
        "tls": "--tls-port" in helptext,
        "h2c": "--h2c" in helptext,
        "journal": any(n == "notes_journal_capacity" and v > 0 for n, _, v in samples),
    }


LACKS = {"fault": "the /fault route", "stall": "the /stall route",
         "connections_counter": "notes_http_connections_accepted_total",
         "stall_counters": "notes_stalls_total", "tls": "--tls-port", "h2c": "--h2c",
         "journal": "a request journal (JOURNAL)"}


def lacking(features, *needed):
    """'SKIP (server lacks …)' text for the features missing, or None."""
    missing = [LACKS[f] for f in needed if not features.get(f)]
    return f"server lacks {', '.join(missing)}" if missing else None


def server_view(before, after, label):
    """The server's side of one run: requests (all but /stall's) and 503s, connections
    accepted, CPU seconds, stalls, how late its event loop was at most (lag_max_ms: the
    scrape before the run started the gauge's window), and its own latency mean for the
    route `label`."""
    if before is None or after is None:
        return {}
    reqs = prom.deltas(before, after, "http_requests_total")
    view = {"requests": 0, "status_503": 0, "by_status": {}}
    for key, v in reqs.items():
        labels = dict(key)
        if labels.get("path") == "/stall":
            continue
        view["requests"] += int(v)
        status = labels.get("status_code", "")
        view["by_status"][status] = view["by_status"].get(status, 0) + int(v)
        if status == "503":
            view["status_503"] += int(v)

    def delta(name):
        a, b = prom.value(after, name), prom.value(before, name)
        return None if a is None or b is None else a - b

    accepted = delta("notes_http_connections_accepted_total")
    view["connections_accepted"] = None if accepted is None else int(accepted)
    view["cpu_s"] = delta("process_cpu_seconds_total")
    lag = prom.value(after, "notes_eventloop_lag_max_seconds")   # since the scrape before
    view["lag_max_ms"] = None if lag is None else round(lag * 1000, 3)
    stalls = delta("notes_stalls_total")
    view["stalls"] = None if stalls is None else int(stalls)
    view["stall_s"] = delta("notes_stall_seconds_total")
    hist = prom.histogram_summary(before, after, "http_request_duration_seconds",
                                  lambda labels: labels.get("path") == label) or {}
    view["mean_ms"] = hist.get("mean_ms")
    return view


def make_cert(workdir):
    """A self-signed certificate for 127.0.0.1 (openssl); (cert, key) paths."""
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key,
                    "-out", cert], check=True, capture_output=True)
    return cert, key
