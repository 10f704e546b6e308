"""loadlib's dependencies point down: each module imports only modules of lower
layers (read from its import statements), so the bottom parts can be read, tested
and reused alone. The commands sit on top and never import each other: what two
commands share belongs in the library below them. A command's own part (the
harness's analyze, bench's bench_report, calibrate's matrix and scorecard) is
imported by that command alone.

    /usr/bin/python3 loadtests/loadlib/tests/test_layers.py
"""
import ast
import os
import unittest

LOADLIB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# bottom first; a module may import from the layers before its own
LAYERS = [
    {"prom", "netcheck", "procs", "server", "pg", "pgbench", "mixes", "report", "charts", "tools.base",
     "tools._npm"},
    # adapters that a command or another adapter imports by name: on tools.base
    {"quantile", "openmetrics", "tools.wrk", "tools.k6", "tools.locust", "netns"},
    {"sampler", "tools.run", "tools.locust_distributed"},
    {"commands.analyze", "commands.bench_report", "commands.calibrate_matrix",
     "commands.calibrate_scorecard"},
    {"commands.bench_sweep", "commands.bench_netns"},
    {"commands.harness", "commands.bench", "commands.verify", "commands.calibrate", "commands.reconcile"},
]
COMMANDS = LAYERS[-1]
PART_OF = {"commands.analyze": "commands.harness", "commands.bench_report": "commands.bench",
           "commands.bench_sweep": "commands.bench", "commands.bench_netns": "commands.bench",
           "commands.calibrate_matrix": "commands.calibrate",
           "commands.calibrate_scorecard": "commands.calibrate"}


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


class Layers(unittest.TestCase):
    def modules(self):
        for folder, prefix in ((LOADLIB, ""), (os.path.join(LOADLIB, "tools"), "tools."),
                               (os.path.join(LOADLIB, "commands"), "commands.")):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py") and name != "__init__.py":
                    yield prefix + name[:-3], os.path.join(folder, name)

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
            if not module.startswith("commands."):
                continue
            found.add(module)
            for dep in loadlib_imports(path, module):
                if dep in COMMANDS:
                    self.fail(f"{module} imports the command {dep}: move what they share into the library")
                if dep in PART_OF:   # a command's parts: for that command and its other parts
                    self.assertIn(PART_OF[dep], (module, PART_OF.get(module)),
                                  f"{module} imports {dep}, a part of {PART_OF[dep]}")
        self.assertEqual(found, COMMANDS | set(PART_OF), "every command module is listed in test_layers.py")

    def test_entry_points_are_thin(self):
        loadtests = os.path.dirname(LOADLIB)
        for script in ("calibrate", "verify", "reconcile", "bench", "harness/run.py", "harness/analyze.py"):
            with open(os.path.join(loadtests, script)) as f:
                text = f.read()
            self.assertLessEqual(len(text.splitlines()), 40, f"{script} is no longer a thin entry point")
            self.assertIn("from loadlib.commands.", text, f"{script} does not call a command module")


if __name__ == "__main__":
    unittest.main(verbosity=2)
