"""Debian's headless Chromium for the tests, driven over the Chrome DevTools Protocol
with the tests' own WebSocket client (ws_client.py): Browser starts one with a fresh
profile and gives a session on its first page; problems() lists what a page must not
do (console errors, uncaught exceptions, failed requests, requests to another origin).
The status page's test (test_dashboard.py) and the load-test pages' (test_judge_pages.py)
use it; screenshots go to NOTESD_ARTEFACT_DIR (else the working directory)."""
import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

from notes_testlib import poll, request
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
