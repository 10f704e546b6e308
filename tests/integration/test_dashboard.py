#!/usr/bin/env python3
"""The live status page (GET /dashboard on the metrics port) in Debian's headless
Chromium, driven over the Chrome DevTools Protocol with the tests' own WebSocket
client: the page loads with no console error, no failed request and nothing
fetched from another origin; at rest it shows no requests; while a load runs
(database reads, /json, two WebSockets open) its charts move and show the load;
it fits a phone's width; screenshots of it under load are kept as artefacts
(NOTESD_ARTEFACT_DIR, else the working directory): dashboard-phone.png and
dashboard-desktop.png.

Also the two embedded files as a client gets them: /openapi.json is
docs/openapi.json byte for byte, and the page is served with a
Content-Security-Policy that lets it reach its own origin only."""
import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import unittest

from notes_testlib import (REPO, Notesd, create_database, db_connect, main, poll, request)
from ws_client import WebSocket

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTEFACTS = os.environ.get("NOTESD_ARTEFACT_DIR") or os.getcwd()
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}
DESKTOP = {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False}


class Browser:
    """One headless Chromium with a fresh profile, and a DevTools session on its
    first page. `events` keeps every event the session has received."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="notesd-chromium-")
        # The background-networking flags keep Chromium from calling Google's
        # services, which the closed network refuses (and which would log errors).
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-default-apps", "--mute-audio",
             f"--user-data-dir={self.profile}", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        for line in self.proc.stderr:
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            raise AssertionError("Chromium printed no DevTools address")
        # Keep reading its stderr so it never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
        targets = json.loads(poll(lambda: self._list(port), what="a Chromium page target"))
        page = next(t for t in targets if t["type"] == "page")
        path = re.sub(r"^ws://[^/]+", "", page["webSocketDebuggerUrl"])
        self.ws = WebSocket(port, path, timeout=30)
        self.next_id, self.events = 0, []

    @staticmethod
    def _list(port):
        try:
            status, _, body = request(port, "GET", "/json/list")
        except OSError:
            return None
        return body if status == 200 and b'"page"' in body else None

    def call(self, method, **params):
        """Sends one command and returns its result, keeping the events that come first."""
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv()[1])
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg["result"]
            self.events.append(msg)

    def js(self, expression):
        """The value of a JavaScript expression in the page (awaited, by value)."""
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                        awaitPromise=True)
        if "exceptionDetails" in res:
            raise AssertionError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def wait_for(self, expression, timeout=30, what=None):
        return poll(lambda: self.js(expression), timeout=timeout, what=what or expression)

    def screenshot(self, name):
        """The whole page as a PNG in ARTEFACTS; returns its path."""
        data = self.call("Page.captureScreenshot", format="png",
                         captureBeyondViewport=True)["data"]
        os.makedirs(ARTEFACTS, exist_ok=True)
        path = os.path.join(ARTEFACTS, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def problems(events, origin):
    """Console errors, uncaught exceptions, failed requests, and requests to any other
    origin, from a session's events."""
    found = []
    for e in events:
        method, p = e.get("method"), e.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(f"exception: {p['exceptionDetails'].get('text')} "
                         f"{p['exceptionDetails'].get('exception', {}).get('description')}")
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert",
                                                                        "warning"):
            found.append(f"console.{p['type']}: {[a.get('value') for a in p.get('args', [])]}")
        elif method == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
            found.append(f"log {p['entry']['level']}: {p['entry'].get('text')} "
                         f"{p['entry'].get('url', '')}")
        elif method == "Network.loadingFailed":
            found.append(f"request failed: {p.get('errorText')}")
        elif method == "Network.requestWillBeSent" and \
                not p["request"]["url"].startswith(origin + "/"):
            found.append(f"request to another origin: {p['request']['url']}")
    return found


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CHROMIUM):
            raise unittest.SkipTest("no chromium (apt-get install chromium)")
        cls.server = Notesd(create_database("dashboard"), env={"POOL_MAX": "4", "QUERY_TIMEOUT_MS": "2000"})
        cls.origin = f"http://127.0.0.1:{cls.server.metrics_port}"

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.output

    def test_openapi_json_is_the_description_byte_for_byte(self):
        status, headers, body = request(self.server.metrics_port, "GET", "/openapi.json")
        with open(os.path.join(REPO, "docs", "openapi.json"), "rb") as f:
            self.assertEqual((status, body), (200, f.read()))
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(body)["openapi"], "3.1.0")

    def test_dashboard_is_served_with_a_policy_that_keeps_it_home(self):
        status, headers, body = request(self.server.metrics_port, "GET", "/dashboard")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/html; charset=utf-8")
        self.assertIn("default-src 'none'", headers["content-security-policy"])
        self.assertIn("connect-src 'self'", headers["content-security-policy"])
        self.assertEqual(request(self.server.metrics_port, "HEAD", "/dashboard")[1]
                         ["content-length"], str(len(body)))
        self.assertIsNone(re.search(rb"(src|href)=[\"']?(https?:)?//", body),
                          "the page names an external resource")

    def test_the_page_in_chromium_moves_with_a_load(self):
        browser = Browser()
        stop = threading.Event()
        sockets, locker = [], None
        try:
            for domain in ("Page", "Runtime", "Log", "Network"):
                browser.call(f"{domain}.enable")
            browser.call("Emulation.setDeviceMetricsOverride", **PHONE)
            browser.call("Page.navigate", url=self.origin + "/dashboard")
            browser.wait_for("window.dashboard !== undefined && window.dashboard.polls >= 3",
                             what="three polls of /metrics")
            # At rest: the page's own polls go to the metrics port, which is not counted.
            self.assertEqual(browser.js("document.querySelector('#rps').dataset.last"), "0")
            self.assertEqual(browser.js("document.querySelector('#ws').dataset.last"), "0")
            before = browser.js("document.querySelector('#rps canvas').toDataURL()")
            # Phone width: nothing wider than the screen.
            self.assertLessEqual(browser.js("document.documentElement.scrollWidth"),
                                 PHONE["width"])

            def load(paths):
                while not stop.is_set():
                    for path in paths:
                        request(self.server.port, "GET", path)
            workers = [threading.Thread(target=load, args=(paths,), daemon=True) for paths in
                       (["/notes?tag=js", "/json"], ["/notes/7", "/notes?tag=perf"],
                        ["/notes?tag=ts"], ["/notes/1234"])]
            # A pool connection in use at every poll, not only by chance: a PUT waits on a
            # row this test holds locked, until its query deadline (504), and again.
            locker = db_connect("dashboard")
            locker.autocommit = False
            locker.cursor().execute("select id from notes where id = 5 for update")

            def held():
                while not stop.is_set():
                    request(self.server.port, "PUT", "/notes/5",
                            body={"title": "t", "body": "b", "tag": "js"})
            workers.append(threading.Thread(target=held, daemon=True))
            for w in workers:
                w.start()
            sockets = [WebSocket(self.server.port, "/ws/echo") for _ in range(2)]
            browser.wait_for("+document.querySelector('#rps').dataset.last > 5",
                             what="the requests chart to show the load")
            browser.wait_for("+document.querySelector('#ws').dataset.last === 2",
                             what="the WebSocket chart to show two connections")
            browser.wait_for("window.dashboard.samples.some(s => s.inUse >= 1)",
                             what="a pool connection in use")
            browser.wait_for("+document.querySelector('#latency').dataset.last > 0",
                             what="a latency quantile")
            browser.wait_for("document.querySelector('#lag').dataset.last !== ''",
                             what="an event-loop lag quantile")
            after = browser.js("document.querySelector('#rps canvas').toDataURL()")
            self.assertNotEqual(before, after, "the requests chart did not change")
            tiles = browser.js("[...document.querySelectorAll('.tile b')]"
                               ".map(b => b.textContent)")
            self.assertNotIn("–", tiles[:3], tiles)
            self.assertLessEqual(browser.js("document.documentElement.scrollWidth"),
                                 PHONE["width"])
            print("phone screenshot:", browser.screenshot("dashboard-phone.png"))
            browser.call("Emulation.setDeviceMetricsOverride", **DESKTOP)
            browser.wait_for(f"window.innerWidth === {DESKTOP['width']}")
            polls = browser.js("window.dashboard.polls")
            browser.wait_for(f"window.dashboard.polls >= {polls + 2}",
                             what="two polls drawn at the new width")
            print("desktop screenshot:", browser.screenshot("dashboard-desktop.png"))
            self.assertEqual(browser.js("window.dashboard.failures"), 0)
            browser.js("1")  # collect the events that came last
            found = problems(browser.events, self.origin)
            self.assertEqual(found, [], found)
            fetched = {e["params"]["request"]["url"] for e in browser.events
                       if e.get("method") == "Network.requestWillBeSent"}
            self.assertEqual(fetched, {self.origin + "/dashboard", self.origin + "/metrics"})
        finally:
            stop.set()
            if locker is not None:
                locker.rollback()
                locker.close()
            for s in sockets:
                s.close()
            browser.close()


if __name__ == "__main__":
    main()
