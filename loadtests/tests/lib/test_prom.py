"""loadlib.prom: the Prometheus text format's edge cases, series selection and
deltas between scrapes.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_prom
"""
import math
import os
import unittest


from loadlib import prom
from tests import FIXTURES

FIX = FIXTURES


class Parsing(unittest.TestCase):
    def test_escapes_in_label_values(self):
        (name, labels, value), = prom.parse_metrics(
            'm{a="say \\"hi\\"",b="back\\\\slash",c="line\\nbreak",d="comma, and }"} 3\n')
        self.assertEqual(name, "m")
        self.assertEqual(labels, {"a": 'say "hi"', "b": "back\\slash", "c": "line\nbreak", "d": "comma, and }"})
        self.assertEqual(value, 3.0)

    def test_special_values(self):
        samples = prom.parse_metrics("a +Inf\nb -Inf\nc NaN\nd 1.5e9\ne -0.25\n")
        self.assertEqual(samples[0][2], math.inf)
        self.assertEqual(samples[1][2], -math.inf)
        self.assertTrue(math.isnan(samples[2][2]))
        self.assertEqual(samples[3][2], 1.5e9)
        self.assertEqual(samples[4][2], -0.25)

    def test_le_bounds_parse_as_numbers(self):
        self.assertEqual(prom.parse_value("+Inf"), math.inf)
        self.assertEqual(prom.parse_value("0.005"), 0.005)

    def test_comments_help_type_blank_lines_and_timestamps(self):
        text = ("# HELP x_total What it counts.\n# TYPE x_total counter\n\n"
                "x_total{k=\"v\"} 7 1700000000000\n")
        self.assertEqual(prom.parse_metrics(text), [("x_total", {"k": "v"}, 7.0)])

    def test_no_exemplars_and_exemplars_read_past(self):
        plain = prom.parse_metrics('h_bucket{le="0.1"} 4\n')
        with_exemplar = prom.parse_metrics('h_bucket{le="0.1"} 4 # {trace_id="abc"} 0.05 1700000000\n')
        self.assertEqual(plain, [("h_bucket", {"le": "0.1"}, 4.0)])
        self.assertEqual(with_exemplar, plain)

    def test_openmetrics_timestamps_and_exemplars_next_to_odd_label_values(self):
        # OpenMetrics writes a sample's time in seconds with a fraction (the text format: ms)
        self.assertEqual(prom.parse_metrics('g 1 1700000000.25\nh{a="1"} 2 -5\n'),
                         [("g", {}, 1.0), ("h", {"a": "1"}, 2.0)])
        # a `}` or ` # {` inside a quoted value is the value's, not the end of the set or an exemplar
        self.assertEqual(prom.parse_metrics('m{a="x # {y} z",b="}"} 4 # {trace_id="q"} 1 2.5\n'),
                         [("m", {"a": "x # {y} z", "b": "}"}, 4.0)])
        self.assertEqual(prom.parse_metrics('m{a="#"} 4\n'), [("m", {"a": "#"}, 4.0)])
        # the whole page notesd sends an OpenMetrics scraper: exemplars on some buckets
        samples = prom.read_metrics(os.path.join(FIX, "notesd-openmetrics.txt"))
        buckets = prom.series(samples, "http_request_duration_seconds_bucket")
        self.assertTrue(all(set(dict(k)) == {"method", "path", "status_code", "le"} for k in buckets))

    def test_empty_label_set_and_trailing_comma(self):
        self.assertEqual(prom.parse_metrics("a{} 1\nb{x=\"1\",} 2\n"),
                         [("a", {}, 1.0), ("b", {"x": "1"}, 2.0)])

    def test_garbage_is_refused_and_lenient_skips_it(self):
        with self.assertRaises(prom.InputError):
            prom.parse_metrics("<html>not metrics</html>\n")
        with self.assertRaises(prom.InputError):
            prom.parse_metrics('m{a="unterminated} 1\n')
        self.assertEqual(prom.parse_lenient("<html>\nok 1\n"), [("ok", {}, 1.0)])

    def test_real_pages_of_notesd_and_the_peer(self):
        for name in ("native-read-after.prom", "node-read-after.prom", "deno-write-after.prom"):
            samples = prom.read_metrics(os.path.join(FIX, name))
            self.assertIsNotNone(prom.value(samples, "http_requests_in_flight"), name)
            self.assertTrue(prom.series(samples, "http_requests_total"), name)


class Selection(unittest.TestCase):
    PAGE = prom.parse_metrics('r_total{m="GET",s="200"} 5\nr_total{m="GET",s="404"} 1\n'
                              'r_total{m="PUT",s="200"} 2\ng 0.5\n')

    def test_series_by_label_set(self):
        s = prom.series(self.PAGE, "r_total")
        self.assertEqual(s[frozenset({"m": "GET", "s": "404"}.items())], 1.0)
        self.assertEqual(len(s), 3)

    def test_value_with_and_without_labels(self):
        self.assertEqual(prom.value(self.PAGE, "g"), 0.5)
        self.assertEqual(prom.value(self.PAGE, "r_total", m="PUT"), 2.0)
        self.assertIsNone(prom.value(self.PAGE, "r_total", m="POST"))
        self.assertIsNone(prom.value(self.PAGE, "absent"))

    def test_flat_keys(self):
        self.assertEqual(prom.flat(self.PAGE)['r_total{m="GET",s="200"}'], 5.0)
        self.assertEqual(prom.flat(self.PAGE)["g"], 0.5)


class Deltas(unittest.TestCase):
    def test_counter_deltas_and_new_series(self):
        before = prom.parse_metrics('c{k="a"} 10\n')
        after = prom.parse_metrics('c{k="a"} 15\nc{k="b"} 3\n')
        d = prom.deltas(before, after, "c")
        self.assertEqual(d[frozenset({"k": "a"}.items())], 5.0)
        self.assertEqual(d[frozenset({"k": "b"}.items())], 3.0)

    def test_a_counter_reset_is_refused(self):
        before = prom.parse_metrics('c{k="a"} 10\n')
        with self.assertRaisesRegex(prom.InputError, "went down"):
            prom.deltas(before, prom.parse_metrics('c{k="a"} 2\n'), "c")
        with self.assertRaisesRegex(prom.InputError, "disappeared"):
            prom.deltas(before, prom.parse_metrics('c{k="b"} 20\n'), "c")

    def test_histogram_deltas_grouped(self):
        before = prom.parse_metrics('h_bucket{p="/a",le="0.1"} 1\nh_bucket{p="/a",le="+Inf"} 2\n'
                                    'h_bucket{p="/b",le="0.1"} 0\nh_bucket{p="/b",le="+Inf"} 0\n')
        after = prom.parse_metrics('h_bucket{p="/a",le="0.1"} 4\nh_bucket{p="/a",le="+Inf"} 6\n'
                                   'h_bucket{p="/b",le="0.1"} 1\nh_bucket{p="/b",le="+Inf"} 3\n')
        by_path = prom.histogram_deltas(before, after, "h", lambda l: l["p"])
        self.assertEqual(by_path["/a"], [(0.1, 3.0), (math.inf, 4.0)])
        overall = prom.histogram_deltas(before, after, "h", lambda l: "all")
        self.assertEqual(overall["all"], [(0.1, 4.0), (math.inf, 7.0)])

    def test_histogram_summary_of_one_route(self):
        before = prom.parse_metrics('h_bucket{path="/x",le="0.05"} 0\nh_bucket{path="/x",le="+Inf"} 0\n'
                                    'h_count{path="/x"} 0\nh_sum{path="/x"} 0\n')
        after = prom.parse_metrics('h_bucket{path="/x",le="0.05"} 3\nh_bucket{path="/x",le="+Inf"} 4\n'
                                   'h_count{path="/x"} 4\nh_sum{path="/x"} 0.2\n'
                                   'h_count{path="/y"} 9\n')
        h = prom.histogram_summary(before, after, "h", lambda l: l.get("path") == "/x")
        self.assertEqual(h["count"], 4)
        self.assertAlmostEqual(h["mean_ms"], 50.0)
        self.assertEqual(h["buckets"], [(0.05, 3.0), (math.inf, 4.0)])
        self.assertIsNone(prom.histogram_summary(None, after, "h", lambda l: True))
        self.assertEqual(prom.histogram_summary(after, after, "h", lambda l: True), {"count": 0})

    def test_real_scrapes_of_one_run(self):
        b = prom.read_metrics(os.path.join(FIX, "native-read-before.prom"))
        a = prom.read_metrics(os.path.join(FIX, "native-read-after.prom"))
        # wrk counted 24,726 answers in this run (native-read-wrk.txt) with 8 connections,
        # so the server counted those plus at most 8 in flight: 24,733
        total = sum(prom.deltas(b, a, "http_requests_total").values())
        self.assertEqual(int(total), 24733)


if __name__ == "__main__":
    unittest.main(verbosity=2)
