"""Checks of loadtests/bench that need no server and no load:

    python3 loadtests/bench.d/test_bench.py

- the pgbench scripts send notesd's SQL text, statement for statement;
- the pgbench weights are loadtests/mixes.json's shares;
- pgbench output parsing, medians and spread (wrk parsing and percentiles: loadlib/tests);
- ratios, best peer and PASS/MISS on made-up figures;
- the h2o configuration template is accepted by h2o (when h2o is installed).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LOADTESTS = os.path.dirname(HERE)
REPO = os.path.dirname(LOADTESTS)
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, LOADTESTS)

from loadlib import mixes, pgbench  # noqa: E402
from loadlib.commands import bench  # noqa: E402
from loadlib.commands import bench_report as report  # noqa: E402


def notesd_statements():
    """name -> SQL text of server/statements.c."""
    with open(os.path.join(REPO, "server", "statements.c")) as f:
        src = f.read()
    out = {}
    for m in re.finditer(r'\[[A-Z_]+\]\s*=\s*\{"(\w+)",\s*((?:"[^"]*"\s*)+),', src):
        out[m.group(1)] = "".join(re.findall(r'"([^"]*)"', m.group(2)))
    return out


def script_statements(path):
    """The SQL lines of a pgbench script with :variables numbered $1, $2, ...
    as pgbench sends them in extended and prepared mode."""
    texts = set()
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("--") or line.startswith("\\"):
                continue
            names = []

            def number(m):
                if m.group(1) not in names:
                    names.append(m.group(1))
                return f"${names.index(m.group(1)) + 1}"
            texts.add(re.sub(r":(\w+)", number, line.rstrip(";")))
    return texts


class PgbenchScripts(unittest.TestCase):
    def test_same_sql_as_notesd(self):
        statements = notesd_statements()
        for name in ("get_note", "list_by_tag", "insert_note", "update_note"):
            with self.subTest(name=name):
                texts = script_statements(os.path.join(HERE, name + ".sql"))
                self.assertEqual(texts, {statements[name]})

    def test_weights_are_the_mixes(self):
        for mode, scripts in bench.PGBENCH_MIXES.items():
            with self.subTest(mode=mode):
                total = sum(w for _, w in scripts)
                got = {s: 100 * w / total for s, w in scripts}
                want = {k: 100 * v for k, v in mixes.kind_shares(mode).items()}
                self.assertEqual(set(got), set(want))
                for k in want:
                    self.assertAlmostEqual(got[k], want[k])


PGBENCH_OUT = """transaction type: multiple scripts
number of transactions actually processed: 1234
number of failed transactions: 0 (0.000%)
latency average = 0.209 ms
initial connection time = 12.5 ms
tps = 617.000000 (without initial connection time)
"""


class Parsing(unittest.TestCase):
    def test_pgbench(self):
        p = pgbench.parse_pgbench(PGBENCH_OUT)
        self.assertEqual(p["tps"], 617.0)
        self.assertEqual(p["transactions"], 1234)
        self.assertEqual(p["failed"], 0)

    def test_pgbench_log(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tx.1")
            with open(path, "w") as f:
                for i, us in enumerate([3000, 1000, 2000]):
                    f.write(f"0 {i} {us} 0 1700000000 {i}\n")
            self.assertEqual(pgbench.pgbench_log_latencies([path]), [1.0, 2.0, 3.0])

    def test_spread(self):
        self.assertAlmostEqual(report.spread([90, 100, 110]), 0.2)
        self.assertIsNone(report.spread([5]))


def run(label, test, rps, p99, cpu, rss_mib=10, valid=True, rnd=1, lag=None):
    subject = label.split("@")[0]
    return {"round": rnd, "subject": subject, "label": label, "threads": 1, "test": test,
            "valid": valid, "rps": rps, "p50_ms": p99 / 2, "p99_ms": p99,
            "cpu_us_per_req": cpu, "rss_peak_bytes": rss_mib * report.MIB,
            "lag_mean_ms": lag, "other_cores": 0.0}


class Figures(unittest.TestCase):
    def setUp(self):
        self.runs = [
            run("notesd", "json", 95, 1.0, 10, rss_mib=7, lag=0.2),
            run("notesd", "json", 97, 1.2, 11, rss_mib=7, lag=0.3, rnd=2),
            run("notesd", "json", 10, 9.0, 99, valid=False, rnd=3),  # left out
            run("h2o", "json", 100, 1.0, 9),
            run("h2o", "json", 100, 1.0, 9, rnd=2),
            run("node", "json", 20, 10.0, 60),
            run("bun", "json", 30, 12.0, 40),
            run("deno", "json", 25, 8.0, 50),
            run("notesd", "read", 900, 5, 40, rss_mib=9),
            run("pgbench", "read", 1000, 2, 35, rss_mib=24),
            run("node", "read", 300, 30, 170),
            run("deno", "read", 400, 20, 150),
        ]
        self.startups = [{"label": "notesd", "subject": "notesd", "threads": 1,
                          "startup_ms": 15.0},
                         {"label": "node", "subject": "node", "threads": 1,
                          "startup_ms": 200.0}]
        self.summary = report.summarize(self.runs, self.startups)

    def test_medians_skip_invalid_rounds(self):
        e = self.summary["notesd"]["json"]
        self.assertEqual(e["valid_rounds"], 2)
        self.assertEqual(e["rounds"], 3)
        self.assertEqual(e["rps"]["median"], 96)

    def test_best_peer_per_figure(self):
        self.assertEqual(report.best_peer(self.summary, "json", "rps"), ("bun", 30))
        self.assertEqual(report.best_peer(self.summary, "json", "p99_ms"), ("deno", 8.0))
        self.assertEqual(report.best_peer(self.summary, "json", "cpu_us_per_req"), ("bun", 40))

    def test_targets(self):
        rows = report.target_rows(self.summary, ["json", "read"])
        by = {(r["target"], r["test"], r["subject"]): r for r in rows}
        r = by[("req/s ≥ 90% of h2o's static ceiling", "json", "notesd")]
        self.assertAlmostEqual(r["value"], 0.96)
        self.assertEqual(r["result"], "PASS")
        r = by[("CPU/request ≤ 1.25× h2o's", "json", "notesd")]
        self.assertEqual(r["result"], "PASS")  # 10.5 / 9
        r = by[("req/s ≥ 95% of pgbench, same statements and connections", "read", "notesd")]
        self.assertAlmostEqual(r["value"], 0.9)
        self.assertEqual(r["result"], "MISS")
        r = by[("p99 ≤ 1/5 of the best peer's", "read", "notesd")]
        self.assertEqual(r["against"], "deno")
        self.assertAlmostEqual(r["value"], 0.25)
        self.assertEqual(r["result"], "MISS")
        r = by[("RSS under the read load ≤ 8 MiB", "read", "notesd")]
        self.assertEqual(r["result"], "MISS")
        r = by[("startup to first 200 of GET /notes?tag=js ≤ 20 ms (warm database)",
                "startup", "notesd")]
        self.assertEqual(r["result"], "PASS")
        r = by[("event-loop lag mean ≤ 0.5 ms, saturated on /json", "json", "notesd")]
        self.assertEqual(r["result"], "PASS")
        # no bun or h2o figure on read: n/a, not MISS
        self.assertNotIn(("req/s ≥ 95% of pgbench, same statements and connections", "read",
                          "notesd-prepared"), by)

    def test_missing_figures_are_na(self):
        rows = report.target_rows(report.summarize([], []), ["json"])
        self.assertTrue(all(r["result"] == "n/a" for r in rows))

    def test_markdown_renders(self):
        meta = {"order": ["notesd", "h2o", "pgbench", "node", "bun", "deno"],
                "tests": ["json", "read"], "started": "now", "rounds": 2, "connections": 100,
                "duration_s": 20, "warmup_s": 5, "pool": 20, "threads": [1],
                "host": {"cpu_model": "x", "cpus": 2, "kernel": "k", "loadavg": ["0"]},
                "notesd": {"path": "build/notesd", "sha256": "0" * 64}, "git": "abc",
                "layout": "l", "versions": {"wrk": "4.1.0"}}
        text = report.markdown(meta, self.summary, report.ratio_rows(self.summary, ["json"]),
                               report.target_rows(self.summary, ["json", "read"]), [],
                               self.runs, [])
        self.assertIn("| req/s ≥ 90% of h2o's static ceiling | notesd | json | 0.96 |", text)
        self.assertIn("**MISS**", text)


class H2oTemplate(unittest.TestCase):
    @unittest.skipUnless(shutil.which("h2o"), "h2o not installed")
    def test_config_is_accepted(self):
        with open(os.path.join(HERE, "h2o.conf.in")) as f:
            text = f.read()
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "static"))
            conf = os.path.join(d, "h2o.conf")
            with open(conf, "w") as f:
                f.write(text.replace("@THREADS@", "1").replace("@PORT@", "18399")
                        .replace("@ROOT@", d))
            r = subprocess.run(["h2o", "-t", "-c", conf], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
