"""Where the adapters of npm tools find their binaries: the versions pinned in
loadtests/tools (installed by loadtests/tools/install.sh), else one on PATH."""
import os
import shutil

from .. import paths

NODE_MODULES = paths.loadtests("tools", "node_modules")
NPM_BIN = os.path.join(NODE_MODULES, ".bin")


def binary(name):
    """The pinned binary `name`, else one on PATH (the pinned path when there is
    neither, so a command line can still be shown)."""
    pinned = os.path.join(NPM_BIN, name)
    if os.access(pinned, os.X_OK):
        return pinned
    return shutil.which(name) or pinned
