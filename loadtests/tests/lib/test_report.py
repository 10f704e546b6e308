"""loadlib.report's number formats and progress lines, and loadlib.cli's durations:
the one definition of each that every command uses, each report's own conventions
(the harness's `n/a`, bench's `–`, reconcile's `-`) kept.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_report
"""
import argparse
import contextlib
import io
import math
import os
import re
import tempfile
import unittest

from loadlib import cli, report


class Numbers(unittest.TestCase):
    def test_significant_digits(self):                       # bench's figures
        self.assertEqual([report.fmt(v) for v in (None, 0, 0.000123456, 1.23456, 123.456, 1234.5, 98765.4)],
                         ["–", "0", "0.000123", "1.23", "123", "1,234", "98,765"])
        self.assertEqual(report.fmt(0.35, 2), "0.35")
        self.assertEqual(report.fmt(1e-9), "0.00000")           # no exponent in a table

    def test_fixed_and_ratio(self):
        self.assertEqual((report.fmt_fixed(None), report.fmt_fixed(3.14159), report.fmt_fixed(2.5, 1)),
                         ("n/a", "3.14", "2.5"))
        self.assertEqual((report.fmt_fixed(-0.25, 1, True), report.fmt_fixed(3, 0, True),
                          report.fmt_fixed(None, 2, True, missing="not reported")),
                         ("-0.2", "+3", "not reported"))      # -0.25 rounds half to even
        self.assertEqual((report.fmt_ratio(None), report.fmt_ratio(0.9049)), ("–", "0.90"))

    def test_counts_and_shares(self):
        self.assertEqual((report.fmt_int(None), report.fmt_int(24726.4)), ("n/a", "24,726"))
        self.assertEqual((report.fmt_pct(None), report.fmt_pct(85.4)), ("n/a", "85%"))
        self.assertEqual((report.fmt_share(None), report.fmt_share(0.854)), ("–", "85%"))
        self.assertEqual(report.fmt_share(0.0123, 1, "n/a"), "1.2%")
        self.assertEqual(report.fmt_share(None, 1, "n/a"), "n/a")
        self.assertEqual((report.fmt_spread(None), report.fmt_spread({"spread": None}),
                          report.fmt_spread({"spread": 0.2})), ("–", "–", "20%"))

    def test_times_and_sizes(self):
        self.assertEqual([report.fmt_ms(v) for v in (None, 1.234, 9.999, 10, 123.45)],
                         ["n/a", "1.23", "10.00", "10.0", "123.5"])
        self.assertEqual([report.fmt_ms_fine(v) for v in (None, math.inf, 1.23456, 99.9994, 100, 1234.56)],
                         ["-", "inf", "1.235", "99.999", "100.0", "1234.6"])
        self.assertEqual([report.fmt_s(v) for v in (None, 0.0123, 0.1, 2.345)],
                         ["n/a", "12.3 ms", "0.10 s", "2.35 s"])   # 2.345 is 2.34499... in binary
        self.assertEqual([report.fmt_mib(v) for v in (None, 7.25, 10, 123.4)],
                         ["n/a", "7.2 MiB", "10 MiB", "123 MiB"])
        self.assertEqual([report.fmt_bound(v) for v in (None, 0.5, 10.0)], ["+Inf", "0.5", "10"])
        self.assertEqual([report.fmt_signed(n) for n in (0, 7, -3)], ["0", "+7", "-3"])


class Files(unittest.TestCase):
    def test_table(self):
        self.assertEqual(report.table(["a", "b"], [[1, None], ["x", 2.5]]),
                         "| a | b |\n|---|---|\n| 1 | None |\n| x | 2.5 |")

    def test_json_is_replaced_whole(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            report.write_json(path, {"b": 1, "a": [1, 2]}, indent=1, sort_keys=True)
            with open(path) as f:
                self.assertEqual(f.read(), '{\n "a": [\n  1,\n  2\n ],\n "b": 1\n}\n')
            self.assertEqual(os.listdir(d), ["out.json"])        # no temporary file left


class Progress(unittest.TestCase):
    def lines(self, log, stream="stderr"):
        buf = io.StringIO()
        redirect = contextlib.redirect_stderr if stream == "stderr" else contextlib.redirect_stdout
        with redirect(buf):                         # looked up at each call: the redirection counts
            log("first")
            log(42)
        return buf.getvalue()

    def test_each_commands_lines(self):
        self.assertEqual(self.lines(report.logger("calibrate")), "calibrate: first\ncalibrate: 42\n")
        self.assertEqual(self.lines(report.logger(stream="stdout"), "stdout"), "first\n42\n")
        bench = self.lines(report.logger("bench", clock=True))
        self.assertRegex(bench, r"^\[bench \d\d:\d\d:\d\d\] first\n\[bench \d\d:\d\d:\d\d\] 42\n$")

    def test_nothing_goes_to_the_other_stream(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.lines(report.logger("calibrate"))
        self.assertEqual(out.getvalue(), "")


class Durations(unittest.TestCase):
    def test_seconds(self):
        self.assertEqual([cli.seconds(t) for t in ("180s", "3m", "1m30s", "15", "500ms", "1h", "2.5")],
                         [180, 180, 90, 15, 0.5, 3600, 2.5])
        for bad in ("", "3x", "m", "1m 30s", "-5s"):
            with self.assertRaisesRegex(argparse.ArgumentTypeError, re.escape(f"bad duration {bad!r}")):
                cli.seconds(bad)

    def test_whole_seconds_as_bench_takes_them(self):
        self.assertEqual([cli.whole_seconds(t) for t in ("20s", "1m", "20", "1m30s")], [20, 60, 20, 90])
        for bad in ("1.5s", "500ms", "abc", ""):
            with self.assertRaisesRegex(argparse.ArgumentTypeError, "whole seconds like 20s or 1m"):
                cli.whole_seconds(bad)
        for zero in ("0", "0s"):
            with self.assertRaisesRegex(argparse.ArgumentTypeError, "must be at least 1s"):
                cli.whole_seconds(zero)

    def test_an_argparse_type(self):
        p = argparse.ArgumentParser()
        p.add_argument("--duration", type=cli.whole_seconds)
        self.assertEqual(p.parse_args(["--duration", "2m"]).duration, 120)
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
            p.parse_args(["--duration", "2.5s"])
        self.assertIn("argument --duration: '2.5s': whole seconds like 20s or 1m", err.getvalue())


if __name__ == "__main__":
    unittest.main(verbosity=2)
