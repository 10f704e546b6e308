"""The static checks of docker/, one module per concern, and the registry that
docker/check.py runs.

A check is a function of no arguments that returns its problems, a list of sentences
(empty when it passes), or raises Skip when it cannot run on this machine. It joins
the registry where it is defined, with @check("what it holds") or, for one made per
file, register(title, function). A new check is a function in the module of its
concern; a new concern is a module named in MODULES, whose order is the report's.
"""
import importlib
import pkgutil

# The modules that hold checks, in the order of the report. files.py holds none: it is
# where the others find and read the files they check.
MODULES = ["prometheus", "grafana", "metrics", "k6", "compose", "dockerfiles", "defaults", "offline"]
HELPERS = {"files"}

_registry = []  # (title, function, module), in the order of registration


class Skip(Exception):
    """A check that cannot run here: printed, counted neither way."""


def register(title, fn):
    _registry.append((title, fn, fn.__module__))
    return fn


def check(title):
    """Registers the decorated function as the check `title`."""
    return lambda fn: register(title, fn)


def load():
    """[(title, function)] of every check, module by module in MODULES' order, each
    module's in the order it defines them. Raises LookupError for a module of the
    package that MODULES does not name, whose checks would never run."""
    present = {m.name for m in pkgutil.iter_modules(__path__)} - HELPERS
    if present != set(MODULES):
        raise LookupError(f"docker/checks has modules {sorted(present)}, MODULES names {MODULES}")
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
    order = {f"{__name__}.{name}": i for i, name in enumerate(MODULES)}
    ranked = sorted(enumerate(_registry), key=lambda e: (order[e[1][2]], e[0]))
    return [(title, fn) for _, (title, fn, _) in ranked]
