#!/usr/bin/env python3
"""The command line: --help, flags over environment, one-line errors with exit
status 2, and the option table of docs/configuration.md and the metric table of
docs/metrics.md matching the binary."""
import os
import re
import socket
import subprocess
import unittest

from notes_testlib import (BIN, REPO, Notesd, create_database, main, request)


def run(args, env=None, timeout=10):
    full = {k: v for k, v in os.environ.items() if k not in ("DB_URL", "PORT", "POOL_MAX")}
    full.update({"ASAN_OPTIONS": "detect_leaks=0"})
    full.update(env or {})
    return subprocess.run([BIN, *args], env=full, capture_output=True, text=True, timeout=timeout)


def doc_table(page, heading, first_col):
    """Rows of the table that follows the heading line `heading` in the page docs/<page>."""
    with open(os.path.join(REPO, "docs", page), encoding="utf-8") as f:
        text = f.read()
    start = text.index("\n" + heading + "\n")
    rows = []
    for line in text[start:].splitlines():
        if line.startswith("| " + first_col) or line.startswith("|---"):
            continue
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows


class ConfigTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db_url = create_database("config")

    def test_help_lists_every_option_and_exits_0(self):
        res = run(["--help"])
        self.assertEqual(res.returncode, 0)
        self.assertIn("usage: notesd", res.stdout)
        flags = set(re.findall(r"^  --([a-z0-9-]+)", res.stdout, re.M)) - {"help", "version"}
        envs = set(re.findall(r"^  --[a-z0-9-]+(?: VALUE)?\s+([A-Z0-9_]+)\s", res.stdout, re.M))
        rows = doc_table("configuration.md", "## Settings", "flag")
        self.assertEqual({r[0].strip("`").lstrip("-") for r in rows}, flags)
        self.assertEqual({r[1].strip("`") for r in rows}, envs)
        for needed in ("DB_URL", "PORT", "HOST", "POOL_MAX", "METRICS_PORT", "LAG_INTERVAL_MS"):
            self.assertIn(needed, envs)

    def test_help_is_the_settings_table_without_its_markup(self):
        # One description per setting (server/config.c): the table prints it as
        # Markdown, --help as plain text, leaving out its pointers to the docs.
        res = run(["--help"])
        self.assertNotIn("`", res.stdout)
        self.assertNotIn("](", res.stdout)
        said = dict(re.findall(r"^  --([a-z0-9-]+)(?: VALUE)?\s+[A-Z0-9_]+\s+(.*?)(?: \[[^\]]*\])?$",
                               res.stdout, re.M))
        rows = doc_table("configuration.md", "## Settings", "flag")
        self.assertGreater(len(rows), 30)
        for row in rows:
            flag = row[0].strip("`").lstrip("-")
            text = re.sub(r" \(`-?[0-9]+` to `[0-9]+`\)$", "", row[3])  # the range docgen appends
            text = re.sub(r" \(see \[[^\]]*\]\([^)]*\)\)", "", text)
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("`", "")
            self.assertEqual(said.get(flag), text, flag)

    def test_documented_metrics_table_matches_the_metrics_page(self):
        server = Notesd(self.db_url)
        try:
            request(server.port, "GET", "/notes/1")
            text = server.metrics()
        finally:
            self.assertEqual(server.stop(), 0)
        exported = set(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
        documented = {(r[0].strip("`"), r[1]) for r in doc_table("metrics.md", "## Every metric", "metric")}
        self.assertEqual(documented, exported)

    def test_bad_settings_print_one_line_and_exit_2(self):
        cases = [
            (["--bogus"], {}, "unknown option '--bogus'"),
            (["--port"], {}, "needs a value"),
            (["stray"], {}, "unexpected argument"),
            ([], {"PORT": "abc"}, "PORT: 'abc' is not an integer"),
            ([], {"HALF_CLOSE": "maybe"}, "HALF_CLOSE: 'maybe' is not one of abort|answer"),
            (["--port", "70000"], {}, "not an integer in 0..65535"),
            (["--pool-max", "0"], {}, "not an integer in 1..1000"),
            (["--pool-max=-3"], {}, "not an integer"),
            (["--pipeline", "257"], {}, "not an integer in 0..256"),
            ([], {"PIPELINE_DEPTH": "-1"}, "PIPELINE_DEPTH: '-1' is not an integer in 0..256"),
            ([], {"LOG_LEVEL": "loud"}, "not one of error, warn, info, debug"),
            (["--prepared=maybe"], {}, "not a boolean"),
            ([], {"DB_URL": ""}, "DB_URL is not set"),
            (["--db-url", "postgresql://[::1"], {}, "DB_URL is not a valid connection string"),
            (["--db-url", "postgresql://u@no-such-host.invalid/db"], {}, "cannot resolve"),
            # a number is its digits: strtol's leading spaces and '+' are not
            ([], {"JOURNAL": " 5"}, "JOURNAL: ' 5' is not an integer"),
            ([], {"JOURNAL": "+5"}, "JOURNAL: '+5' is not an integer"),
            # rings of 100 GB are a mistake, said before they are allocated
            (["--journal", "10000000", "--threads", "64", "--pool-max", "64"], {},
             "more than half this machine's"),
        ]
        for args, env, words in cases:
            with self.subTest(args=args, env=env):
                full_env = {"DB_URL": self.db_url, **env}
                res = run(args, full_env)
                self.assertEqual(res.returncode, 2, res.stderr)
                self.assertIn(words, res.stderr)
                self.assertEqual(len(res.stderr.strip().splitlines()), 1, res.stderr)

    def test_a_taken_port_is_an_error(self):
        server = Notesd(self.db_url)
        try:
            res = run(["--port", str(server.port), "--metrics-port", "0"],
                      {"DB_URL": self.db_url, "HOST": "127.0.0.1"})
            self.assertEqual(res.returncode, 1)
            self.assertIn("cannot listen", res.stderr)
        finally:
            server.stop()

    def test_flags_override_the_environment(self):
        # PORT names a port that is taken: only the flag's 0 (a free port) lets notesd start.
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            server = Notesd(self.db_url, args=["--port", "0", "--pool-max", "3"],
                            env={"POOL_MAX": "7", "PORT": str(taken.getsockname()[1])})
        try:
            self.assertEqual(request(server.port, "GET", "/status")[0], 200)
            self.assertIn("notes_db_pool_max_connections 3\n", server.metrics())
        finally:
            self.assertEqual(server.stop(), 0)

    def test_the_start_up_line_names_the_statements_and_the_pipeline(self):
        for args, words in ((["--pipeline", "8"], "(unnamed statements, pipeline 8)"),
                            (["--prepared", "--pipeline=4"], "(prepared statements, pipeline 4)"),
                            ([], "(unnamed statements), max connections")):
            with self.subTest(args=args):
                server = Notesd(self.db_url, args=args, env={"LOG_LEVEL": "info"})
                self.assertEqual(server.stop(), 0)
                self.assertIn(words, server.output)

    def test_password_never_appears_in_the_log(self):
        url = self.db_url.replace("postgres@", "postgres:s3cretpw@")
        server = Notesd(url, env={"LOG_LEVEL": "debug"})
        try:
            request(server.port, "GET", "/notes/1")
            metrics = server.metrics()
        finally:
            self.assertEqual(server.stop(), 0)
        self.assertIn("listening on", server.output)
        self.assertNotIn("s3cretpw", server.output)
        self.assertNotIn("s3cretpw", metrics)


if __name__ == "__main__":
    main()
