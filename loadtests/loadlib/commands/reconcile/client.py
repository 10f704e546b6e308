"""What the load tool reported, for reconcile: k6's summary (handleSummary data or
--summary-export) or the WRK_JSON line of loadtests/wrk/notes.lua, read into one
Client: totals, percentiles, failures, and responses per route and status with
the routes named as the server's `path` label names them.
"""
import json
import re

from loadlib.prom import InputError
from loadlib.tools import wrk

PERCENTILES = (50, 95, 99)

# Route templates of the `path` label (notesd's and the peer's).
KNOWN_TEMPLATES = ("/notes/:id", "/notes", "/json", "/", "/status", "/primes", "/static", "/delay/:ms")


# --------------------------------------------------------------------- names and routes

def route_of_name(name):
    """'GET /notes/:id' -> ('GET', '/notes/:id'); 'GET /notes?tag=' -> ('GET', '/notes');
    'GET /static/app.min.js' -> ('GET', '/static'). None for an unattributed name."""
    parts = name.split(" ", 1)
    if len(parts) != 2 or not parts[0].isalpha() or not parts[1].startswith("/"):
        return None
    method, path = parts[0].upper(), parts[1].split("?", 1)[0]
    if path == "/static" or path.startswith("/static/"):
        path = "/static"
    elif re.fullmatch(r"/delay/(:ms|\d+)", path):
        path = "/delay/:ms"
    elif re.fullmatch(r"/notes/\d+", path):
        path = "/notes/:id"
    elif path not in KNOWN_TEMPLATES:
        path = "other"
    return method, path


def route_text(route):
    return f"{route[0]} {route[1]}"


# --------------------------------------------------------------------- client summaries

class Client:
    """What the load tool reported."""

    def __init__(self, tool):
        self.tool = tool
        self.mode = None
        self.total = 0
        self.duration_s = None
        self.rps = None
        self.percentiles = {}          # 50 -> ms
        self.max_ms = None
        self.failed = 0                 # responses the tool counts as failed (non-2xx / not ok)
        self.failed_what = ""
        self.socket_errors = None
        # responses per (route, status); status is an int, or "!NNN" for "not NNN"
        self.by_route_status = {}
        self.unattributed = {}          # status -> responses the tool could not name
        self.sent = None                # route -> requests the tool sent (wrk with BREAKDOWN=1)
        self.notes = []

    def add(self, route, status, n):
        key = (route, status)
        self.by_route_status[key] = self.by_route_status.get(key, 0) + n

    def by_route(self):
        out = {}
        for (route, _), n in self.by_route_status.items():
            out[route] = out.get(route, 0) + n
        return out

    def has_routes(self):
        return bool(self.by_route_status)


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def load_wrk(path):
    try:
        data = wrk.read_json_line(path)
    except wrk.OutputError as e:
        raise InputError(str(e)) from None
    c = Client("wrk")
    c.mode = data.get("mode")
    c.total = int(data.get("requests", 0))
    c.duration_s = _num(data.get("duration_s"))
    c.rps = _num(data.get("rps"))
    for p in PERCENTILES:
        if _num(data.get(f"p{p}_ms")) is not None:
            c.percentiles[p] = float(data[f"p{p}_ms"])
    c.max_ms = _num(data.get("max_ms"))
    c.failed = int(data.get("non2xx", 0))
    c.failed_what = "non-2xx responses"
    c.socket_errors = int(data.get("socket_errors", 0))
    responses = data.get("responses")
    if isinstance(responses, dict):
        for key, n in responses.items():
            name, _, status = key.rpartition(" ")
            if not status.isdigit():
                raise InputError(f"{path}: bad responses key {key!r}")
            route = route_of_name(name)
            if route is None:
                c.unattributed[int(status)] = c.unattributed.get(int(status), 0) + int(n)
            else:
                c.add(route, int(status), int(n))
        counted = sum(c.by_route_status.values()) + sum(c.unattributed.values())
        if counted != c.total:
            c.notes.append(f"the per-name responses add up to {counted}, wrk's total is {c.total}")
    else:
        c.notes.append("no per-name breakdown in the WRK_JSON line (run notes.lua with BREAKDOWN=1): "
                       "only totals are compared")
    sent = data.get("sent")
    if isinstance(sent, dict):
        c.sent = {}
        for name, n in sent.items():
            route = route_of_name(name) or ("?", "?")
            c.sent[route] = c.sent.get(route, 0) + int(n)
    return c


_CHECK = re.compile(r"^(.*) is (\d{3})$")


def _k6_checks(group, out):
    if not isinstance(group, dict):
        return out
    checks = group.get("checks") or []
    if isinstance(checks, dict):            # --summary-export: {name: {...}}
        checks = list(checks.values())
    out.extend(c for c in checks if isinstance(c, dict))
    groups = group.get("groups") or []
    if isinstance(groups, dict):
        groups = list(groups.values())
    for g in groups:
        _k6_checks(g, out)
    return out


def load_k6(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e}") from None
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if not isinstance(metrics, dict) or "http_reqs" not in metrics:
        raise InputError(f"{path}: no metrics.http_reqs (not a k6 summary)")

    def values(name):
        m = metrics.get(name)
        if not isinstance(m, dict):
            return {}
        v = m.get("values")                 # handleSummary data; --summary-export is flat
        return v if isinstance(v, dict) else m

    c = Client("k6")
    reqs = values("http_reqs")
    c.total = int(reqs.get("count", 0))
    c.rps = _num(reqs.get("rate"))
    state = data.get("state") or {}
    if _num(state.get("testRunDurationMs")) is not None:
        c.duration_s = state["testRunDurationMs"] / 1000.0
    elif c.rps:
        c.duration_s = c.total / c.rps
    dur = values("http_req_duration")
    for p in PERCENTILES:
        v = _num(dur.get(f"p({p})"))
        if v is None and p == 50:
            v = _num(dur.get("med"))
        if v is not None:
            c.percentiles[p] = float(v)
    c.max_ms = _num(dur.get("max"))
    # http_req_failed is a Rate whose "true" samples (passes) are failed requests
    failed = values("http_req_failed")
    c.failed = int(failed.get("passes", 0) or 0)
    c.failed_what = "failed requests (http_req_failed)"
    # the script's options.tags, which handleSummary (loadtests/k6/lib/summary.js) copies under
    # "notesd_test": k6's own summary data does not carry the options
    test = data.get("notesd_test")
    tags = (test.get("tags") or {}) if isinstance(test, dict) else {}
    c.mode = tags.get("mode")
    checks = _k6_checks(data.get("root_group"), [])
    for chk in checks:
        m = _CHECK.match(str(chk.get("name", "")))
        route = route_of_name(m.group(1)) if m else None
        if route is None:
            c.notes.append(f"check {chk.get('name')!r} does not name a request; ignored")
            continue
        expected = int(m.group(2))
        if chk.get("passes"):
            c.add(route, expected, int(chk["passes"]))
        if chk.get("fails"):
            c.add(route, f"!{expected}", int(chk["fails"]))
    if not checks:
        c.notes.append("no checks in the summary: only totals are compared")
    elif sum(c.by_route_status.values()) != c.total:
        c.notes.append(f"the checks add up to {sum(c.by_route_status.values())}, http_reqs is {c.total}")
    return c
