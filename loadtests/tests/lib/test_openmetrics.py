"""loadlib.openmetrics: the harness's scrapes as OpenMetrics with timestamps, checked
line by line against the format's rules (families declared once and contiguous,
counters without `_total` in their family name, histogram points together,
increasing timestamps per series, `# EOF` last).

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_openmetrics
"""
import os
import re
import unittest


from loadlib import openmetrics as om, prom
from tests import FIXTURES

FIX = FIXTURES
T0 = 1764540000.0

PAGE = """# HELP req_total Requests "answered", back\\\\slash.
# TYPE req_total counter
req_total{path="/a",status_code="200"} {a}
req_total{path="/b",status_code="200"} 1
# HELP lat_seconds Latency.
# TYPE lat_seconds histogram
lat_seconds_bucket{path="/a",le="0.1"} {a}
lat_seconds_bucket{path="/a",le="+Inf"} {a}
lat_seconds_sum{path="/a"} 0.5
lat_seconds_count{path="/a"} {a}
# TYPE odd_counter counter
odd_counter 3
# TYPE in_flight gauge
in_flight{job="inner"} 2
untyped_thing 1.5e-05
"""


def page(a):
    return PAGE.replace("{a}", str(a))


def stream(*pages):
    """A metrics.prom.gz text: (time, status, page) triples."""
    return "".join(f"# SCRAPE unix={t:.3f} status={status}\n{body}" for t, status, body in pages)


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def sample_lines(text):
    return [l for l in text.splitlines() if l and not l.startswith("#")]


def split_sample(line):
    """(name, {labels}, value text, timestamp) of one OpenMetrics sample line."""
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+) (\S+)$', line)
    assert m, line
    return m.group(1), prom.parse_labels((m.group(2) or "{}")[1:-1]), m.group(3), float(m.group(4))


class Rules(unittest.TestCase):
    """The format's rules, over three scrapes of a hand-written page."""

    @classmethod
    def setUpClass(cls):
        cls.text, cls.written, cls.skipped = om.convert(
            stream((T0, "200", page(1)), (T0 + 1, "200", page(5)), (T0 + 2, "200", page(9))),
            "notesd", "read", 2)

    def test_ends_with_eof(self):
        self.assertTrue(self.text.endswith("\n# EOF\n"))
        self.assertEqual(self.text.count("# EOF"), 1)

    def test_counter_family_is_declared_without_total(self):
        self.assertIn("# TYPE req counter\n", self.text)
        self.assertNotIn("# TYPE req_total", self.text)
        self.assertTrue(all(split_sample(l)[0] == "req_total" for l in sample_lines(self.text)
                            if l.startswith("req")))

    def test_counter_without_total_is_unknown_with_its_name(self):
        self.assertIn("# TYPE odd_counter unknown\n", self.text)
        self.assertIn('odd_counter{job="notesd",target="notesd",mode="read",round="2"} 3 1764540000.000\n', self.text)

    def test_untyped_is_unknown_and_values_keep_their_meaning(self):
        self.assertIn("# TYPE untyped_thing unknown\n", self.text)
        line = next(l for l in sample_lines(self.text) if l.startswith("untyped_thing"))
        self.assertEqual(float(split_sample(line)[2]), 1.5e-05)

    def test_help_once_per_family_with_openmetrics_escapes(self):
        self.assertEqual(self.text.count("# HELP req "), 1)
        self.assertIn('# HELP req Requests \\"answered\\", back\\\\slash.\n', self.text)

    def test_type_once_per_family_and_families_contiguous(self):
        families, seen, current = [], set(), None
        for line in self.text.splitlines():
            if line.startswith("# TYPE "):
                name = line.split()[2]
                self.assertNotIn(name, seen, "family declared twice")
                seen.add(name)
                current = name
                families.append(name)
            elif line and not line.startswith("#"):
                name = split_sample(line)[0]
                self.assertTrue(name == current or name.startswith(current + "_"), f"{name} outside {current}")
        self.assertEqual(families, ["req", "lat_seconds", "odd_counter", "in_flight", "untyped_thing"])

    def test_every_sample_has_the_test_labels_and_a_timestamp(self):
        lines = sample_lines(self.text)
        self.assertEqual(len(lines), 3 * 9)
        for line in lines:
            _, labels, _, t = split_sample(line)
            self.assertEqual((labels["job"], labels["target"], labels["mode"], labels["round"]),
                             ("notesd", "notesd", "read", "2"))
            self.assertIn(t, (T0, T0 + 1, T0 + 2))

    def test_a_page_label_named_like_a_test_label_is_exported(self):
        line = next(l for l in sample_lines(self.text) if l.startswith("in_flight"))
        self.assertEqual(split_sample(line)[1]["exported_job"], "inner")
        self.assertEqual(split_sample(line)[1]["job"], "notesd")

    def test_timestamps_increase_per_series(self):
        last = {}
        for line in sample_lines(self.text):
            name, labels, _, t = split_sample(line)
            key = (name, tuple(sorted(labels.items())))
            if key in last:
                self.assertGreater(t, last[key], line)
            last[key] = t

    def test_series_points_follow_each_other_and_histogram_points_stay_together(self):
        hist = [split_sample(l) for l in sample_lines(self.text) if l.startswith("lat_seconds")]
        self.assertEqual([(n, l.get("le"), t) for n, l, _, t in hist[:4]],
                         [("lat_seconds_bucket", "0.1", T0), ("lat_seconds_bucket", "+Inf", T0),
                          ("lat_seconds_count", None, T0), ("lat_seconds_sum", None, T0)])
        self.assertEqual([t for _, _, _, t in hist], [T0] * 4 + [T0 + 1] * 4 + [T0 + 2] * 4)
        reqs = [(l["path"], t) for n, l, _, t in map(split_sample, sample_lines(self.text)) if n == "req_total"]
        self.assertEqual(reqs, [("/a", T0), ("/a", T0 + 1), ("/a", T0 + 2), ("/b", T0), ("/b", T0 + 1), ("/b", T0 + 2)])

    def test_values_as_written(self):
        self.assertIn('req_total{job="notesd",target="notesd",mode="read",round="2",path="/a",status_code="200"} 9 '
                      "1764540002.000\n", self.text)
        self.assertEqual(om.format_value(float("inf")), "+Inf")
        self.assertEqual(om.format_value(float("-inf")), "-Inf")
        self.assertEqual(om.format_value(float("nan")), "NaN")
        self.assertEqual(om.format_value(0.25), "0.25")
        self.assertEqual(om.format_value(1234.0), "1234")
        self.assertEqual(om.format_value(1e20), "1e+20")

    def test_counts(self):
        self.assertEqual((self.written, self.skipped), (3, 0))


class Scrapes(unittest.TestCase):
    def test_failed_repeated_and_malformed_scrapes_are_left_out(self):
        text, written, skipped = om.convert(stream(
            (T0, "200", page(1)),
            (T0 + 1, "error", ""),
            (T0 + 2, "503", "nope\n"),
            (T0 + 2.5, "200", "this is not a page\n"),
            (T0 + 3, "200", page(4)),
            (T0 + 3, "200", page(7)),          # same time as the one before: not later, left out
        ), "node", "json", 1)
        self.assertEqual((written, skipped), (2, 4))
        values = [split_sample(l)[2] for l in sample_lines(text) if l.startswith("req_total") and '"/a"' in l]
        self.assertEqual(values, ["1", "4"])

    def test_scrapes_out_of_order_are_sorted(self):
        text, written, _ = om.convert(stream((T0 + 1, "200", page(2)), (T0, "200", page(1))), "bun", "read", 1)
        self.assertEqual(written, 2)
        ts = [split_sample(l)[3] for l in sample_lines(text) if l.startswith("odd_counter")]
        self.assertEqual(ts, [T0, T0 + 1])

    def test_no_scrapes_is_just_eof(self):
        self.assertEqual(om.convert("", "notesd", "read", 1), ("# EOF\n", 0, 0))

    def test_label_values_are_escaped_again(self):
        text, _, _ = om.convert(stream((T0, "200", 'm{a="say \\"hi\\"",b="x\\\\y",c="l\\nb"} 1\n')),
                                "notesd", "read", 1)
        self.assertIn('m{job="notesd",target="notesd",mode="read",round="1",a="say \\"hi\\"",b="x\\\\y",c="l\\nb"} 1 ',
                      text)


class Fixtures(unittest.TestCase):
    """Real pages of notesd and the peers: every family of the page survives, with its type."""

    def test_real_pages(self):
        for base in ("native-read", "node-read", "deno-write"):
            with self.subTest(fixture=base):
                before, after = fixture(f"{base}-before.prom"), fixture(f"{base}-after.prom")
                text, written, skipped = om.convert(stream((T0, "200", before), (T0 + 1, "200", after)),
                                                    "notesd", "read", 1)
                self.assertEqual((written, skipped), (2, 0))
                n = len(prom.parse_metrics(before)) + len(prom.parse_metrics(after))
                self.assertEqual(len(sample_lines(text)), n)
                self.assertIn("# TYPE http_requests counter\n", text)
                self.assertIn("# TYPE http_request_duration_seconds histogram\n", text)
                self.assertIn("# TYPE process_cpu_seconds counter\n", text)
                self.assertIn("# TYPE notes_db_pool_waiting_requests gauge\n", text)
                types = re.findall(r"^# TYPE \S+ (\S+)$", text, re.M)
                self.assertTrue(set(types) <= {"counter", "gauge", "histogram", "summary", "unknown"}, types)

    def test_the_fixture_value_is_kept(self):
        after = fixture("native-read-after.prom")
        want = prom.value(prom.parse_metrics(after), "http_requests_total", path="/notes/:id", status_code="200")
        text, _, _ = om.convert(stream((T0, "200", after)), "notesd", "read", 1)
        line = next(l for l in sample_lines(text) if l.startswith("http_requests_total") and '"/notes/:id"' in l
                    and 'status_code="200"' in l)
        self.assertEqual(float(split_sample(line)[2]), want)


if __name__ == "__main__":
    unittest.main(verbosity=2)
