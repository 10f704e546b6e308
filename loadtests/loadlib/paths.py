"""Where the checkout is: the one place loadlib finds the repository it runs from.

loadlib reads and runs files of the notesd checkout around it (sql/localdb.sh,
loadtests/mixes.json, the k6 and wrk scripts, the peers, build/notesd), so it
runs from a checkout, or from an editable install of one (pyproject.toml). This
module works the root out once, from its own place in the tree
(loadtests/loadlib/paths.py), and every other module asks it: `repo("sql")`,
`loadtests("mixes.json")`. Which file a module needs stays with that module.

Imports nothing of ours: the bottom of the package.
"""
import os

LOADLIB = os.path.dirname(os.path.abspath(__file__))
LOADTESTS = os.path.dirname(LOADLIB)
REPO = os.path.dirname(LOADTESTS)
# Files that only a notesd checkout has: an install that copied loadlib elsewhere lacks them.
MARKERS = (os.path.join("sql", "localdb.sh"), os.path.join("loadtests", "mixes.json"))


class NotACheckout(RuntimeError):
    """loadlib was imported from somewhere that is not a notesd checkout."""


def repo(*parts):
    """A path in the checkout: repo("sql", "reset.sql")."""
    return os.path.join(REPO, *parts)


def loadtests(*parts):
    """A path under loadtests/: loadtests("k6", "notes.js")."""
    return os.path.join(LOADTESTS, *parts)


def require_checkout():
    """Raises NotACheckout, saying what to do, when REPO is not a notesd checkout (loadlib
    installed without -e: the copy in site-packages has no sql/ nor k6 scripts beside it)."""
    missing = [m for m in MARKERS if not os.path.isfile(repo(m))]
    if missing:
        raise NotACheckout(f"{REPO} is not a notesd checkout (no {', '.join(missing)}): run the "
                           "commands from the checkout, or install it editable "
                           "(pip install -e loadtests)")
