"""The one HTTP client of loadlib: every scrape of a /metrics page, every readiness
probe and every check of an answer goes through here.

It is the standard library's http.client underneath, so a response is read the way
real servers send it: a `Content-Length` body, a chunked one (what Node, Bun and Deno
send for a page written with writeHead + end), or one that ends when the server
closes; on a fresh connection or on a kept-alive one; gzip-encoded when the caller
asked for it. Nothing here parses HTTP by hand.

Every failure (nothing listens, a reset, a malformed or truncated answer, a timeout)
is raised as OSError, so callers catch one exception type.
"""
import collections
import gzip
import http.client
import urllib.parse

Response = collections.namedtuple("Response", "status headers body")
Response.__doc__ = """status: int; headers: {lower-case name: value} (repeated fields joined
with ", "); body: bytes, de-chunked, and gunzipped when it was asked for and sent so."""


class HTTPError(OSError):
    """The server answered something that is not a well-formed HTTP response."""


def _read(res, gunzip):
    body = res.read()
    headers = {}
    for k, v in res.getheaders():
        k = k.lower()
        headers[k] = f"{headers[k]}, {v}" if k in headers else v
    if gunzip and headers.get("content-encoding", "").lower() == "gzip":
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as e:
            raise HTTPError(f"bad gzip body: {e}") from None
    return Response(res.status, headers, body)


def _send(conn, method, path, body, headers, gunzip):
    hdrs = dict(headers or {})
    if gunzip:
        hdrs.setdefault("Accept-Encoding", "gzip")
    if isinstance(body, str):
        body = body.encode("utf-8")
    try:
        conn.request(method, path, body=body, headers=hdrs)
        return _read(conn.getresponse(), gunzip)
    except http.client.HTTPException as e:
        raise HTTPError(f"{type(e).__name__}: {e}") from None


def request(port, path, timeout=2.0, method="GET", body=None, headers=None, host="127.0.0.1",
            accept_gzip=False):
    """One request on a fresh connection, closed afterwards: a Response. `accept_gzip` asks for
    a gzip-encoded answer (Accept-Encoding) and decodes it."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        hdrs = {"Connection": "close", **(headers or {})}
        return _send(conn, method, path, body, hdrs, accept_gzip)
    finally:
        conn.close()


def get(url, timeout=10.0, accept_gzip=False):
    """GET of an http:// URL (path and query as given; `/` when it has none)."""
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or not u.hostname:
        raise HTTPError(f"not an http:// URL: {url!r}")
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    return request(u.port or 80, path, timeout=timeout, host=u.hostname, accept_gzip=accept_gzip)


class Connection:
    """A kept-alive connection for a sequence of requests (reopened by http.client when
    the server closed it in between). Use as a context manager, or close() it."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self._conn = http.client.HTTPConnection(host, port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, accept_gzip=False):
        return _send(self._conn, method, path, body, headers, accept_gzip)

    def close(self):
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
