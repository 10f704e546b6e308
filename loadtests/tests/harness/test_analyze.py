#!/usr/bin/python3
"""Tests of the analysis (analyze.py, loadlib/charts.py) on a synthetic results directory
with known figures, and of the harness's option and database-URL handling.

    cd loadtests && /usr/bin/python3 -B -m tests.harness.test_analyze
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.dom.minidom

from loadlib import charts, cli, netcheck
from loadlib.commands.harness import analyze
from loadlib.commands.harness import harness_command as run
from tests import FIXTURES, LOADTESTS

FIX = FIXTURES
RECONCILE = os.path.join(LOADTESTS, "reconcile")
ANALYZE = os.path.join(LOADTESTS, "harness", "analyze.py")

T0 = 1_800_000_000.0
MIB = 1024 * 1024


def real_reconcile(tmp):
    """reconcile.json of the real notesd fixture (24,726 requests, +7)."""
    out = os.path.join(tmp, "rec.json")
    subprocess.run([sys.executable, RECONCILE, "--tool", "wrk", "--summary", os.path.join(FIX, "native-read-wrk.txt"),
                    "--before", os.path.join(FIX, "native-read-before.prom"),
                    "--after", os.path.join(FIX, "native-read-after.prom"), "--tolerance", "8", "--json", out],
                   check=True, capture_output=True)
    with open(out) as f:
        return json.load(f)


def scrape(k, waiting, lag_sum, lag_count, target):
    # each target's own used heap: malloc's on notesd, the engine's heapUsed on the peer
    used = ("notes_malloc_heap_used_bytes" if target in ("notesd", "native") else "nodejs_heap_size_used_bytes")
    return (f"# SCRAPE unix={T0 + k + 0.5:.3f} status=200\n"
            "# TYPE notes_db_pool_waiting_requests gauge\n"
            f"notes_db_pool_waiting_requests {waiting}\n"
            f"notes_db_pool_connections 20\n"
            f"notes_eventloop_delay_seconds_sum {lag_sum}\n"
            f"notes_eventloop_delay_seconds_count {lag_count}\n"
            f"process_heap_bytes {300 * MIB}\n"
            f"{used} {(4 if used.startswith('notes') else 30) * MIB}\n"
            'notes_build_info{version="0.1.0",runtime="native",h2o_version="2.2.5",libpq_version="15.20"} 1\n')


def write_test(mdir, target, rnd, mode, rps, rec, mismatch=False):
    os.makedirs(mdir)
    with open(os.path.join(mdir, "test.json"), "w") as f:
        json.dump({"target": target, "round": rnd, "mode": mode, "tool": "wrk", "start_unix": T0,
                   "end_unix": T0 + 10, "duration_s": 10, "tool_rc": 0, "tool_timed_out": False}, f)
    r = json.loads(json.dumps(rec))
    r["client"]["rps"] = rps
    if mismatch:
        r["ok"] = False
        r["mismatches"] = ["MISMATCH total: client 1, server 0, difference -1 (test)"]
    with open(os.path.join(mdir, "reconcile.json"), "w") as f:
        json.dump(r, f)
    # 10 s test, scrapes at -0.5 .. 10.5 s. The window starts at 2 s (20% of 10 s):
    # before it 100 requests wait and ticks are 5 ms late; from 2 s on, 5 and 2 ms.
    text, lag_sum, lag_count = [], 0.0, 0
    for k in range(-1, 11):
        before_window = k + 0.5 < 2
        text.append(scrape(k, 100 if before_window else 5, round(lag_sum, 6), lag_count, target))
        lag_sum += 0.05 if k + 1.5 <= 2 else 0.02
        lag_count += 10
    with gzip.open(os.path.join(mdir, "metrics.prom.gz"), "wt") as f:
        f.write("".join(text))
    with open(os.path.join(mdir, "proc.jsonl"), "w") as f:
        for k in range(-1, 11):
            t = T0 + k + 0.5
            rss = (100 if k + 0.5 < 2 else 50) * MIB
            f.write(json.dumps({"t": t, "target": {"cpu_s": 0.9 * (k + 1), "rss_bytes": rss, "threads": 1,
                                           "pss_bytes": rss // 2, "uss_bytes": rss // 10},
                                "tool": {"cpu_s": 0.4 * (k + 1), "rss_bytes": MIB},
                                "pg_cpu_s": 0.25 * (k + 1),
                                "cores": [[40 * (k + 1), 2 * (k + 1), 0, 100 * (k + 1)],
                                          [90 * (k + 1), 0, 1 * (k + 1), 100 * (k + 1)]]}) + "\n")


def make_run(out, mismatch_in=None, notesd="notesd"):
    """A results directory of two rounds of notesd and Node; `notesd` is the name the run
    gave notesd ("native" in directories from before it was called notesd)."""
    tmp = tempfile.mkdtemp()
    try:
        rec = real_reconcile(tmp)
    finally:
        shutil.rmtree(tmp)
    config = {"started_utc": "2026-11-30T08:00:00+00:00", "quick": False, "targets": ["notesd", "node"],
              "modes": ["read", "json"], "rounds": 2, "orders": [["notesd", "node"], ["node", "notesd"]],
              "duration_s": 10, "vus": 8, "pause_s": 1, "warmup_s": 1, "tool": "wrk", "tool_version": "wrk 4.1.0",
              "tool_cpu": 0, "target_cpu": 1, "versions": {"notesd": None, "node": "v26.10.0"},
              "db": {"private": True, "host": "127.0.0.1", "port": 18199, "version": "15.20"},
              "machine": {"cores": 2, "cpu": "Test CPU", "kernel": "6.1", "os": "Debian 12"}}
    if notesd != "notesd":
        config = json.loads(json.dumps(config).replace('"notesd"', f'"{notesd}"'))
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(config, f)
    rps = {("notesd", "read"): [9000, 10000], ("notesd", "json"): [50000, 60000],
           ("node", "read"): [2900, 3100], ("node", "json"): [7000, 7200]}
    for rnd in (1, 2):
        for target in (notesd, "node"):
            tdir = os.path.join(out, f"r{rnd}", target)
            os.makedirs(tdir)
            with open(os.path.join(tdir, "start.json"), "w") as f:
                json.dump({"target": target, "round": rnd, "startup_s": 0.02 if target == notesd else 0.4 + rnd / 10,
                           "exit_code": 0}, f)
            for mode in ("read", "json"):
                write_test(os.path.join(tdir, mode), target, rnd, mode,
                           rps[("notesd" if target == notesd else target, mode)][rnd - 1], rec,
                           mismatch=(target, rnd, mode) == mismatch_in)


class Analysis(unittest.TestCase):
    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="analyze-test-")

    def tearDown(self):
        shutil.rmtree(self.out)

    def test_figures_medians_and_report(self):
        make_run(self.out)
        summary = analyze.analyze(self.out)
        self.assertEqual(summary["problems"], [])
        self.assertEqual(len(summary["tests"]), 8)
        t = summary["tests"][0]
        self.assertAlmostEqual(t["pool_waiting_mean"], 5.0)
        self.assertAlmostEqual(t["lag_mean_ms"], 2.0)
        self.assertAlmostEqual(t["cpu_pct"], 90.0)
        self.assertAlmostEqual(t["tool_cpu_pct"], 40.0)
        self.assertAlmostEqual(t["pg_cpu_pct"], 25.0)
        self.assertEqual(t["cores_pct"], {"busy": [42.0, 91.0], "processes": [40.0, 90.0], "interrupts": [2.0, 0.0],
                                          "steal": [0.0, 1.0]})
        self.assertAlmostEqual(t["other_cpu_pct"], 0.0)     # 130 - 90 - 40 - 25 < 0: nothing else ran
        self.assertAlmostEqual(t["rss_mib"], 50.0)
        self.assertAlmostEqual(t["pss_mib"], 25.0)
        self.assertAlmostEqual(t["uss_mib"], 5.0)
        self.assertAlmostEqual(t["heap_used_mib"], 4.0)
        self.assertEqual(t["heap_used_metric"], "notes_malloc_heap_used_bytes")
        self.assertAlmostEqual(t["vmdata_mib"], 300.0)
        self.assertAlmostEqual(summary["medians"]["node"]["read"]["heap_used_mib"], 30.0)
        self.assertEqual(t["window"], {"from_s": 2.0, "to_s": 10.0})
        self.assertEqual(t["reconcile"]["result"], "OK")
        m = summary["medians"]
        self.assertEqual(m["notesd"]["read"]["rps"], 9500)
        self.assertEqual(m["node"]["json"]["rps_rounds"], [7000, 7200])
        self.assertAlmostEqual(m["notesd"]["json"]["rps_spread"], 10000 / 55000)
        self.assertAlmostEqual(m["node"]["startup_s"], 0.55)
        self.assertEqual(summary["labels"], {"notesd": "notesd 0.1.0", "node": "Node 26.10.0"})
        self.assertEqual(summary["total_requests"], 8 * 24726)
        self.assertEqual(summary["totals"]["node"], {"tests": 4, "with_client_figures": 4, "requests": 4 * 24726})

        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertIn("| Test | notesd 0.1.0 | Node 26.10.0 |", report)
        self.assertIn("| Reads, req/s | 9,500 | 3,000 |", report)
        self.assertIn("| No database, req/s | 55,000 | 7,100 |", report)
        self.assertIn("| Reads | 9,000 / 10,000 | 2,900 / 3,100 |", report)
        self.assertIn("| Reads, requests waiting | 5.0 | 5.0 |", report)
        self.assertIn("| Event loop delay, reads | 2.00 ms | 2.00 ms |", report)
        self.assertIn("| RSS during reads | 50 MiB | 50 MiB |", report)
        self.assertIn("| Private memory (USS) during reads | 5.0 MiB | 5.0 MiB |", report)
        self.assertIn("| PSS / USS, reads | 25 MiB / 5.0 MiB | 25 MiB / 5.0 MiB |", report)
        self.assertIn("| Startup to first 200 | 20.0 ms | 0.55 s |", report)
        self.assertIn("All 8 tests finished with 0 failed requests", report)
        self.assertIn("Requests counted by wrk: notesd 0.1.0 98,904 in 4 tests; Node 26.10.0 98,904 in 4 tests.",
                      report)
        self.assertIn("All 8 tests reconciled.", report)
        self.assertIn("| Used heap, reads | 4.0 MiB | 30 MiB |", report)
        self.assertNotIn("incomplete", report)
        self.assertNotIn("n/a", report)
        self.assertIn("| notesd 0.1.0 | 1 | Reads | 24,726 | 24,733 | +7 | 8 | 5.96 ms |", report)
        self.assertIn("| 5.96 ms | 2.87 ms (1–3) | +3.09 ms | OK |", report)
        self.assertNotIn("shared the machine with other work", report)
        self.assertIn("round 2: node notesd", report)
        for name in ("throughput.svg", "latency.svg"):
            doc = xml.dom.minidom.parse(os.path.join(self.out, name))
            self.assertEqual(doc.documentElement.tagName, "svg")
        with open(os.path.join(self.out, "summary.json")) as f:
            self.assertEqual(len(json.load(f)["tests"]), 8)

    def test_results_from_before_notesd_was_named_so(self):
        make_run(self.out, notesd="native")
        summary = analyze.analyze(self.out)
        self.assertEqual(summary["problems"], [])
        self.assertEqual(summary["labels"], {"native": "notesd 0.1.0", "node": "Node 26.10.0"})
        self.assertEqual(summary["medians"]["native"]["read"]["rps"], 9500)
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertIn("| Test | notesd 0.1.0 | Node 26.10.0 |", report)
        self.assertIn("notesd 0.1.0: `build/notesd` with `SERVER_TIMING=0`", report)

    def test_a_mismatch_is_a_problem_and_shows_in_the_report(self):
        make_run(self.out, mismatch_in=("node", 2, "json"))
        summary = analyze.analyze(self.out)
        self.assertEqual(summary["problems"], ["[round 2/2] node json: reconcile MISMATCH"])
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertIn("**MISMATCH**", report)
        self.assertIn("`MISMATCH total: client 1, server 0, difference -1 (test)`", report)
        self.assertIn("## Problems", report)

    def test_a_reconcile_error_is_a_problem_with_its_missing_figures_first(self):
        make_run(self.out)
        for rnd in (1, 2):
            os.unlink(os.path.join(self.out, f"r{rnd}", "node", "json", "reconcile.json"))
            with open(os.path.join(self.out, f"r{rnd}", "node", "json", "reconcile.txt"), "w") as f:
                f.write("reconcile: before.prom: line 1: not a sample: '3480'\n")
        summary = analyze.analyze(self.out)
        self.assertEqual(summary["problems"][:2], ["[round 1/2] node json: reconcile ERROR",
                                                   "[round 2/2] node json: reconcile ERROR"])
        self.assertIn("[round 1/2] node json: no req/s, p95, p99 (reconcile failed, so the load tool's figures "
                      "were not read)", summary["problems"])
        self.assertEqual(summary["totals"]["node"], {"tests": 4, "with_client_figures": 2, "requests": 2 * 24726})
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        head = report.split("## Results")[0]
        self.assertIn("**This run is incomplete: 4 problems.**", head)
        self.assertIn("## Problems", head)
        self.assertIn("- [round 2/2] node json: reconcile ERROR", head)
        self.assertNotIn("All 8 tests finished", report)
        self.assertIn("wrk counted requests in 6 of 8 tests: notesd 0.1.0 98,904 in 4 tests; Node 26.10.0 49,452 "
                      "in 2 tests (of 4: the others have no count).", report)

    def test_failed_requests_are_reported(self):
        make_run(self.out)
        path = os.path.join(self.out, "r1", "notesd", "read", "reconcile.json")
        with open(path) as f:
            rec = json.load(f)
        rec["client"]["failed"] = 12
        with open(path, "w") as f:
            json.dump(rec, f)
        summary = analyze.analyze(self.out)
        self.assertEqual(summary["failed_tests"], 1)
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertIn("**1 of 8 tests had failed requests**", report)

    def test_a_busy_machine_is_called_out(self):
        make_run(self.out)
        for rnd in (1, 2):
            for target in ("notesd", "node"):
                for mode in ("read", "json"):
                    path = os.path.join(self.out, f"r{rnd}", target, mode, "proc.jsonl")
                    with open(path) as f:
                        samples = [json.loads(l) for l in f]
                    for smp in samples:
                        n = smp["t"] - T0 + 0.5          # k + 1
                        smp["cores"] = [[95 * n, 0, 0, 100 * n], [95 * n, 0, 0, 100 * n]]
                    with open(path, "w") as f:
                        f.write("".join(json.dumps(smp) + "\n" for smp in samples))
        summary = analyze.analyze(self.out)
        self.assertAlmostEqual(summary["tests"][0]["other_cpu_pct"], 190 - 90 - 40 - 25)
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertIn("**8 of 8 tests shared the machine with other work**", report)
        self.assertIn("during notesd 0.1.0 reads r1 (35%), notesd 0.1.0 no database r1 (35%)", report)
        self.assertIn("| Reads, everything else | 35% | 35% |", report)

    def test_command_line(self):
        make_run(self.out)
        res = subprocess.run([sys.executable, ANALYZE, self.out],
                             capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        res = subprocess.run([sys.executable, ANALYZE, FIX], capture_output=True, text=True)
        self.assertEqual(res.returncode, 2)


class Charts(unittest.TestCase):
    def test_well_formed_with_missing_values_and_escaping(self):
        text = charts.bar_chart("A <title> & more", "sub", [("read", "Reads")], [("notesd", "notesd"), ("x", "X & Y")],
                             {"notesd": {"read": 1234.5}, "x": {"read": None}}, "req/s",
                             inner={"notesd": {"read": 1000.0}, "x": {}}, inner_label="p95", outer_label="p99")
        doc = xml.dom.minidom.parseString(text)
        self.assertEqual(doc.documentElement.getAttribute("xmlns"), "http://www.w3.org/2000/svg")
        self.assertIn("A &lt;title&gt; &amp; more", text)
        self.assertIn("n/a", text)

    def test_ticks(self):
        self.assertEqual(charts.nice_ticks(9500), [0, 2000, 4000, 6000, 8000, 10000])
        self.assertEqual(charts.nice_ticks(0), [0, 1])
        self.assertEqual(charts.tick_label(12500), "12.5k")
        self.assertEqual(charts.short(55000), "55k")


class Options(unittest.TestCase):
    def test_seed_defaults_and_quick(self):
        a = run.parse_args(["notesd", "node"])
        self.assertEqual((a.rounds, a.modes, a.duration_s, a.vus, a.pause_s, a.warmup_s),
                         (3, ["read", "write", "mixed", "json"], 180, 100, 15, 30))
        a = run.parse_args(["--quick", "notesd"])
        self.assertEqual((a.rounds, a.duration_s, a.pause_s, a.warmup_s), (1, 10, 2, 2))
        a = run.parse_args(["--quick", "--duration", "1m", "notesd"])
        self.assertEqual(a.duration_s, 60)

    def test_bad_options(self):
        for argv in (["nope"], ["notesd", "notesd"], ["native", "notesd"], ["--modes", "read,nope", "notesd"],
                     ["--duration", "1.5s", "notesd"], ["--rounds", "0", "notesd"]):
            with self.assertRaises(SystemExit, msg=argv):
                with open(os.devnull, "w") as devnull:
                    old, sys.stderr = sys.stderr, devnull
                    try:
                        run.parse_args(argv)
                    finally:
                        sys.stderr = old

    def test_native_is_notesd(self):
        self.assertEqual(run.parse_args(["native", "node"]).targets, ["notesd", "node"])
        self.assertEqual(run.parse_args(["bun", "notesd"]).targets, ["bun", "notesd"])

    def test_durations(self):
        self.assertEqual(cli.seconds("180s", "d"), 180)
        self.assertEqual(cli.seconds("3m", "d"), 180)
        self.assertEqual(cli.seconds("1m30s", "d"), 90)
        self.assertEqual(cli.seconds("15", "d"), 15)
        self.assertEqual(cli.seconds("500ms", "d"), 0.5)


class MissingTool(unittest.TestCase):
    """run.sh --tool k6 without k6: it says where k6 comes from, and creates nothing."""

    def test_k6_missing_says_how_to_get_it_and_leaves_no_results_directory(self):
        tmp = tempfile.mkdtemp(prefix="harness-no-k6-")
        try:
            bin_dir = os.path.join(tmp, "bin")     # PATH without k6 (or anything else run.sh needs not)
            os.mkdir(bin_dir)
            os.symlink(shutil.which("dirname"), os.path.join(bin_dir, "dirname"))
            out = os.path.join(tmp, "results")
            env = {"PATH": bin_dir, "NOTESD_PYTHON": sys.executable, "HOME": tmp}
            res = subprocess.run(["/bin/bash", os.path.join(LOADTESTS, "run.sh"), "--tool", "k6",
                                  "--quick", "--out", out, "notesd"], env=env, capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(res.returncode, 2, res.stdout + res.stderr)
            self.assertIn("--tool k6: k6 is not on PATH", res.stderr)
            self.assertIn("k6 is not in Debian or npm", res.stderr)
            self.assertIn("docker compose -f docker/compose.yaml run --rm k6", res.stderr)
            self.assertIn("set K6=/path/to/k6", res.stderr)
            self.assertFalse(os.path.exists(out), os.listdir(tmp))
            self.assertEqual(sorted(os.listdir(tmp)), ["bin"])
        finally:
            shutil.rmtree(tmp)


class DatabaseUrls(unittest.TestCase):
    def test_hosts(self):
        self.assertEqual(netcheck.db_hosts("postgresql://postgres@127.0.0.1:54329/notes"), ["127.0.0.1"])
        self.assertEqual(netcheck.db_hosts("postgres://u:p@db.example.com/notes"), ["db.example.com"])
        self.assertEqual(netcheck.db_hosts("postgresql://[::1]:5432/notes"), ["::1"])
        self.assertEqual(netcheck.db_hosts("postgresql:///notes?host=/var/run/postgresql"), ["/var/run/postgresql"])
        self.assertEqual(netcheck.db_hosts("postgresql://a:1,b:2/notes"), ["a", "b"])
        self.assertEqual(netcheck.db_hosts("host=10.0.0.5 port=5432 dbname=notes"), ["10.0.0.5"])
        self.assertEqual(netcheck.db_port("postgresql://postgres@127.0.0.1:54329/notes"), 54329)
        self.assertEqual(netcheck.db_port("host=x port=6543"), 6543)

    def test_loopback(self):
        for h in ("127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "/tmp", ""):
            self.assertTrue(netcheck.is_loopback_host(h), h)
        for h in ("10.0.0.5", "db.example.com", "128.0.0.1", "127.0.0.1.example.com"):
            self.assertFalse(netcheck.is_loopback_host(h), h)

    def test_remote_database_is_refused_without_the_flag(self):
        old = os.environ.get("DB_URL")
        os.environ["DB_URL"] = "postgresql://postgres@db.example.com/notes"
        try:
            with self.assertRaises(run.HarnessError) as cm:
                run.open_database(allow_remote=False)
            self.assertIn("--allow-remote-db", str(cm.exception))
        finally:
            if old is None:
                del os.environ["DB_URL"]
            else:
                os.environ["DB_URL"] = old


if __name__ == "__main__":
    unittest.main(verbosity=2)
