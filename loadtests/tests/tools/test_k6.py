"""k6's adapter: its parser on fixtures in the shape k6 documents for
handleSummary data (fixtures/tools/k6/, written by hand before a k6 binary was at
hand; the live runs are the conformance matrix's smoke run and
tests/k6/), how it finds k6 (K6, then PATH), and its generated script,
type-checked against @types/k6 when loadtests/k6/node_modules has TypeScript
(loadtests/k6/check-types.sh installs it)."""
import json
import os
import subprocess
import tempfile
import unittest

from loadlib.tools import k6
from loadlib.tools.base import RunSpec
from tests import LOADTESTS
from tests.tools import TOOL_FIXTURES

K6_MODULES = os.path.join(LOADTESTS, "k6", "node_modules")


def parse_fixture(case):
    d = os.path.join(TOOL_FIXTURES, "k6", case)
    with open(os.path.join(d, "run.json")) as f:
        spec = RunSpec(**json.load(f)["spec"])
    return k6.parse("", "", d, spec)


class Parse(unittest.TestCase):
    """Figures read off the captured k6-summary.json files by hand."""

    def test_all_answered(self):
        r = parse_fixture("delay")
        self.assertEqual(r.requests, 396)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual(r.rps, 194.08655905394613)
        self.assertEqual(r.duration_s, 2.040326759)
        self.assertEqual((r.latency.mean, r.latency.p50, r.latency.p90, r.latency.p99,
                          r.latency.max),
                         (50.83131654040404, 50.204885000000004, 59.298238, 62.65186115000001,
                          71.925785))

    def test_count_run(self):
        r = parse_fixture("json")      # shared-iterations: exactly the 2,000 asked for
        self.assertEqual(r.requests, 2000)
        self.assertEqual(r.errors.total(), 0)
        self.assertEqual(r.latency.p99, 18.901450679999996)

    def test_refused_are_connect_errors_not_requests(self):
        r = parse_fixture("refused")
        self.assertEqual(r.requests, 0)
        self.assertEqual(r.errors.connect, 50)
        self.assertEqual(r.errors.total(), 50)
        self.assertIsNone(r.latency.p50)   # k6 reports zeros; no answer, no latency

    def test_404_is_non2xx(self):
        r = parse_fixture("notfound")
        self.assertEqual(r.requests, 200)
        self.assertEqual(r.errors.non2xx, 200)
        self.assertEqual(r.errors.total(), 200)

    def test_errors_by_kind_from_the_scripts_counters(self):
        r = parse_fixture("mixed")
        # 120 sent; 12 refused, 5 timed out, 3 reset got no response
        self.assertEqual(r.requests, 100)
        self.assertEqual((r.errors.non2xx, r.errors.connect, r.errors.timeout, r.errors.reset,
                          r.errors.other), (10, 12, 5, 3, 0))
        self.assertEqual(r.latency.p99, 4.9011)

    def test_no_summary_file(self):
        with tempfile.TemporaryDirectory() as wd:
            r = k6.parse("", "", wd, RunSpec(url="http://127.0.0.1:1/"))
        self.assertEqual(r.errors.other, 1)
        self.assertTrue(any("no summary" in n for n in r.notes))

    def test_dropped_iterations_are_noted(self):
        r = k6.from_summary({"metrics": {"http_reqs": {"values": {"count": 5, "rate": 5}},
                                         "dropped_iterations": {"values": {"count": 7}}}},
                            k6.ToolResult(tool="k6"))
        self.assertEqual(r.requests, 5)
        self.assertTrue(any("dropped 7" in n for n in r.notes))


class Command(unittest.TestCase):
    def script(self, spec):
        with tempfile.TemporaryDirectory() as wd:
            argv = k6.command(spec, wd)
            with open(os.path.join(wd, k6.SCRIPT)) as f:
                return argv, f.read(), wd

    def options(self, source):
        start = source.index("export const options = ") + len("export const options = ")
        return json.JSONDecoder().raw_decode(source[start:])[0]

    def test_closed_duration(self):
        argv, source, wd = self.script(RunSpec(url="http://127.0.0.1:8080/json", connections=7,
                                               duration_s=2, keepalive=False))
        self.assertEqual(os.path.basename(argv[0]), "k6")
        self.assertEqual(argv[1], "run")
        self.assertIn("--no-usage-report", argv)
        opts = self.options(source)
        self.assertEqual(opts["scenarios"]["load"],
                         {"executor": "constant-vus", "vus": 7, "duration": "2s"})
        self.assertTrue(opts["noConnectionReuse"])
        self.assertIn(json.dumps(os.path.join(wd, k6.SUMMARY)), source)

    def test_open_model_and_count(self):
        _, source, _ = self.script(RunSpec(url="http://127.0.0.1:8080/json", connections=5,
                                           duration_s=3, rate=100))
        self.assertEqual(self.options(source)["scenarios"]["load"]["executor"],
                         "constant-arrival-rate")
        _, source, _ = self.script(RunSpec(url="http://127.0.0.1:8080/json", connections=5,
                                           requests=50))
        self.assertEqual(self.options(source)["scenarios"]["load"],
                         {"executor": "shared-iterations", "vus": 5, "iterations": 50,
                          "maxDuration": "10m"})

    def test_ramping_open_model(self):
        _, source, _ = self.script(RunSpec(url="http://127.0.0.1:8080/json", connections=10,
                                           duration_s=5, rate=50, ramp=((3, 250), (2, 250))))
        self.assertEqual(self.options(source)["scenarios"]["load"],
                         {"executor": "ramping-arrival-rate", "startRate": 50, "timeUnit": "1s",
                          "stages": [{"duration": "3s", "target": 250},
                                     {"duration": "2s", "target": 250}],
                          "preAllocatedVUs": 10, "maxVUs": 100})

    @unittest.skipUnless(os.path.isfile(os.path.join(K6_MODULES, "typescript", "bin", "tsc")),
                         "no TypeScript in loadtests/k6/node_modules (check-types.sh installs it)")
    def test_generated_script_type_checks_against_k6_api(self):
        with tempfile.TemporaryDirectory() as wd:
            k6.command(RunSpec(url="http://127.0.0.1:8080/json", rate=10, duration_s=1), wd)
            types = os.path.join(K6_MODULES, "@types")
            with open(os.path.join(wd, "tsconfig.json"), "w") as f:
                json.dump({"compilerOptions": {
                    "allowJs": True, "checkJs": True, "noEmit": True, "strict": True,
                    "noImplicitAny": False, "module": "es2020", "moduleResolution": "node",
                    "target": "es2020", "lib": ["es2020"], "types": ["k6"],
                    "typeRoots": [types], "baseUrl": ".",
                    "paths": {"k6": [f"{types}/k6"], "k6/*": [f"{types}/k6/*"]}},
                    "include": [k6.SCRIPT]}, f)
            p = subprocess.run(["node", os.path.join(K6_MODULES, "typescript", "bin", "tsc"),
                                "-p", wd], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


class Finding(unittest.TestCase):
    """K6=/path/to/k6 wins over PATH; a K6 that names no executable means no k6."""

    def setUp(self):
        self.saved = {k: os.environ.get(k) for k in ("K6", "PATH")}

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def test_k6_variable_names_the_binary(self):
        with tempfile.TemporaryDirectory() as d:
            exe = os.path.join(d, "k6-custom")
            with open(exe, "w") as f:
                f.write("#!/bin/sh\necho 'k6 v9.8.7 (commit/x, go1.0, linux/amd64)'\n")
            os.chmod(exe, 0o755)
            os.environ["K6"] = exe
            os.environ["PATH"] = "/nonexistent"
            self.assertEqual(k6.path(), exe)
            self.assertTrue(k6.available())
            self.assertEqual(k6.version(), "9.8.7")
            self.assertEqual(k6.command(RunSpec(url="http://127.0.0.1:1/"), d)[0], exe)
            # the dashboard came with 0.49.0: a newer k6 gets the export, without a port
            env = k6.web_dashboard_env(os.path.join(d, "r.html"))
            self.assertEqual(env["K6_WEB_DASHBOARD_EXPORT"], os.path.join(d, "r.html"))
            self.assertEqual(env["K6_WEB_DASHBOARD_PORT"], "-1")
            with open(exe, "w") as f:
                f.write("#!/bin/sh\necho 'k6 v0.48.0 (2023-12-04T12:00:00+0000/v0.48.0, go1.21)'\n")
            self.assertEqual(k6.web_dashboard_env(os.path.join(d, "r.html")), {})
            os.chmod(exe, 0o644)
            self.assertIsNone(k6.path(), "a K6 that is not executable is no k6")
            self.assertIn(f"K6={exe} is not an executable file", k6.missing())

    def test_path_when_k6_is_unset(self):
        os.environ.pop("K6", None)
        with tempfile.TemporaryDirectory() as d:
            os.environ["PATH"] = d
            self.assertIsNone(k6.path())
            self.assertIn("no k6 on PATH and K6 is unset", k6.missing())
            self.assertIn(k6.INSTALL_HINT, k6.missing())
            exe = os.path.join(d, "k6")
            with open(exe, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(exe, 0o755)
            self.assertEqual(k6.path(), exe)

    def test_version_tuple(self):
        self.assertEqual(k6.version_tuple("2.2.0"), (2, 2, 0))
        self.assertEqual(k6.version_tuple("v0.49.1"), (0, 49, 1))
        self.assertEqual(k6.version_tuple(""), ())


class Contract(unittest.TestCase):
    def test_keeps_the_base_contract(self):
        self.assertEqual(k6.NAME, "k6")
        self.assertTrue(k6.INSTALL_HINT)
        for name in ("available", "version", "command", "parse"):
            self.assertTrue(callable(getattr(k6, name)), name)

    def test_version_of_the_installed_tool(self):
        if not k6.available():
            self.skipTest(f"k6 not installed: {k6.INSTALL_HINT}")
        self.assertRegex(k6.version(), r"^\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
