"""Checks of loadtests/bench that need no server and no load:

    cd loadtests && /usr/bin/python3 -B -m tests.bench.test_bench

- the pgbench scripts send notesd's SQL text, statement for statement;
- the pgbench weights are loadtests/mixes.json's shares;
- pgbench output parsing, medians and spread (wrk parsing and percentiles: tests/lib);
- ratios, best peer and PASS/MISS on made-up figures;
- the same-layout pgbench limits (which CPU, which mode), the pipelined pgbench
  scripts, the modelled ceiling of the database's core and its table;
- the sweep's target, table and chart; the three-host layout's plan (names,
  198.18.0.0/15 addresses, ip/tc commands), its caps, targets and table;
- the h2o configuration template is accepted by h2o (when h2o is installed);
- the private PostgreSQL's port is left to sql/localdb.sh, which takes a free one;
- a report names the JSON it is made from, and the committed reports in bench.d are what
  --report-from writes from theirs.
"""
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import types
import unittest
import xml.etree.ElementTree as ET

from loadlib import charts, mixes, netcheck, netns, pg, pgbench
from loadlib.commands.bench import bench_command
from loadlib.commands.bench import bench_figures
from loadlib.commands.bench import headline as bench_headline
from loadlib.commands.bench import bench_netns
from loadlib.commands.bench import bench_report
from loadlib.commands.bench import sweep as bench_sweep
from loadlib.commands.bench import subjects as bench
from tests import LOADTESTS, REPO

BENCH_D = os.path.join(LOADTESTS, "bench.d")


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
                texts = script_statements(os.path.join(BENCH_D, name + ".sql"))
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
        self.assertAlmostEqual(bench_figures.spread([90, 100, 110]), 0.2)
        self.assertIsNone(bench_figures.spread([5]))


def run(label, test, rps, p99, cpu, rss_mib=10, valid=True, rnd=1, lag=None, uss_mib=None):
    subject = label.split("@")[0]
    return {"round": rnd, "subject": subject, "label": label, "threads": 1, "test": test,
            "valid": valid, "rps": rps, "p50_ms": p99 / 2, "p99_ms": p99,
            "cpu_us_per_req": cpu, "rss_peak_bytes": rss_mib * bench_figures.MIB,
            "uss_peak_bytes": uss_mib * bench_figures.MIB if uss_mib else None,
            "pss_peak_bytes": (uss_mib + 1) * bench_figures.MIB if uss_mib else None,
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
            run("notesd", "read", 900, 5, 40, rss_mib=9, uss_mib=3.5),
            run("pgbench", "read", 1000, 2, 35, rss_mib=24),
            run("node", "read", 300, 30, 170),
            run("deno", "read", 400, 20, 150),
        ]
        self.startups = [{"label": "notesd", "subject": "notesd", "threads": 1,
                          "startup_ms": 15.0},
                         {"label": "node", "subject": "node", "threads": 1,
                          "startup_ms": 200.0}]
        # the start-up series of --prepared: 3 starts, median 24 ms
        self.startups += [{"label": "notesd-prepared", "subject": "notesd-prepared",
                           "threads": 1, "round": 0, "series": i, "startup_ms": ms}
                          for i, ms in enumerate((30.0, 24.0, 18.0), 1)]
        self.summary = bench_figures.summarize(self.runs, self.startups)

    def test_medians_skip_invalid_rounds(self):
        e = self.summary["notesd"]["json"]
        self.assertEqual(e["valid_rounds"], 2)
        self.assertEqual(e["rounds"], 3)
        self.assertEqual(e["rps"]["median"], 96)

    def test_best_peer_per_figure(self):
        self.assertEqual(bench_figures.best_peer(self.summary, "json", "rps"), ("bun", 30))
        self.assertEqual(bench_figures.best_peer(self.summary, "json", "p99_ms"), ("deno", 8.0))
        self.assertEqual(bench_figures.best_peer(self.summary, "json", "cpu_us_per_req"), ("bun", 40))

    def test_targets(self):
        rows = bench_figures.target_rows(self.summary, ["json", "read"], self.runs)
        by = {(r["target"], r["test"], r["subject"]): r for r in rows}
        r = by[("req/s ≥ 90% of h2o's static ceiling", "json", "notesd")]
        self.assertAlmostEqual(r["value"], 0.96)
        self.assertEqual(r["result"], "PASS")
        # paired by round: 95 / 100 and 97 / 100 (round 3 of notesd was invalid)
        self.assertEqual((r["rounds"]["min"], r["rounds"]["max"], r["rounds"]["n"]), (0.95, 0.97, 2))
        self.assertFalse(r["noisy"])
        r = by[("CPU/request ≤ 1.25× h2o's", "json", "notesd")]
        self.assertEqual(r["result"], "PASS")  # 10.5 / 9
        r = by[("req/s ≥ 95% of pgbench, same statements and connections", "read", "notesd")]
        self.assertAlmostEqual(r["value"], 0.9)
        self.assertEqual(r["result"], "MISS")
        r = by[("p99 ≤ 1/5 of the best peer's", "read", "notesd")]
        self.assertEqual(r["against"], "deno")
        self.assertAlmostEqual(r["value"], 0.25)
        self.assertEqual(r["result"], "MISS")
        r = by[("private memory (USS) under the read load, 20 database connections ≤ 4 MiB",
                "read", "notesd")]
        self.assertEqual(r["result"], "PASS")          # 3.5 MiB; its RSS, 9 MiB, is no target
        self.assertAlmostEqual(r["value"], 3.5)
        r = by[("startup to first 200 of GET /notes?tag=js ≤ 20 ms (warm database)",
                "startup", "notesd")]
        self.assertEqual(r["result"], "PASS")
        r = by[("startup with --prepared to first 200 of GET /notes?tag=js ≤ 20 ms "
                "(warm database)", "startup", "notesd-prepared")]
        self.assertEqual(r["result"], "MISS")          # median of the series: 24 ms
        self.assertEqual(r["value"], 24.0)
        self.assertTrue(r["noisy"])                    # 18 to 30: the starts disagree
        r = by[("event-loop lag mean ≤ 0.5 ms, saturated on /json", "json", "notesd")]
        self.assertEqual(r["result"], "PASS")
        # no bun or h2o figure on read: n/a, not MISS
        self.assertNotIn(("req/s ≥ 95% of pgbench, same statements and connections", "read",
                          "notesd-prepared"), by)

    def test_missing_figures_are_na(self):
        rows = bench_figures.target_rows(bench_figures.summarize([], []), ["json"])
        self.assertTrue(all(r["result"] == "n/a" for r in rows))

    def test_within_noise(self):
        self.assertTrue(bench_figures.within_noise({"n": 3, "min": 0.85, "max": 0.97}, 0.9))
        self.assertFalse(bench_figures.within_noise({"n": 3, "min": 0.91, "max": 0.97}, 0.9))
        self.assertFalse(bench_figures.within_noise({"n": 1, "min": 0.85, "max": 0.85}, 0.9))
        self.assertFalse(bench_figures.within_noise(None, 0.9))

    def test_round_ratio_pairs_rounds(self):
        runs = [run("notesd", "json", 90, 1, 10, rnd=1), run("notesd", "json", 120, 1, 10, rnd=2),
                run("h2o", "json", 100, 1, 9, rnd=1), run("h2o", "json", 100, 1, 9, rnd=3)]
        st = bench_figures.round_ratio(bench_figures.round_index(runs), ("notesd", "json", "rps"),
                                ("h2o", "json", "rps"))
        self.assertEqual((st["n"], st["median"]), (1, 0.9))   # only round 1 has both

    def test_headline_rows_have_ranges(self):
        runs = self.runs + [run("h2o", "json", 110, 1.0, 9, rnd=3), run("notesd", "json", 99, 1, 10,
                                                                         rnd=3)]
        summary = bench_figures.summarize(runs, self.startups)
        rows = {(r["subject"], r["test"]): r for r in
                bench_headline.headline_rows(summary, runs, ["json", "read"])}
        r = rows[("notesd", "json")]
        self.assertEqual(r["name"], "`/json`")
        self.assertEqual((r["rps"]["min"], r["rps"]["median"], r["rps"]["max"]), (95, 97, 99))
        self.assertEqual((r["vs_limit"]["min"], r["vs_limit"]["max"]), (0.9, 0.97))
        self.assertEqual(r["peer"], "bun")
        meta = {"tests": ["json", "read"], "rounds": 3, "duration_s": 20, "quick": False}
        text = bench_headline.headline_section(summary, runs, meta)
        self.assertIn("| `/json` | 97 (95–99) | h2o 100 (100–110) | 0.95 (0.90–0.97) |", text)
        self.assertIn("| notesd, read mix, peak RSS / PSS / USS (MiB; target USS ≤ 4) | 9 / 4.5 / "
                      "3.5 |", text)
        self.assertIn("`--prepared` (ms; target ≤ 20, 3 starts) | 24 (18–30) |", text)
        self.assertNotIn("indicative only", text)
        self.assertIn("indicative only", bench_headline.headline_section(
            summary, runs, dict(meta, quick=True)))

    def test_markdown_renders(self):
        meta = {"order": ["notesd", "h2o", "pgbench", "node", "bun", "deno"],
                "tests": ["json", "read"], "started": "now", "rounds": 2, "connections": 100,
                "duration_s": 20, "warmup_s": 5, "pool": 20, "threads": [1],
                "host": {"cpu_model": "x", "cpus": 2, "kernel": "k", "loadavg": ["0"]},
                "notesd": {"path": "build/notesd", "sha256": "0" * 64}, "git": "abc",
                "layout": "l", "versions": {"wrk": "4.1.0"}}
        text = bench_report.bench_markdown(meta, self.summary, bench_figures.ratio_rows(self.summary, ["json"]),
                               bench_figures.target_rows(self.summary, ["json", "read"], self.runs), [],
                               self.runs, [])
        self.assertIn("| req/s ≥ 90% of h2o's static ceiling | notesd | json | 0.96 | 0.95–0.97 |",
                      text)
        self.assertIn("**MISS** (within noise)", text)
        self.assertIn("| notesd | 96 (95–97) |", text)    # the raw table: median (min–max)


def fake_bench(tmp):
    """Enough of a bench run's state for pgbench_cmd: a database, the pool, a scratch directory."""
    fake = types.SimpleNamespace(
        db=types.SimpleNamespace(host="127.0.0.1", port="5432", user="postgres", dbname="notes"),
        args=types.SimpleNamespace(pool=20), pgbench="pgbench", tmp=tmp)
    return fake


class PgbenchLimits(unittest.TestCase):
    def test_each_variant_runs_where_and_how_it_says(self):
        with tempfile.TemporaryDirectory() as d:
            fake = fake_bench(d)
            for label, (mode, where, depth) in bench.PGBENCH_VARIANTS.items():
                with self.subTest(label=label):
                    cmd = bench.pgbench_cmd(fake, label, "read", 3)
                    self.assertEqual(cmd[:3], ["taskset", "-c", "1" if where == "server" else "0"])
                    self.assertEqual(cmd[cmd.index("-M") + 1], mode)
                    self.assertEqual(cmd[cmd.index("-c", 3) + 1], "20")   # after taskset's
                    scripts = [c for c in cmd if c.endswith(".sql@70") or c.endswith(".sql@30")]
                    self.assertEqual(len(scripts), 2)
                    for s in scripts:
                        with open(s.rsplit("@", 1)[0]) as f:
                            text = f.read()
                        self.assertEqual("\\startpipeline" in text, depth is not None)
        # the existing labels keep their meaning: pgbench on the server's core
        self.assertEqual(bench.PGBENCH_VARIANTS["pgbench"], ("extended", "server", None))
        self.assertEqual(bench.PGBENCH_VARIANTS["pgbench-prepared"], ("prepared", "server", None))

    def test_pipelined_script_sends_depth_statements_of_the_same_sql(self):
        statements = notesd_statements()
        for name in ("get_note", "list_by_tag", "insert_note", "update_note"):
            with self.subTest(name=name):
                with open(os.path.join(BENCH_D, name + ".sql")) as f:
                    text = bench.pipeline_script(f.read(), 16)
                lines = text.splitlines()
                self.assertEqual(lines[0], "\\startpipeline")
                self.assertEqual(lines[-1], "\\endpipeline")
                sql = [l for l in lines if not l.startswith("\\")]
                per_block = 1 if name == "get_note" else 8   # one statement per \if branch
                self.assertEqual(len(sql), 16 * per_block)
                with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
                    f.write(text)
                try:
                    self.assertEqual(script_statements(f.name), {statements[name]})
                finally:
                    os.unlink(f.name)

    def test_limits_of_each_notesd_variant(self):
        self.assertEqual(bench_figures.limit_of("notesd", "read"), "pgbench")
        self.assertEqual(bench_figures.limit_of("notesd-prepared", "read"), "pgbench-prepared")
        # every variant is held against the pgbench of its own layout: client on CPU 1
        self.assertEqual(bench_figures.limit_of("notesd-pipeline", "read"), "pgbench-pipeline-servercore")
        self.assertEqual(bench_figures.limit_of("notesd-prepared-pipeline", "write"),
                         "pgbench-prepared-pipeline-servercore")
        self.assertEqual(bench_figures.limit_of("notesd-pipeline", "json"), "h2o")


def dbrun(label, test, rps, db_us, wrk_us=None, rnd=1):
    r = run(label, test, rps, 5, 40, rnd=rnd)
    r.update(db_cpu_us_per_req=db_us, loadgen_cpu_us_per_req=wrk_us)
    return r


class Ceiling(unittest.TestCase):
    def test_queries_per_sync(self):
        before = {"calls": 1000, "transactions": 500}
        self.assertEqual(pg.queries_per_sync(before, {"calls": 1160, "transactions": 510}), 16)
        self.assertIsNone(pg.queries_per_sync(before, before))           # nothing ran
        self.assertIsNone(pg.queries_per_sync(None, before))             # no pg_stat_statements
        self.assertIn("pg_stat_statements", pg.SYNC_COUNTS_SQL)

    def test_model(self):
        self.assertAlmostEqual(bench_figures.ceiling(35.0, 15.0), 20000.0)
        self.assertIsNone(bench_figures.ceiling(None, 15.0))
        self.assertIsNone(bench_figures.ceiling(35.0, None))
        self.assertIsNone(bench_figures.ceiling(0.0, 0.0))

    def setUp(self):
        self.runs = [
            dbrun("notesd", "read", 8000, 100, 16),
            dbrun("pgbench", "read", 7500, 130),
            dbrun("pgbench-dbcore", "read", 6000, 120),
            dbrun("notesd", "read", 9000, 110, 14, rnd=2),
            dbrun("pgbench", "read", 7000, 140, rnd=2),
            dbrun("pgbench-dbcore", "read", 6000, 125, rnd=2),
            dbrun("notesd-prepared", "read", 15000, 50, 16),
            dbrun("pgbench-prepared-dbcore", "read", 28000, 35),   # no CPU 1 run: CPU 0's is used
            dict(dbrun("notesd-prepared-pipeline", "read", 20000, 30, 16), queries_per_sync=9.5),
            dict(dbrun("pgbench-prepared-pipeline-servercore", "read", 40000, 20),
                 queries_per_sync=16.0),
        ]
        self.summary = bench_figures.summarize(self.runs, [])

    def test_rows(self):
        rows = {(r["subject"], r["test"]): r
                for r in bench_figures.ceiling_rows(self.summary, ["read"], self.runs)}
        r = rows[("notesd", "read")]
        # notesd wakes PostgreSQL from CPU 1: the pgbench that does the same sets its ceiling
        self.assertEqual(r["pg_us_from"], "pgbench")
        self.assertAlmostEqual(r["pg_us_server_core"], 135)
        self.assertAlmostEqual(r["pg_us_db_core"], 122.5)
        self.assertAlmostEqual(r["wakeup_us"], 12.5)
        self.assertEqual((r["wakeup_rounds"]["min"], r["wakeup_rounds"]["max"]), (10, 15))
        self.assertAlmostEqual(r["ceiling_rps"], 1e6 / (135 + 15))
        self.assertAlmostEqual(r["ceiling_same_core_rps"], 1e6 / (122.5 + 15))
        self.assertAlmostEqual(r["vs_ceiling"], 8500 / (1e6 / 150))
        # round by round: 8000 / (1e6 / 146) and 9000 / (1e6 / 154)
        self.assertAlmostEqual(r["vs_ceiling_rounds"]["min"], 8000 * 146 / 1e6)
        self.assertAlmostEqual(r["vs_ceiling_rounds"]["max"], 9000 * 154 / 1e6)
        self.assertAlmostEqual(r["vs_db_core"], 8500 / 6000)
        self.assertAlmostEqual(r["vs_other_core"], 8500 / 7250)
        self.assertAlmostEqual(r["pg_us_extra"], 105 - 135)
        r = rows[("notesd-prepared", "read")]
        self.assertEqual(r["pg_us_from"], "pgbench-prepared-dbcore")
        self.assertAlmostEqual(r["ceiling_rps"], 1e6 / 51)
        self.assertIsNone(r["wakeup_us"])
        self.assertIsNone(r["vs_other_core"])
        self.assertNotIn(("notesd-pipeline", "read"), rows)  # nothing measured: no row
        r = rows[("notesd-prepared-pipeline", "read")]
        self.assertEqual((r["queries_per_sync"], r["pgbench_queries_per_sync"]), (9.5, 16.0))
        self.assertIsNone(rows[("notesd", "read")]["queries_per_sync"])

    def test_pipelined_targets(self):
        rows = bench_figures.target_rows(self.summary, ["read"], self.runs)
        by = {(r["target"], r["subject"], r["test"]): r for r in rows}
        r = by[("--prepared --pipeline 16 req/s ≥ 1.15× --prepared", "notesd-prepared-pipeline",
                "read")]
        self.assertAlmostEqual(r["value"], 20000 / 15000)
        self.assertEqual(r["result"], "PASS")
        r = by[("req/s ≥ 0.9 of the modelled ceiling of notesd's layout",
                "notesd-prepared-pipeline", "read")]
        self.assertAlmostEqual(r["value"], 20000 / (1e6 / (20 + 16)))    # 0.72
        self.assertEqual(r["result"], "MISS")
        r = by[("queries per sync ≥ 2 (fewer than one sync per two queries)",
                "notesd-prepared-pipeline", "read")]
        self.assertEqual((r["value"], r["result"]), (9.5, "PASS"))
        self.assertNotIn(("queries per sync ≥ 2 (fewer than one sync per two queries)",
                          "notesd-pipeline", "read"), by)               # not measured

    def test_section_renders_with_skip(self):
        rows = bench_figures.ceiling_rows(self.summary, ["read"], self.runs)
        text = bench_report.ceiling_section(rows, {"notesd-pipeline": "no --pipeline"})
        self.assertIn("ceiling of notesd's layout req/s", text)
        self.assertIn("| notesd | unnamed (-M extended) | read | 7,250 | 6,000 | 135 | 122 | +12.5 "
                      "| 15 | 6,667 (6,494–6,849) | 8,500 (8,000–9,000) | 1.27 (1.17–1.39) |", text)
        self.assertIn("- unnamed (-M extended): read 135 − 122 = +12.5 (10–15) µs", text)
        self.assertIn("- notesd-pipeline: SKIP — no --pipeline", text)
        self.assertIn("queries per sync (notesd)", text)
        self.assertIn("| +10 | 9.5 | 16 |", text)
        self.assertNotIn("⚠", text)

    def test_unsaturated_database_core_is_flagged(self):
        runs = [dict(r, cpu_busy={"0": {"busy": 0.8}}) if r["label"] == "pgbench" else r
                for r in self.runs]
        summary = bench_figures.summarize(runs, [])
        text = bench_report.ceiling_section(bench_figures.ceiling_rows(summary, ["read"], runs), {})
        self.assertIn("⚠ CPU 0 was less than 95% busy in pgbench read (80%)", text)


def sweep_rec(subject, test, n, rps, p50, p99, valid=True):
    return {"subject": subject, "test": test, "connections": n, "valid": valid, "rps": rps,
            "p50_ms": p50, "p99_ms": p99}


class Sweep(unittest.TestCase):
    def setUp(self):
        self.records = []
        for n, (a, b, c) in {1: (0.05, 0.3, 0.2), 10: (0.2, 0.9, 0.7), 100: (1.2, 9, 8),
                             1000: (12, 90, 80)}.items():
            self.records += [sweep_rec("notesd", "json", n, 1000 * n ** 0.5, a / 2, a),
                             sweep_rec("node", "json", n, 300 * n ** 0.5, b / 2, b),
                             sweep_rec("bun", "json", n, 500 * n ** 0.5, c / 2, c)]
        self.records.append(sweep_rec("deno", "json", 1, 100, 0.001, 0.001, valid=False))

    def test_targets_at_service_levels(self):
        rows = {(r["test"], r["connections"]): r for r in bench_sweep.sweep_target_rows(self.records)}
        r = rows[("json", 1)]
        self.assertEqual(r["best_peer"], "bun")   # an invalid run is no peer figure
        self.assertAlmostEqual(r["value"], 0.05 / 0.2)
        self.assertEqual(r["result"], "PASS")
        r = rows[("json", 10)]
        self.assertAlmostEqual(r["value"], 0.2 / 0.7)
        self.assertEqual(r["result"], "PASS")
        self.assertEqual(rows[("read", 1)]["result"], "n/a")

    def test_section_and_chart(self):
        with tempfile.TemporaryDirectory() as d:
            text = bench_sweep.sweep_section(self.records, d)
            self.assertIn("| notesd | 1,000 / 0.025 / 0.05 | 3,162 / 0.1 / 0.2 |", text)
            self.assertIn("![latency against throughput, json](sweep-json.svg)", text)
            self.assertIn("- invalid: deno json c1", text)
            svg = ET.parse(os.path.join(d, "sweep-json.svg")).getroot()
            self.assertEqual(svg.tag, "{http://www.w3.org/2000/svg}svg")
            lines = svg.findall("{http://www.w3.org/2000/svg}polyline")
            self.assertEqual(len(lines), 6)  # p99 and p50 for three subjects
        self.assertEqual(bench_sweep.sweep_section([], None), "")

    def test_log_axis_has_decades(self):
        svg = charts.line_chart("t", "s", [("notesd", "a p99", [(10, 0.05, "c1"), (20, 80, None)],
                                             False)], "req/s", "ms", log_y=True)
        for label in (">0.01<", ">0.1<", ">1<", ">10<", ">100<"):
            self.assertIn(label, svg)
        ET.fromstring(svg)


class NetnsPlan(unittest.TestCase):
    def test_addresses_only_in_the_benchmark_range(self):
        addrs = [a for v in netns.addresses().values() for a in v]
        self.assertEqual(len(addrs), 4)
        for a in addrs:
            self.assertTrue(netcheck.ipaddress.ip_address(a) in netcheck.BENCH_NET, a)
        self.assertEqual(netns.address("srv", "load"), "198.18.1.2")
        self.assertEqual(netns.address("db", "srv"), "198.18.2.2")
        with self.assertRaises(KeyError):
            netns.address("load", "db")   # no link: wrk never reaches the database

    def test_every_command_stays_inside_our_namespaces(self):
        ours = set(netns.NAMES.values())
        for method in ("netem", "delayline"):
            cmds = netns.setup_commands(method, 1.0) + netns.teardown_commands()
            if method == "delayline":
                cmds += netns.tun_commands()
            for cmd in cmds:
                with self.subTest(cmd=" ".join(cmd)):
                    self.assertIn(cmd[0], ("ip", "tc"))
                    if cmd[1] == "netns":
                        self.assertIn(cmd[3], ours)
                    elif cmd[1] == "-n":
                        self.assertIn(cmd[2], ours)
                    else:   # ip link add A netns NS type veth peer name B netns NS
                        self.assertEqual(cmd[:3], ["ip", "link", "add"])
                        self.assertIn(cmd[cmd.index("netns") + 1], ours)
                        self.assertIn(cmd[len(cmd) - 1], ours)
                    for word in cmd:
                        if "/" in word and word[0].isdigit():
                            net = netcheck.ipaddress.ip_network(word, strict=False)
                            self.assertTrue(net.subnet_of(netcheck.BENCH_NET), word)

    def test_netem_on_both_ends_of_both_links(self):
        cmds = netns.setup_commands("netem", 0.25)
        qdiscs = [c for c in cmds if c[0] == "tc"]
        self.assertEqual(len(qdiscs), 4)
        for c in qdiscs:
            self.assertEqual(c[c.index("delay") + 1], "250us")
            self.assertEqual(c[c.index("limit") + 1], str(netns.NETEM_LIMIT))
        self.assertEqual(netns.delay_arg(1), "1ms")
        self.assertEqual(netns.delay_arg(5.0), "5ms")
        self.assertFalse([c for c in netns.setup_commands("netem", 0) if c[0] == "tc"])
        veths = [c for c in cmds if c[:3] == ["ip", "link", "add"]]
        self.assertEqual(len(veths), 2)

    def test_delayline_arguments(self):
        argv = netns.delayline_command("/x/nb-delayline", 0.25)
        self.assertEqual(argv[:2], ["/x/nb-delayline", "250"])
        self.assertIn("nb-srv=198.18.1.2,198.18.2.1", argv)
        self.assertEqual(netns.in_ns("load", ["wrk"]),
                         ["nsenter", "--net=/run/netns/nb-load", "--", "wrk"])

    def test_caps_and_targets(self):
        self.assertEqual(bench_netns.caps(1.0, 20, 100), (25000.0, 10000.0, 2.5))
        self.assertEqual(bench_netns.caps(5.0, 20, 400), (20000.0, 2000.0, 10.0))
        self.assertEqual(bench_netns.caps(0, 20, 400), (None, None, None))
        recs = [{"delay_ms": 1.0, "subject": "notesd-pipeline", "valid": True, "rps": 9000},
                {"delay_ms": 1.0, "subject": "notesd-prepared-pipeline", "valid": True,
                 "rps": 12000},
                {"delay_ms": 1.0, "subject": "bun", "valid": True, "rps": 5000},
                {"delay_ms": 1.0, "subject": "node", "valid": False, "rps": 9999},
                {"delay_ms": 5.0, "subject": "bun", "valid": True, "rps": 1000}]
        t = {r["delay_ms"]: r for r in bench_netns.netns_target_rows(recs)}
        self.assertEqual(t[1.0]["subject"], "notesd-prepared-pipeline")
        self.assertAlmostEqual(t[1.0]["value"], 2.4)
        self.assertEqual(t[1.0]["result"], "PASS")
        self.assertEqual(t[5.0]["result"], "n/a")   # no pipelined figure
        text = bench_netns.netns_section(recs, {"link": "delayline", "delays_ms": [1.0, 5.0],
                                          "addresses": netns.addresses(), "pool": 20,
                                          "connections": 100, "note": "n"})
        self.assertIn("| 1 | 2 | 25,000 | 10,000 | 2.50 |", text)
        self.assertIn("| 1 | notesd-prepared-pipeline | 12,000 |", text)
        self.assertIn("SKIP — needs root", bench_netns.netns_section([], {"skipped": "needs root"}))
        self.assertEqual(bench_netns.netns_section([], None), "")


class H2oTemplate(unittest.TestCase):
    @unittest.skipUnless(shutil.which("h2o"), "h2o not installed")
    def test_config_is_accepted(self):
        with open(os.path.join(BENCH_D, "h2o.conf.in")) as f:
            text = f.read()
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "static"))
            conf = os.path.join(d, "h2o.conf")
            with open(conf, "w") as f:
                f.write(text.replace("@THREADS@", "1").replace("@PORT@", "18399")
                        .replace("@ROOT@", d))
            r = subprocess.run(["h2o", "-t", "-c", conf], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


GENERATED = re.compile(r"<!-- generated by loadtests/bench from (\S+); do not edit: "
                       r"loadtests/bench --report-from \1 writes it again -->\n")


def report_again(json_path):
    """--report-from json_path, as a user runs it; its stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = bench_command.main(["--report-from", json_path])
    assert status == 0, status
    return out.getvalue()


class Reports(unittest.TestCase):
    def test_a_report_names_its_data_and_is_written_again_from_it(self):
        """A run's report.md, and the report --report-from writes beside a saved JSON (its
        name with .md), open with the line that names the JSON and the command that writes
        the report again; the rest is what stdout gets, and --report-from writes it byte for
        byte as the run did."""
        with open(os.path.join(BENCH_D, "latest-report.json")) as f:
            data = json.load(f)
        with tempfile.TemporaryDirectory() as d:
            run_json, run_md = os.path.join(d, "bench.json"), os.path.join(d, "report.md")
            with open(run_json, "w") as f:
                json.dump(data, f)
            text = bench_command.write_bench_report(data, run_json, run_md)   # what a run's finish() does
            with open(run_md) as f:
                written = f.read()
            self.assertEqual(written, bench_command.generated_header("bench.json") + text)
            self.assertTrue(GENERATED.match(written), written.splitlines()[0])
            self.assertTrue(text.startswith("# notesd benchmark — "), text[:80])
            os.remove(run_md)
            self.assertEqual(report_again(run_json), text + "\n")
            with open(run_md) as f:
                self.assertEqual(f.read(), written)
            # any other name: NAME.json gives NAME.md, whose first line names NAME.json
            named = os.path.join(d, "kept.json")
            shutil.copy(run_json, named)
            report_again(named)
            with open(os.path.join(d, "kept.md")) as f:
                self.assertEqual(f.read(), bench_command.generated_header("kept.json") + text)

    def test_the_committed_reports_are_what_their_data_makes(self):
        """Every report in bench.d that bench generated (its first line says so) is what
        --report-from writes from the JSON it names, charts included: a change of the
        writer, or of the data, without writing the report again fails here."""
        reports = {}
        for name in sorted(os.listdir(BENCH_D)):
            if name.endswith(".md"):
                with open(os.path.join(BENCH_D, name)) as f:
                    m = GENERATED.match(f.readline())
                if m:
                    reports[name] = m.group(1)
        self.assertIn("latest-report.md", reports, "latest-report.md is generated, from its JSON")
        made = set()
        for name, source in reports.items():
            with tempfile.TemporaryDirectory() as d:
                shutil.copy(os.path.join(BENCH_D, source), d)
                report_again(os.path.join(d, source))
                written = sorted(n for n in os.listdir(d) if n != source)
                self.assertIn(name, written, f"{source} makes {written}, not {name}")
                made.update(written)
                for out in written:
                    self.assertTrue(os.path.exists(os.path.join(BENCH_D, out)),
                                    f"{source} makes {out}, which bench.d lacks")
                    with open(os.path.join(d, out)) as f, \
                            open(os.path.join(BENCH_D, out)) as g:
                        self.assertEqual(f.read(), g.read(),
                                         f"bench.d/{out} is not what {source} makes: "
                                         f"loadtests/bench --report-from bench.d/{source} "
                                         "writes it")
        charts = {n for n in os.listdir(BENCH_D) if n.endswith(".svg")}
        self.assertEqual(charts - made, set(), "charts no committed report makes")


class PrivateDatabase(unittest.TestCase):
    def test_the_port_is_left_to_localdb_sh(self):
        """bench pinned its PostgreSQL to port 55450, and failed at once ("NOTESD_PGPORT=55450
        is taken by another server") while another cluster held it; now sql/localdb.sh takes
        the first free port from 54329 on, as for server/run.sh (tests/integration/
        test_localdb.py checks that), unless NOTESD_PGPORT names one."""
        env = dict(os.environ)
        env.pop("NOTESD_PGPORT", None)
        env.pop("NOTESD_PGDATA", None)
        chosen = bench_command.private_database_env(env)
        self.assertNotIn("NOTESD_PGPORT", chosen)
        self.assertEqual(chosen["NOTESD_PGDATA"], "/tmp/bench-pg/pgdata")
        env.update(chosen)
        self.assertNotIn("NOTESD_PGPORT", env)
        # what the user names is kept
        env = {"NOTESD_PGPORT": "6543", "NOTESD_PGDATA": "/srv/pg"}
        env.update(bench_command.private_database_env(env))
        self.assertEqual(env, {"NOTESD_PGPORT": "6543", "NOTESD_PGDATA": "/srv/pg"})


if __name__ == "__main__":
    unittest.main()
