"""Every load tool in one step: loadtests/tools/install.sh --all installs each tool
Debian 12 and npm have, and every adapter's INSTALL_HINT names that command first
and then the tool's own package, which install.sh's list must hold. k6, in neither
Debian nor npm, says so in its hint instead. `install.sh --all --dry-run` lists every
package with its state and installs nothing."""
import os
import re
import subprocess
import unittest

from loadlib.tools import base, k6, run
from tests import LOADTESTS

INSTALL = os.path.join(LOADTESTS, "tools", "install.sh")


def script_list(name):
    with open(INSTALL) as f:
        m = re.search(rf"^{name}=\(([^)]*)\)", f.read(), re.M)
    return m.group(1).split()


def every_adapter():
    """Every adapter module, installed or not."""
    import importlib
    import pkgutil
    mods = []
    for info in pkgutil.iter_modules([os.path.dirname(run.__file__)]):
        if info.name in ("base", "run", "ws_base", "ws_run") or info.name.startswith(("_", "test")):
            continue
        mods.append(importlib.import_module(f"loadlib.tools.{info.name}"))
    return mods


class Hints(unittest.TestCase):
    def test_every_hint_names_the_one_command_and_a_package_it_installs(self):
        packages, npm = script_list("debian_packages"), script_list("tools")
        adapters = every_adapter()
        self.assertGreaterEqual(len(adapters), 12)
        for mod in adapters:
            with self.subTest(tool=mod.NAME):
                if mod.NAME == k6.NAME:            # k6's HTTP and WebSocket adapters
                    self.assertIn("neither Debian nor npm", mod.INSTALL_HINT)
                    self.assertIn("K6=/path/to/k6", mod.INSTALL_HINT)
                    continue
                self.assertTrue(mod.INSTALL_HINT.startswith(base.INSTALL_ALL), mod.INSTALL_HINT)
                apt = re.search(r"apt-get install -y (\S+?)\)?$", mod.INSTALL_HINT)
                if apt:
                    self.assertIn(apt.group(1), packages)
                else:
                    self.assertIn(mod.NAME, npm)

    def test_every_package_serves_an_adapter(self):
        hinted = {m.group(1) for mod in every_adapter()
                  for m in [re.search(r"apt-get install -y (\S+?)\)?$", mod.INSTALL_HINT)] if m}
        self.assertEqual(set(script_list("debian_packages")), hinted)


class DryRun(unittest.TestCase):
    def test_lists_every_package_and_installs_nothing(self):
        env = dict(os.environ, PATH="/usr/bin:/bin")
        env.pop("K6", None)
        res = subprocess.run(["bash", INSTALL, "--all", "--dry-run"], capture_output=True,
                             text=True, timeout=60, env=env)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        for pkg in script_list("debian_packages"):
            self.assertRegex(res.stdout, rf"(?m)^debian  {re.escape(pkg)}: (installed|to install)$")
        self.assertRegex(res.stdout, r"(?m)^npm     autocannon artillery loadtest: ")
        self.assertIn("dry run: nothing installed", res.stdout)
        self.assertRegex(res.stdout, r"(?m)^k6      ")

    def test_dry_run_needs_all(self):
        res = subprocess.run(["bash", INSTALL, "--dry-run"], capture_output=True, text=True)
        self.assertEqual(res.returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
