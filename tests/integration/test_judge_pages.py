#!/usr/bin/env python3
"""The load-test pages a person opens, in Debian's headless Chromium (chromium.py):
loadtests/judge's --html page of a real run (a generator sending each second's share at
once, with its per-request log), and calibrate's scorecard as a page, both from
`calibrate --tools hey --smoke --html` and from the committed full scorecard. Each opens
from a file with no console error, no failed request and nothing fetched but itself
(its policy allows nothing), shows its verdicts on top, draws every chart (an SVG with a
size and marks in it), and the judge page fits a phone's width. Screenshots are kept
as artefacts (NOTESD_ARTEFACT_DIR): judge-phone.png, judge-desktop.png,
scorecard-desktop.png.

    NOTESD_BIN=build-test/notesd /usr/bin/python3 tests/integration/test_judge_pages.py
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from chromium import CHROMIUM, DESKTOP, PHONE, Browser, problems
from notes_testlib import REPO, main

LOADTESTS = os.path.join(REPO, "loadtests")
NOTESD = os.environ.get("NOTESD_BIN") or os.path.join(REPO, "build", "notesd")
# each chart: its size on the page, and how many bars and lines with points it draws
CHARTS = """[...document.querySelectorAll('figure svg')].map(s => {
  const box = s.getBoundingClientRect();
  const bars = [...s.querySelectorAll('rect')].filter(r => +r.getAttribute('height') > 0);
  const lines = [...s.querySelectorAll('polyline')].filter(p => p.points.numberOfItems > 1);
  return {width: box.width, height: box.height, marks: bars.length + lines.length};
})"""


class Pages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CHROMIUM):
            raise unittest.SkipTest("no chromium (apt-get install chromium)")
        if not os.access(NOTESD, os.X_OK):
            raise unittest.SkipTest(f"{NOTESD} is not built")
        cls.tmp = tempfile.mkdtemp(prefix="judge-pages-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def open_page(self, path, width):
        """The page in a fresh Chromium at `width`: (browser, its charts)."""
        browser = Browser()
        self.addCleanup(browser.close)
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.call(f"{domain}.enable")
        browser.call("Emulation.setDeviceMetricsOverride", **width)
        url = "file://" + path
        browser.call("Page.navigate", url=url)
        browser.wait_for("document.readyState === 'complete'", what="the page to load")
        charts = browser.js(CHARTS)
        browser.js("1")  # collect the events that came last
        self.assertEqual(problems(browser.events, "file://"), [])
        fetched = {e["params"]["request"]["url"] for e in browser.events
                   if e.get("method") == "Network.requestWillBeSent"}
        self.assertEqual(fetched, {url})
        for chart in charts:
            self.assertGreater(chart["width"], 100, charts)
            self.assertGreater(chart["height"], 50, charts)
            self.assertGreater(chart["marks"], 0, charts)
        return browser, charts

    def test_judges_page_of_a_bursty_run(self):
        page, log = os.path.join(self.tmp, "judge.html"), os.path.join(self.tmp, "log.csv")
        res = subprocess.run(
            [os.path.join(LOADTESTS, "judge"), "--notesd", NOTESD, "--rate", "200",
             "--connections", "8", "--duration", "2", "--log", log, "--html", page, "--",
             sys.executable, os.path.join(LOADTESTS, "tests", "judge", "generators.py"),
             "bursts", "{url}", "--rate", "200", "--duration", "2", "--connections", "8",
             "--log", log], capture_output=True, text=True, timeout=120)
        self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
        browser, charts = self.open_page(page, PHONE)
        # arrivals, inter-arrival times, connections, latency (the server's and the log's)
        self.assertEqual(len(charts), 4, charts)
        self.assertEqual(browser.js("document.querySelector('.tile b').textContent"), "FAIL")
        self.assertIn("bursts", browser.js("document.querySelector('table').textContent"))
        self.assertEqual(browser.js("document.querySelectorAll('figure:last-child polyline')"
                                    ".length"), 2)
        self.assertLessEqual(browser.js("document.documentElement.scrollWidth"), PHONE["width"])
        print("phone screenshot:", browser.screenshot("judge-phone.png"))
        browser.call("Emulation.setDeviceMetricsOverride", **DESKTOP)
        print("desktop screenshot:", browser.screenshot("judge-desktop.png"))

    def test_the_scorecard_as_a_page(self):
        full = os.path.join(self.tmp, "scorecard.html")
        subprocess.run([sys.executable, "-B", "-c",
                        "import json, sys\n"
                        "from loadlib.commands.calibrate import scorecard_page\n"
                        "with open(sys.argv[1]) as f:\n"
                        "    scorecard_page.write_scorecard_page(json.load(f), sys.argv[2])\n",
                        os.path.join(LOADTESTS, "calibration", "latest-scorecard.json"), full],
                       cwd=LOADTESTS, check=True, timeout=60)
        browser, charts = self.open_page(full, DESKTOP)
        # latency error, check 8's CV, CPU per request
        self.assertEqual(len(charts), 3, charts)
        verdicts = browser.js("[...document.querySelectorAll('td .v')].map(v => v.textContent)")
        self.assertIn("FAIL", verdicts)
        self.assertIn("PASS", verdicts)
        print("desktop screenshot:", browser.screenshot("scorecard-desktop.png"))

    def test_calibrate_writes_the_page(self):
        if not shutil.which("hey"):
            self.skipTest("hey is not installed (apt-get install hey)")
        smoke = os.path.join(self.tmp, "smoke.html")
        res = subprocess.run([os.path.join(LOADTESTS, "calibrate"), "--notesd", NOTESD,
                              "--tools", "hey", "--smoke", "--html", smoke],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(res.returncode, 0, res.stderr[-2000:])
        browser, _ = self.open_page(smoke, DESKTOP)
        self.assertEqual(browser.js("document.querySelector('td').textContent"), "hey")


if __name__ == "__main__":
    main()
