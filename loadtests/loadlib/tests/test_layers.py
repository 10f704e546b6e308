"""loadlib's dependencies point down: each module imports only modules of lower
layers (read from its import statements), so the bottom parts can be read, tested
and reused alone.

    /usr/bin/python3 loadtests/loadlib/tests/test_layers.py
"""
import ast
import os
import unittest

LOADLIB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# bottom first; a module may import from the layers before its own
LAYERS = [
    {"prom", "netcheck", "procs", "server", "pg", "report", "charts", "tools.base"},
    {"quantile", "tools.wrk"},
    {"sampler", "tools.run"},
]


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
        for folder, prefix in ((LOADLIB, ""), (os.path.join(LOADLIB, "tools"), "tools.")):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py") and name != "__init__.py":
                    yield prefix + name[:-3], os.path.join(folder, name)

    def test_every_module_has_a_layer(self):
        for module, _ in self.modules():
            if module.startswith("tools.") and module not in ("tools.base", "tools.wrk", "tools.run"):
                continue                           # other adapters: checked below, like tools.wrk
            self.assertIsNotNone(layer_of(module), f"{module} is in no layer of test_layers.py")

    def test_imports_point_down(self):
        for module, path in self.modules():
            mine = layer_of(module)
            if mine is None:                        # an adapter: it may use base and layer-0 parts
                mine = layer_of("tools.wrk")
            for dep in loadlib_imports(path, module):
                theirs = layer_of(dep)
                self.assertIsNotNone(theirs, f"{module} imports {dep}, which is in no layer")
                self.assertLess(theirs, mine, f"{module} (layer {mine}) imports {dep} (layer {theirs})")


if __name__ == "__main__":
    unittest.main(verbosity=2)
