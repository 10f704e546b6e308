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
import json
import os
import re
import threading
import unittest

from chromium import CHROMIUM, DESKTOP, PHONE, Browser, problems
from notes_testlib import REPO, Notesd, create_database, db_connect, main, request
from ws_client import WebSocket

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
