"""loadlib.httpc, the one HTTP client of loadlib, against real servers: a raw-socket
server that frames its answers each way real servers do (Content-Length, chunked,
ended by close, gzip, kept alive, or broken), and Node's own http module writing a
page with writeHead + end, which is how the Express peer's /metrics is written and
arrives chunked.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_httpc
"""
import gzip
import shutil
import socket
import subprocess
import threading
import unittest


from loadlib import httpc, prom

PAGE = b"# TYPE http_requests_total counter\nhttp_requests_total{method=\"GET\"} 7\n"


def chunked(body, size=10):
    parts = [b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size)]
    return b"".join(parts) + b"0\r\n\r\n"


# What the server sends for each path, after reading one request head.
ANSWERS = {
    "/length": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(PAGE), PAGE),
    "/chunked": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                + chunked(PAGE),
    "/close": b"HTTP/1.0 200 OK\r\n\r\n" + PAGE,
    "/gzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
             + chunked(gzip.compress(PAGE), 7),
    "/repeated": b"HTTP/1.1 200 OK\r\nVary: a\r\nVary: b\r\nContent-Length: 0\r\n\r\n",
    "/truncated": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\nonly a part",
    "/garbage": b"SSH-2.0-OpenSSH_9.2\r\n",
}
KEEP_ALIVE = {"/length", "/chunked", "/gzip", "/repeated"}


class RawServer(threading.Thread):
    """Answers each request from ANSWERS; keeps the connection for the framed ones."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.heads = []
        self.connections = 0

    def run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        with c:
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    data = c.recv(4096)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                self.heads.append(head.decode("latin-1"))
                path = head.split(b" ")[1].decode()
                c.sendall(ANSWERS[path])
                if path not in KEEP_ALIVE:
                    return

    def close(self):
        self.sock.close()


class Framing(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = RawServer()
        cls.srv.start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def get(self, path, **kw):
        return httpc.request(self.srv.port, path, **kw)

    def test_content_length_chunked_and_close_delimited_bodies_read_alike(self):
        for path in ("/length", "/chunked", "/close"):
            with self.subTest(path=path):
                status, headers, body = self.get(path)
                self.assertEqual((status, body), (200, PAGE))
                self.assertEqual(prom.parse_metrics(body.decode())[0][2], 7.0)
        self.assertEqual(self.get("/chunked").headers["transfer-encoding"], "chunked")

    def test_gzip_decoded_only_when_asked(self):
        res = self.get("/gzip", accept_gzip=True)
        self.assertEqual(res.body, PAGE)
        self.assertIn("Accept-Encoding: gzip", self.srv.heads[-1])
        raw = self.get("/gzip")
        self.assertIn("Accept-Encoding: identity", self.srv.heads[-1])
        self.assertEqual(gzip.decompress(raw.body), PAGE)

    def test_repeated_fields_joined(self):
        self.assertEqual(self.get("/repeated").headers["vary"], "a, b")

    def test_broken_answers_raise_oserror(self):
        for path in ("/truncated", "/garbage"):
            with self.subTest(path=path):
                with self.assertRaises(OSError):
                    self.get(path)

    def test_nothing_listening_raises_oserror(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with self.assertRaises(OSError):
            httpc.request(port, "/")

    def test_one_connection_for_a_sequence(self):
        before = self.srv.connections
        with httpc.Connection(self.srv.port) as conn:
            bodies = [conn.request("GET", p).body for p in ("/length", "/chunked", "/length")]
        self.assertEqual(bodies, [PAGE] * 3)
        self.assertEqual(self.srv.connections - before, 1)

    def test_scrape_of_a_url(self):
        status, text = prom.scrape_text(f"http://127.0.0.1:{self.srv.port}/chunked")
        self.assertEqual((status, text), (200, PAGE.decode()))
        with self.assertRaises(OSError):
            httpc.get("https://127.0.0.1/")


NODE_SERVER = r"""
const http = require('http');
const page = '# TYPE up gauge\nup 1\n' + 'x_total 2\n'.repeat(2000);
http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
  res.end(page);
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });
"""


@unittest.skipUnless(shutil.which("node"), "node is not on PATH")
class NodePage(unittest.TestCase):
    """What the Express peer's metrics port does: writeHead without a length, then end."""

    def test_node_writehead_end_page(self):
        p = subprocess.Popen(["node", "-e", NODE_SERVER], stdout=subprocess.PIPE, text=True)
        try:
            port = int(p.stdout.readline())
            res = httpc.request(port, "/metrics")
            self.assertEqual(res.headers.get("transfer-encoding"), "chunked")   # the case that broke scrapes
            samples = prom.parse_metrics(res.body.decode())
            self.assertEqual(samples[0], ("up", {}, 1.0))
            self.assertEqual(len(samples), 2001)
        finally:
            p.terminate()
            p.wait(10)
            p.stdout.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
