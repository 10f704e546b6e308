"""calibrate --tools: the notesd the conformance matrix runs against (Target, on free
loopback ports, pinned to CPU 1), what it offers of the fixture API (its routes,
counters and options, probed), the server's side of one run (deltas of its
/metrics), and the self-signed certificate of its TLS port.
"""
import os
import subprocess
import tempfile

from loadlib import httpc, prom, server as srv
from loadlib.paths import REPO
from loadlib.server import free_port


class Target:
    """A notesd for the matrix on free loopback ports, pinned to CPU 1 when the machine
    allows, without a database (the routes used never query one; DB_URL only has to
    parse), with Server-Timing on. extra: more flags (TLS, h2c); journal: JOURNAL's
    records per loop (0: off). stop() ends it."""

    def __init__(self, notesd, pin, extra=(), journal=0):
        self.port, self.metrics_port = free_port(), free_port()
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        env = dict(os.environ, DB_URL="postgresql://calibrate@127.0.0.1:9/unused",
                   LOG_LEVEL="warn", SERVER_TIMING="1", JOURNAL=str(journal))
        argv = [os.path.abspath(notesd), "--host", "127.0.0.1", "--port", str(self.port), "--metrics-host",
                "127.0.0.1", "--metrics-port", str(self.metrics_port), *extra]
        log_path = tempfile.mktemp(prefix="calibrate-matrix-notesd-", suffix=".log")
        self.process = srv.ProcessUnderTest(argv, env, REPO, log_path, port=self.port,
                                            cpus=1 if pin else None, taskset=True, tied=True,
                                            temporary_log=True)
        self.process.start()
        try:
            self.process.wait_ready(limit_s=15, poll_s=0.05)
        except srv.NotReady as e:
            text = self.process.log_text().strip()
            self.stop()
            raise RuntimeError(f"notesd {e}: {text}") from None

    def url(self, path, scheme="http", port=None):
        return f"{scheme}://127.0.0.1:{port or self.port}{path}"

    def scrape(self):
        return prom.scrape(self.metrics_url)

    def get(self, path):
        """(status, body) of one GET on the API port."""
        status, _, body = httpc.request(self.port, path, timeout=5)
        return status, body.decode("utf-8", "replace")

    def stop(self):
        self.process.stop(10)


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
    accepted, CPU seconds, stalls, and its own latency mean for the route `label`."""
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
