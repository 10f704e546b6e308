"""loadlib's shape, checked from its source: its dependencies point down (each
module imports only modules of lower layers, read from its import statements), so
the bottom parts can be read, tested and reused alone; the commands sit on top, one
subpackage each (commands/<command>/), and never import another command's package
(what two commands share belongs in the library below them); no helper is defined
twice (no two modules define the same name, and no two functions have the same
body); no module is over SIZE_LIMIT lines; only paths.py works out where the
checkout is; every way in (the scripts of ENTRY_POINTS, `python3 -m loadlib`) goes
through the one entry point, loadlib/entry.py, in a few lines, without PYTHONPATH or
sys.path, and runs; the tests (one tree, tests/) and all other Python here but the
scripts of RUN_BY_PATH leave sys.path alone too; and pyproject.toml declares the
package, the console scripts, and every module imported from outside the standard
library (what the commands import as dependencies, what only the tests import as the
`test` extra), each with the Debian package it comes from.

    cd loadtests && /usr/bin/python3 -B -m tests.lib.test_layers
"""
import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
import unittest

from loadlib.entry import COMMANDS, SCRIPTS
from tests import LOADTESTS

LOADLIB = os.path.join(LOADTESTS, "loadlib")
SIZE_LIMIT = 500
# Modules allowed over SIZE_LIMIT lines for a while: one being changed elsewhere at the same
# time, split into parts once that work is in (none now). An entry that is no longer needed
# makes the test fail: take it out.
OVERSIZE = set()
# Names several modules define on purpose, each keeping the same contract: name -> (where, what).
CONTRACTS = {
    "main": (("commands.", "entry"), "a command's entry point (entry.py's runs the command it names)"),
    "parse_args": ("commands.", "a command's options"),
    "available": ("tools.", "the adapter contract of tools/base.py"),
    "version": ("tools.", "the adapter contract of tools/base.py"),
    "command": ("tools.", "the adapter contract of tools/base.py"),
    "parse": ("tools.", "the adapter contract of tools/base.py"),
    "path": ("tools.", "the adapter contract of tools/base.py (where a command runs the binary)"),
    "binary": ("tools.", "an npm tool's binary: tools/_npm.py's, named by its adapter"),
}
# Helpers still defined a second time, in the modules of OVERSIZE (same reason): (module, name)
# -> the one they should use (none now). An entry that is no longer needed makes the test fail.
PENDING_TWICE = {}
# Functions this short may look alike without being a copy (a one-line accessor, a wrapper).
MIN_COPY_STATEMENTS = 3
# The scripts a person runs (paths under loadtests/), and the command of loadlib/entry.py each
# runs; notesd-loadtests runs any of them.
ENTRY_POINTS = {"bench": "bench", "calibrate": "calibrate", "verify": "verify", "reconcile": "reconcile",
                "harness/analyze.py": "analyze", "run.sh": "harness", "judge": "judge",
                "notesd-loadtests": None}

# The Python outside loadlib/ and tests/ that is run by path from its own folder, where only
# a line that puts loadtests/ on sys.path reaches loadlib (README.md, "Running the commands"):
# path -> who runs it so. Nothing else under loadtests/ touches sys.path; an entry that no
# longer does makes the test fail.
RUN_BY_PATH = {
    "calibration/openload.py": "calibrate (a separate process, pinned) and people, by path",
    "verification/broken_target.py": "tests/integration/test_verify.py and people, by path",
    "bench.d/pg_cpu_per_query.py": "people, by path (bench.d is no module name)",
}
# Folders under loadtests/ that hold no source of ours.
NOT_SOURCE = {"node_modules", "results", "__pycache__"}
# Python that a load tool runs, not us: the locustfiles captured from the locust adapter's runs.
NOT_OURS = os.path.join("tests", "fixtures", "tools")
# The top-level modules of ours, and the scripts beside a test that it imports by path.
OURS = {"loadlib", "tests"}

# bottom first; a module may import from the layers before its own. A command's modules are
# commands.<command>.<part>.
LAYERS = [
    {"paths", "httpc"},
    {"prom", "netcheck", "procs", "pg", "pgbench", "mixes", "report", "charts", "cli", "tools.base",
     "tools._npm", "journal_pages", "htmlpage"},
    # adapters that a command or another adapter imports by name: on tools.base
    {"quantile", "openmetrics", "tools.wrk", "tools.k6", "tools.locust", "tools.artillery", "netns", "server", "database",
     "tools.ws_base", "pagecharts"},
    {"sampler", "tools.run", "tools.locust_distributed", "stats", "journal"},
    {"tools.ws_run", "judgement"},
    # the commands' parts, in the order they build on each other
    {"commands.harness.harness_figures", "commands.harness.arrivals", "commands.bench.bench_figures",
     "commands.calibrate.calibrate_report",
     "commands.calibrate.calibrate_runs", "commands.calibrate.calibrate_target",
     "commands.calibrate.verdicts", "commands.reconcile.client", "commands.verify.js",
     "commands.judge.judge_figures", "commands.judge.collect", "commands.judge.page"},
    {"commands.harness.harness_report", "commands.bench.bench_report", "commands.bench.subjects",
     "commands.calibrate.matrix", "commands.verify.verify_target", "commands.calibrate.ws",
     "commands.bench.headline", "commands.bench.compare_report"},
    {"commands.harness.analyze", "commands.bench.bench_runs", "commands.bench.setup",
     "commands.bench.revisions", "commands.calibrate.protocols", "commands.calibrate.scorecard",
     "commands.verify.api",
     "commands.verify.work"},
    {"commands.bench.sweep", "commands.bench.bench_netns", "commands.bench.compare",
     "commands.calibrate.scorecard_page"},
    # the commands: main(argv) of each
    {"commands.harness.harness_command", "commands.bench.bench_command", "commands.verify.verify_command",
     "commands.calibrate.calibrate_command", "commands.reconcile.reconcile_command", "commands.judge.judge_command"},
    # the one entry point, which imports the commands by name when one runs, and python3 -m loadlib
    {"entry"},
    {"__main__"},
]
COMMAND_PACKAGES = {"harness", "bench", "verify", "calibrate", "reconcile", "judge"}


def command_of(module):
    """The command package a module belongs to ("bench" for commands.bench.bench_runs), or None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "commands" else None


def layer_of(module):
    for i, names in enumerate(LAYERS):
        if module in names:
            return i
    return None


def loadlib_imports(path, module):
    """The loadlib modules a file imports, as dotted names relative to loadlib."""
    package = module.rsplit(".", 1)[0].split(".") if "." in module else []
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:                                   # relative: from . / .. import
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                prefix = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith("loadlib"):
                prefix = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                name = ".".join(prefix + [alias.name])
                out.add(name if layer_of(name) is not None else ".".join(prefix))
        elif isinstance(node, ast.Import):
            out.update(a.name[len("loadlib."):] for a in node.names if a.name.startswith("loadlib."))
    return {m for m in out if m}


def modules():
    """(dotted name relative to loadlib, path) of every module of the package, its
    subpackages' included."""
    for root, dirs, files in os.walk(LOADLIB):
        dirs[:] = sorted(d for d in dirs if d not in NOT_SOURCE)
        rel = os.path.relpath(root, LOADLIB)
        prefix = "" if rel == "." else rel.replace(os.sep, ".") + "."
        for name in sorted(files):
            if name.endswith(".py") and name != "__init__.py":
                yield prefix + name[:-3], os.path.join(root, name)


def parsed(path):
    with open(path) as f:
        return ast.parse(f.read(), path)


def definitions(tree):
    """The functions and classes a module defines at its top level."""
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def functions(tree):
    """Every function of a module: its own and its classes' methods, (qualified name, node)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


def body_of(fn):
    """A function's statements without its docstring, as a comparable dump, and how many."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    args = ast.dump(fn.args, annotate_fields=False)
    return args + "".join(ast.dump(stmt, annotate_fields=False) for stmt in body), len(body)


def python_files():
    """(path relative to loadtests/, path) of every Python file under loadtests/, and the
    folders: (relative path, None)."""
    for root, dirs, files in os.walk(LOADTESTS):
        dirs[:] = sorted(d for d in dirs if d not in NOT_SOURCE and not d.startswith("."))
        rel_root = os.path.relpath(root, LOADTESTS)
        if rel_root != ".":
            yield rel_root, None
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                yield os.path.relpath(path, LOADTESTS), path


def touches_sys_path(tree):
    """True when the code reads or changes sys.path."""
    return any(isinstance(n, ast.Attribute) and n.attr == "path" and isinstance(n.value, ast.Name)
               and n.value.id == "sys" for n in ast.walk(tree))


class Layers(unittest.TestCase):
    def modules(self):
        return modules()

    def test_every_module_has_a_layer(self):
        for module, _ in self.modules():
            if module.startswith("tools.") and layer_of(module) is None:
                continue                           # other adapters: checked below, like tools.wrk
            self.assertIsNotNone(layer_of(module), f"{module} is in no layer of test_layers.py")

    def test_imports_point_down(self):
        for module, path in self.modules():
            mine = layer_of(module)
            if mine is None:                        # an adapter: beside the runner, above quantile
                mine = layer_of("tools.run")
            for dep in loadlib_imports(path, module):
                theirs = layer_of(dep)
                self.assertIsNotNone(theirs, f"{module} imports {dep}, which is in no layer")
                self.assertLess(theirs, mine, f"{module} (layer {mine}) imports {dep} (layer {theirs})")

    def test_commands_import_no_other_command(self):
        found = set()
        for module, path in self.modules():
            mine = command_of(module)
            if mine is None:
                self.assertFalse(module.startswith("commands."),
                                 f"{module}: a command's modules live in its package, commands/<command>/")
                continue
            found.add(mine)
            for dep in loadlib_imports(path, module):
                theirs = command_of(dep)
                self.assertIn(theirs, (None, mine), f"{module} imports {dep}, a part of the command "
                                                    f"{theirs}: move what they share into the library")
        self.assertEqual(found, COMMAND_PACKAGES, "every command package is listed in test_layers.py")


    def test_no_two_modules_have_the_same_name(self):
        """A module's file name says which one it is wherever it is quoted (a traceback, a
        README, `grep`): a command's parts carry the command's name when the library or
        another command has a part of that name (bench_report.py, not a fifth report.py)."""
        where = {}
        for module, _ in modules():
            where.setdefault(module.rsplit(".", 1)[-1], []).append(module)
        same = {name: mods for name, mods in where.items() if len(mods) > 1}
        self.assertEqual(same, {}, "modules of the same name: name each after what it is")

class OneDefinition(unittest.TestCase):
    def test_no_name_is_defined_by_two_modules(self):
        where = {}
        for module, path in modules():
            for node in definitions(parsed(path)):
                where.setdefault(node.name, []).append(module)
        twice = []
        for name, mods in sorted(where.items()):
            if len(mods) < 2:
                continue
            if name in CONTRACTS and all(m.startswith(CONTRACTS[name][0]) for m in mods):
                continue
            if len([m for m in mods if (m, name) not in PENDING_TWICE]) > 1:
                twice.append(f"{name} in {', '.join(mods)}")
        self.assertEqual(twice, [], "defined twice: one definition, in the module that owns it, "
                                    "imported by the others (or a name that says what each one is)")

    def test_no_function_is_a_copy_of_another(self):
        seen, copies = {}, []
        for module, path in modules():
            for name, fn in functions(parsed(path)):
                body, statements = body_of(fn)
                if statements < MIN_COPY_STATEMENTS:
                    continue
                first = seen.setdefault(body, f"{module}.{name}")
                if first != f"{module}.{name}":
                    copies.append(f"{module}.{name} repeats {first}")
        self.assertEqual(copies, [], "copies: share one")

    def test_pending_entries_are_still_needed(self):
        names = {m: {n.name for n in definitions(parsed(p))} for m, p in modules()}
        for (module, name), instead in PENDING_TWICE.items():
            self.assertIn(module, OVERSIZE, f"{module} is not one of the modules being changed elsewhere")
            self.assertIn(name, names.get(module, ()),
                          f"{module} no longer defines {name}: take it out of PENDING_TWICE")
            self.assertIn(instead.rsplit(".", 1)[1], names[instead.rsplit(".", 1)[0]])


class OneRoot(unittest.TestCase):
    def test_only_paths_finds_the_checkout(self):
        """The checkout's root is worked out in paths.py alone: no other module of the
        package looks at its own __file__ (and so at where it sits in the tree)."""
        where = sorted(module for module, path in modules() if module != "paths"
                       and any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(parsed(path))))
        self.assertEqual(where, [], "these find files from their own place: ask loadlib.paths")


class Size(unittest.TestCase):
    def test_no_module_is_over_the_limit(self):
        for module, path in modules():
            with open(path) as f:
                lines = len(f.read().splitlines())
            if module in OVERSIZE:
                self.assertGreater(lines, SIZE_LIMIT, f"{module} has {lines} lines: take it out of OVERSIZE")
            else:
                self.assertLessEqual(lines, SIZE_LIMIT, f"{module} has {lines} lines, more than {SIZE_LIMIT}: "
                                                        "split it by what its parts own")


class EntryPoints(unittest.TestCase):
    def read(self, *path):
        with open(os.path.join(LOADTESTS, *path)) as f:
            return f.read()

    def test_entry_points_are_thin_and_go_through_the_entry_point(self):
        """Each script is a few lines that hand its command to loadlib/entry.py: the Python
        ones in loadtests/ import it, run.sh and harness/analyze.py run notesd-loadtests by
        path; none sets PYTHONPATH or touches sys.path."""
        for script, command in ENTRY_POINTS.items():
            text = self.read(script)
            self.assertLessEqual(len(text.splitlines()), 60 if script == "run.sh" else 40,
                                 f"{script} is no longer a thin entry point")
            self.assertNotIn("PYTHONPATH", text, f"{script} sets PYTHONPATH")
            if os.path.dirname(script) or script.endswith(".sh"):
                self.assertIn("notesd-loadtests", text, f"{script} does not run notesd-loadtests")
            else:
                self.assertIn("from loadlib.entry import main", text, f"{script} does not use entry.py")
            if command:
                self.assertRegex(text, rf'["\s]{command}["\s]', f"{script} does not run {command}")
            if not script.endswith(".sh"):
                self.assertFalse(touches_sys_path(ast.parse(text)), f"{script} uses sys.path")

    def test_the_entry_point_knows_every_command_and_script(self):
        self.assertEqual({COMMANDS[name][2] for name in COMMANDS}, set(ENTRY_POINTS) - {"notesd-loadtests"})
        for name, (module, _, script) in COMMANDS.items():
            self.assertEqual(ENTRY_POINTS[script], name)
            rel = module[len("loadlib."):]
            path = dict(modules()).get(rel)
            self.assertIsNotNone(path, f"{name}: no module {module}")
            mains = [n for n in definitions(parsed(path)) if n.name == "main"]
            self.assertEqual(len(mains), 1, f"{module} defines no main()")
            self.assertEqual([a.arg for a in mains[0].args.args], ["argv"], f"{module}: main(argv=None)")
            self.assertEqual(len(mains[0].args.defaults), 1, f"{module}: main(argv=None)")

    def run_script(self, *argv):
        return subprocess.run(argv, cwd="/", capture_output=True, text=True, timeout=60,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})

    def test_every_way_in_runs(self):
        """Every script answers --help from another directory and without PYTHONPATH, and so
        does `python3 -m loadlib COMMAND` from loadtests/; an unknown command exits 2."""
        for script, command in ENTRY_POINTS.items():
            with self.subTest(script=script):
                res = self.run_script(os.path.join(LOADTESTS, script), "--help")
                self.assertEqual(res.returncode, 0, res.stderr)
                self.assertIn("usage:", res.stdout)
        listing = self.run_script(os.path.join(LOADTESTS, "notesd-loadtests"), "--help").stdout
        for name in COMMANDS:
            with self.subTest(command=name):
                self.assertRegex(listing, rf"(?m)^  {name} ")
                res = subprocess.run([sys.executable, "-B", "-m", "loadlib", name, "--help"],
                                     cwd=LOADTESTS, capture_output=True, text=True, timeout=60)
                self.assertEqual(res.returncode, 0, res.stderr)
                self.assertIn("usage:", res.stdout)
        res = self.run_script(os.path.join(LOADTESTS, "notesd-loadtests"), "no-such-command")
        self.assertEqual(res.returncode, 2)
        self.assertIn("unknown command", res.stderr)

    def test_tests_and_the_rest_leave_sys_path_alone(self):
        """The tests (every file under tests/, run as modules from loadtests/) and all
        other Python here, but the scripts of RUN_BY_PATH."""
        touching = {rel for rel, path in python_files() if path and touches_sys_path(parsed(path))}
        self.assertEqual(sorted(touching - set(RUN_BY_PATH)), [], "these use sys.path")
        self.assertEqual(sorted(set(RUN_BY_PATH) - touching), [],
                         "these no longer use sys.path: take them out of RUN_BY_PATH")

    def test_one_tests_tree(self):
        """Tests and their fixtures live in tests/ alone: no tests/ or fixtures/ folder
        and no test_*.py file anywhere else (the k6 and wrk scripts' own Node test,
        k6/test_mix.mjs, is not Python)."""
        for rel, path in python_files():
            first = rel.split(os.sep)[0]
            if path is None:
                if first != "tests":
                    self.assertNotIn(os.path.basename(rel), ("tests", "fixtures"),
                                     f"{rel}: tests and fixtures belong in tests/")
            elif os.path.basename(rel).startswith("test_"):
                self.assertEqual(first, "tests", f"{rel}: a test outside tests/")

    def test_pyproject_declares_the_package_and_every_command(self):
        with open(os.path.join(LOADTESTS, "pyproject.toml"), "rb") as f:
            project = tomllib.load(f)
        self.assertEqual(project["tool"]["setuptools"]["packages"]["find"]["include"], ["loadlib*"])
        scripts = project["project"]["scripts"]
        # every console script is entry.py's: notesd-loadtests, and one per command
        self.assertEqual(scripts, {name: "loadlib.entry:console_script"
                                   for name in ["notesd-loadtests", *SCRIPTS]})
        self.assertEqual(set(SCRIPTS.values()), set(COMMANDS))


def third_party_imports():
    """{top-level module: {files importing it}} of every import from outside the standard
    library, in the package (scope "run") and in the tests (scope "test")."""
    found = {"run": {}, "test": {}}
    for rel, path in python_files():
        if path is None or rel.startswith(NOT_OURS):
            continue
        scope = "test" if rel.split(os.sep)[0] == "tests" else "run"
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for top in {n.split(".")[0] for n in names}:
                if top not in sys.stdlib_module_names and top not in OURS:
                    found[scope].setdefault(top, set()).add(rel)
    return found


class Dependencies(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(LOADTESTS, "pyproject.toml"), "rb") as f:
            self.project = tomllib.load(f)["project"]
        with open(os.path.join(LOADTESTS, "pyproject.toml")) as f:
            self.text = f.read()

    @staticmethod
    def name(requirement):
        """The distribution a requirement names, normalised (PEP 503)."""
        return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)).lower()

    def distributions(self, modules):
        """{normalised distribution: [modules]} of the installed distributions that provide
        the modules (all of them are installed where the tests run: Debian's packages)."""
        provided = importlib.metadata.packages_distributions()
        out = {}
        for module in modules:
            self.assertIn(module, provided, f"{module} is imported but no installed package provides it")
            for dist in provided[module]:
                out.setdefault(self.name(dist), []).append(module)
        return out

    def test_every_import_outside_the_standard_library_is_declared(self):
        found = third_party_imports()
        runtime = {self.name(r) for r in self.project["dependencies"]}
        tests = {self.name(r) for r in self.project["optional-dependencies"]["test"]}
        self.assertEqual(set(self.distributions(found["run"])), runtime,
                         f"what loadlib and its scripts import: {found['run']}")
        test_only = set(self.distributions(found["test"])) - runtime
        self.assertEqual(test_only, tests, f"what the tests import: {found['test']}")

    def test_each_dependency_says_which_debian_package_it_comes_from(self):
        declared = self.project["dependencies"] + self.project["optional-dependencies"]["test"]
        self.assertGreaterEqual(len(declared), 2)
        for requirement in declared:
            line = next(l for l in self.text.splitlines() if f'"{requirement}"' in l)
            self.assertRegex(line, r"# python3-[a-z0-9-]+", f"{requirement}: from which Debian package?")
            # that package, or the one that brings it (python3-numpy comes with python3-scipy),
            # is one CI installs
            named = set(re.findall(r"python3-[a-z0-9-]+", line.split("#", 1)[1]))
            self.assertTrue(named & self.ci_packages(), f"{requirement}: none of {sorted(named)} "
                                                        "is among .ci/run's packages")

    def ci_packages(self):
        with open(os.path.join(LOADTESTS, "..", ".ci", "run")) as f:
            return set(re.findall(r"(?<![\w-])python3-[a-z0-9-]+", f.read()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
