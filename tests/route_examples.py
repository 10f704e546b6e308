#!/usr/bin/python3
"""One request per route and method of server/routes.h that the tests which must
touch every route send (test_valgrind.py): `(method, template)` -> (port, method,
path, body). tests/check_route_tables.py fails when a route has no example here,
or an example names a route that is gone, so a new route is under memcheck from
its first commit.

Each answers quickly and leaves the loop free: a short delay, a short drip, a
stall of 1 ms once, a WebSocket refused before its handshake (426: the routes'
frames are ws.c's, which tests/unit/test_ws.c drives), three events, a few lines.
"""
API, METRICS = "api", "metrics"

EXAMPLES = {
    ("GET", "/notes/:id"): (API, "GET", "/notes/7", None),
    ("PUT", "/notes/:id"): (API, "PUT", "/notes/8", {"title": "u", "body": "b", "tag": "v"}),
    ("GET", "/notes"): (API, "GET", "/notes?tag=js", None),
    ("POST", "/notes"): (API, "POST", "/notes", {"title": "n", "body": "b", "tag": "v"}),
    ("GET", "/json"): (API, "GET", "/json", None),
    ("GET", "/"): (API, "GET", "/", None),
    ("GET", "/status"): (API, "GET", "/status", None),
    ("GET", "/primes"): (API, "GET", "/primes?below=1000", None),
    ("GET", "/static"): (API, "GET", "/static/app.min.js", None),
    ("GET", "/delay/:ms"): (API, "GET", "/delay/2?jitter=1", None),
    ("GET", "/fault/:status"): (API, "GET", "/fault/503?every=2", None),
    ("GET", "/bytes/:n"): (API, "GET", "/bytes/70000", None),
    ("GET", "/drip"): (API, "GET", "/drip?bytes=3&duration_ms=4", None),
    ("GET", "/stall"): (API, "GET", "/stall?ms=1&every_ms=2&for_ms=2", None),
    ("GET", "/ws/echo"): (API, "GET", "/ws/echo", None),
    ("GET", "/ws/feed"): (API, "GET", "/ws/feed?count=2", None),
    ("GET", "/sse"): (API, "GET", "/sse?count=3&delay_ms=1", None),
    ("GET", "/stream/:n"): (API, "GET", "/stream/50", None),
    ("GET", "/metrics"): (METRICS, "GET", "/metrics", None),
    ("GET", "/healthz"): (METRICS, "GET", "/healthz", None),
    ("GET", "/readyz"): (METRICS, "GET", "/readyz", None),
    ("GET", "/journal"): (METRICS, "GET", "/journal?since=0&limit=20&format=csv", None),
    ("GET", "/openapi.json"): (METRICS, "GET", "/openapi.json", None),
    ("GET", "/dashboard"): (METRICS, "GET", "/dashboard", None),
}
