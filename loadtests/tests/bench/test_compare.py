"""Checks of loadtests/bench --compare that need no server and no load:

    cd loadtests && /usr/bin/python3 -B -m tests.bench.test_compare

- `REV` and `BASE..NEW` parsed, revisions resolved in this repository;
- the cases (tests × variants) and the schedule: every case runs AB and BA equally
  often, in the same surroundings (a reset or none, the same case before); the two
  runs of a pair back to back, the table reset only between pairs, and only after a
  write;
- the figures from the raw runs: pairs only where both sides are valid, a verdict
  per case and figure, the same report twice from the same bench.json (the seed);
- callgrind's instruction counts: equal builds within the resolution are "no
  difference", a clear difference is found, overlapping rounds decide nothing;
- the report's sections.
"""
import copy
import random
import types
import unittest

from loadlib.commands.bench import compare as bench_compare
from loadlib.commands.bench import compare_report
from loadlib.commands.bench import revisions as bench_revisions


class Revisions(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(bench_revisions.parse_compare("0832f66"), ("0832f66", None))
        self.assertEqual(bench_revisions.parse_compare(" main..HEAD "), ("main", "HEAD"))
        for bad in ("", "a...b", "..b", "a.."):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                bench_revisions.parse_compare(bad)

    def test_resolve(self):
        sha = bench_revisions.resolve("HEAD")
        self.assertRegex(sha, r"^[0-9a-f]{40}$")
        self.assertEqual(bench_revisions.resolve(sha[:12]), sha)
        with self.assertRaises(bench_revisions.BuildError):
            bench_revisions.resolve("no-such-revision-of-notesd")

    def test_describe(self):
        sha = bench_revisions.resolve("HEAD")
        self.assertTrue(bench_revisions.describe(sha, "HEAD").startswith(f"HEAD = {sha[:10]} ("))
        self.assertTrue(bench_revisions.describe(sha, sha[:7]).startswith(f"{sha[:10]} ("))


class Schedule(unittest.TestCase):
    def test_cases(self):
        cases, skipped = bench_compare.make_cases(["json", "read", "write"],
                                                  ["plain", "prepared", "pipeline"], False)
        self.assertEqual([c["case"] for c in cases],
                         ["json", "read", "read, prepared", "write", "write, prepared"])
        self.assertEqual([c["subject"] for c in cases],
                         ["notesd", "notesd", "notesd-prepared", "notesd", "notesd-prepared"])
        self.assertEqual(len(skipped), 2)           # pipelined: one build has no --pipeline
        cases, skipped = bench_compare.make_cases(["read"], ["pipeline"], True)
        self.assertEqual([(c["case"], c["subject"]) for c in cases],
                         [("read, pipeline", "notesd-pipeline")])

    def test_callgrind_counts_notes_in_every_variant_compared(self):
        cases, _ = bench_compare.make_cases(["json", "read", "write"],
                                            ["plain", "prepared-pipeline"], True)
        groups = bench_compare.callgrind_groups(cases)
        self.assertEqual(groups, [("plain", ["/json", "/notes/1"]),
                                  ("prepared-pipeline", ["/notes/1"])])
        self.assertEqual(bench_compare.VARIANT_SETTINGS["prepared-pipeline"],
                         {"PREPARED": "1", "PIPELINE_DEPTH": "16"})
        self.assertEqual([bench_compare.callgrind_label(v, p) for v, ps in groups for p in ps],
                         ["/json", "/notes/1", "/notes/1, prepared-pipeline"])
        cases, _ = bench_compare.make_cases(["json"], ["plain", "pipeline"], True)
        self.assertEqual(bench_compare.callgrind_groups(cases), [("plain", ["/json", "/notes/1"])])

    def test_every_case_runs_ab_and_ba_equally(self):
        cases = list(range(5))
        for rounds in (2, 6, 8):
            first = {k: {"A": 0, "B": 0} for k in cases}
            for rnd in range(1, rounds + 1):
                for index, _ in bench_compare.round_cases(cases, rnd):
                    first[index][bench_compare.pair_order(rnd, index)[0]] += 1
            for k in cases:
                self.assertEqual(first[k]["A"], first[k]["B"], (rounds, k))

    def test_neighbouring_cases_alternate_and_rounds_keep_their_order(self):
        self.assertEqual(bench_compare.pair_order(1, 0), ("A", "B"))
        self.assertEqual(bench_compare.pair_order(1, 1), ("B", "A"))
        self.assertEqual(bench_compare.pair_order(2, 0), ("B", "A"))
        self.assertEqual([i for i, _ in bench_compare.round_cases("abc", 1)], [0, 1, 2])
        self.assertEqual([i for i, _ in bench_compare.round_cases("abc", 2)], [0, 1, 2])


class Rounds(unittest.TestCase):
    """run_pairs as it runs: the servers and wrk replaced by a log of what happens."""

    def test_pairs_adjacent_and_resets_only_between_pairs_after_a_write(self):
        events = []
        cases, _ = bench_compare.make_cases(["json", "read", "write", "mixed"], ["plain"], False)
        fake = types.SimpleNamespace(
            args=types.SimpleNamespace(rounds=2, warmup=1, duration=2, no_reset=False),
            cases=cases, table_dirty=True,
            db=types.SimpleNamespace(reset=lambda: events.append("reset")))

        def run_side(bench, rnd, case, side, first):
            if case["test"] in bench_compare.WRITES:
                bench.table_dirty = True
            return (rnd, case["case"], side)
        saved = bench_compare.run_side, bench_compare.keep_record
        bench_compare.run_side = run_side
        bench_compare.keep_record = lambda bench, rec: events.append(rec)
        try:
            bench_compare.run_pairs(fake)
        finally:
            bench_compare.run_side, bench_compare.keep_record = saved
        runs = [e for e in events if e != "reset"]
        self.assertEqual(len(runs), 2 * 4 * 2)
        for i in range(0, len(runs), 2):                  # each pair: one case, both sides
            self.assertEqual(runs[i][:2], runs[i + 1][:2])
            self.assertEqual({runs[i][2], runs[i + 1][2]}, {"A", "B"})
        # resets only before a pair: round 1's read (state unknown) and mixed (after
        # write); round 2's read (after round 1's mixed) and mixed
        self.assertEqual([events[i + 1][1] for i, e in enumerate(events) if e == "reset"],
                         ["read", "mixed", "read", "mixed"])

    def test_what_precedes_a_pair_does_not_depend_on_who_goes_first(self):
        # For every case: the pairs that A starts and those B starts follow the same
        # things (a reset or none, the same case before), as often. A schedule that
        # tied them (reversing the case order every other round did) would favour
        # one build in every comparison, even of a build with itself.
        cases, _ = bench_compare.make_cases(["json", "hello", "read", "write", "mixed"],
                                            ["plain", "prepared"], False)
        state = {"dirty": True, "last": None}
        seen = {}
        for rnd in range(1, 9):
            for index, case in bench_compare.round_cases(cases, rnd):
                reset = case["test"] in bench_compare.DB_TESTS and state["dirty"]
                if reset:
                    state["dirty"] = False
                first = bench_compare.pair_order(rnd, index)[0]
                if rnd > 1:                                   # round 1 starts from nothing
                    key = (case["case"], reset, state["last"])
                    seen.setdefault(key, {"A": 0, "B": 0})[first] += 1
                if case["test"] in bench_compare.WRITES:
                    state["dirty"] = True
                state["last"] = case["case"]
        unbalanced = {k: v for k, v in seen.items() if abs(v["A"] - v["B"]) > 1}
        self.assertEqual(unbalanced, {})


def compare_run(rnd, case, side, rps, cpu=10.0, db=None, startup=20.0, valid=True, uss=None,
                qps=None):
    return {"round": rnd, "case": case, "test": case.split(",")[0], "side": side,
            "valid": valid, "rps": rps, "cpu_us_per_req": cpu, "db_cpu_us_per_req": db,
            "startup_ms": startup, "other_cores": 0.01, "first": side == "A",
            "uss_peak_bytes": uss, "queries_per_sync": qps}


def compare_data(runs, cases, callgrind=None):
    return {"meta": {"compare": "HEAD", "started": "now", "quick": False, "rounds": 8,
                     "duration_s": 2, "warmup_s": 1, "connections": 100, "confidence": 0.95,
                     "seed": 11, "resamples": 1000, "layout": "l",
                     "sides": {"A": {"describe": "this tree", "sha256": "a" * 64},
                               "B": {"describe": "HEAD", "sha256": "b" * 64}},
                     "host": {"cpu": "x", "cores": 2, "kernel": "k", "loadavg": [0, 0, 0]},
                     "versions": {"wrk": "wrk 4.1.0"}},
            "notes": [], "cases": cases, "runs": runs, "callgrind": callgrind}


class Figures(unittest.TestCase):
    def setUp(self):
        rng = random.Random(2)
        self.cases = [{"case": "json", "test": "json", "subject": "notesd"},
                      {"case": "read", "test": "read", "subject": "notesd"}]
        runs = []
        for rnd in range(1, 9):
            machine = rng.uniform(0.7, 1.3)          # the machine moves both sides alike
            for side in "AB":
                noise = rng.uniform(0.99, 1.01)
                # json: the same binary; read: A 10% fewer req/s and 10% more DB CPU
                runs.append(compare_run(rnd, "json", side, 50000 * machine * noise))
                slow = 0.9 if side == "A" else 1.0
                runs.append(compare_run(rnd, "read", side, 5000 * machine * noise * slow,
                                        db=100 * noise / slow,
                                        uss=(3.5 if side == "A" else 3.2) * 1024 * 1024
                                        + rng.randrange(4096),
                                        qps=(6.0 if side == "A" else 1.0) * noise))
        runs.append(compare_run(9, "json", "A", 1, valid=False))    # an unpaired, invalid round
        self.data = compare_data(runs, self.cases)

    def rows(self):
        return {(r["case"], r["figure"]): r for r in compare_report.comparison_rows(self.data)}

    def test_pairs_need_both_sides_valid(self):
        a, b, rounds = compare_report.paired(self.data["runs"], "json", "rps")
        self.assertEqual(rounds, list(range(1, 9)))
        data = copy.deepcopy(self.data)
        data["runs"][0]["valid"] = False            # round 1, json, A
        self.assertEqual(compare_report.paired(data["runs"], "json", "rps")[2], list(range(2, 9)))

    def test_verdicts(self):
        rows = self.rows()
        self.assertEqual(rows[("json", "rps")]["verdict"], "no difference")
        self.assertEqual(rows[("read", "rps")]["verdict"], "slower")
        self.assertAlmostEqual(rows[("read", "rps")]["ratio"], 0.9, delta=0.02)
        self.assertEqual(rows[("read", "db_cpu_us_per_req")]["verdict"], "slower")
        self.assertNotIn(("json", "db_cpu_us_per_req"), rows)     # no database on /json
        self.assertNotIn(("json", "uss_peak_bytes"), rows)        # not sampled in these runs
        self.assertNotIn(("json", "queries_per_sync"), rows)      # no database on /json
        r = rows[("read", "queries_per_sync")]
        self.assertEqual(compare_report.verdict_words(r), "more queries per sync")
        self.assertAlmostEqual(r["ratio"], 6.0, delta=0.2)
        r = rows[("read", "uss_peak_bytes")]
        self.assertEqual(r["verdict"], "slower")
        self.assertEqual(compare_report.verdict_words(r), "more memory")
        self.assertAlmostEqual(r["a"]["median"], 3.5, delta=0.01)   # in MiB
        # the machine moved each side by ±30%, the pairs by ±1%: the pairing takes it out
        r = rows[("json", "rps")]
        self.assertGreater(r["a"]["rel"], 0.3)
        self.assertLess(r["pair_ratios"]["max"] - r["pair_ratios"]["min"], 0.05)
        self.assertLess(r["plus_minus"], 0.03)

    def test_report_is_reproducible_from_bench_json(self):
        one = compare_report.compare_markdown(self.data)
        self.assertEqual(one, compare_report.compare_markdown(copy.deepcopy(self.data)))
        self.assertIn("- **A: slower** on read req/s (0.9", one)
        self.assertIn("- **A: more memory** on read peak private memory (USS) MiB", one)
        self.assertIn("| json | req/s |", one)
        self.assertIn("no difference detected (±", one)
        self.assertIn("## The noise", one)
        self.assertIn("## Every run", one)
        self.assertNotIn("indicative only", one)
        data = copy.deepcopy(self.data)
        data["meta"]["quick"] = True
        self.assertIn("indicative only", compare_report.compare_markdown(data))


class Instructions(unittest.TestCase):
    def callgrind(self, a, b):
        return {"paths": ["/notes/1"], "rounds": len(a), "requests": 1000,
                "A": {"/notes/1": a}, "B": {"/notes/1": b}}

    def verdict(self, a, b):
        return compare_report.instruction_rows(self.callgrind(a, b))[0]

    def test_identical_builds_within_the_resolution(self):
        # what two builds of the same code gave: rounds apart by ~0.1%
        r = self.verdict([19380.0, 19395.0], [19395.0, 19418.0])
        self.assertEqual(r["verdict"], "no difference")
        r = self.verdict([19352.0], [19372.0])       # one round each, 0.1% apart
        self.assertEqual(r["verdict"], "no difference")

    def test_a_difference_is_found(self):
        self.assertEqual(self.verdict([19600.0, 19610.0], [19350.0, 19360.0])["verdict"],
                         "more instructions")
        self.assertEqual(self.verdict([7500.0, 7501.0], [7840.0, 7841.0])["verdict"],
                         "fewer instructions")

    def test_overlapping_rounds_decide_nothing(self):
        self.assertEqual(self.verdict([19000.0, 19800.0], [19400.0, 19500.0])["verdict"],
                         "no difference")

    def test_section(self):
        data = compare_data([], [], self.callgrind([7840.0], [7840.0]))
        text = compare_report.compare_markdown(data)
        self.assertIn("| GET /notes/1 | 7,840 | 7,840 | 1.0000 | ±0.25% | no difference |", text)
        self.assertIn("instructions per request, GET /notes/1: 7,840 against 7,840", text)
        data["callgrind"] = {"error": "exit 1: valgrind: no such file"}
        self.assertIn("callgrind failed: exit 1", compare_report.compare_markdown(data))


if __name__ == "__main__":
    unittest.main(verbosity=2)
