"""One k6 version everywhere: the k6 the tests run (`k6 version`) is the release
loadtests/loadlib/tools/k6.py pins (PINNED), and so are docker/compose.yaml's
k6 image, every image of the k6-operator TestRun, @types/k6 (the API the scripts
are type-checked against: package.json and its lockfile), and every k6 version the
docs name (`k6 X.Y.Z`, `grafana/k6:X.Y.Z`, `k6 vX.Y.Z`). A new k6 means changing
them together: this test fails until they agree.

    cd loadtests && K6=/path/to/k6 /usr/bin/python3 -B -m tests.k6.test_version

CTest `loadtests_k6_version`. Without k6 the binary's check is skipped and the
pins are still compared; exit 77 when only that one was left out.
"""
import json
import os
import re
import sys
import unittest

import yaml

from loadlib.tools import k6 as k6tool
from tests import REPO

DOCS = ["loadtests/README.md", "loadtests/loadlib/tools/README.md",
        "loadtests/calibration/README.md", "docker/README.md", "docker/kubernetes/README.md"]
# a k6 release named in prose or as an image; not @types/k6 or other packages' versions
DOC_VERSION = re.compile(r"(?:grafana/k6:|\bk6 v?)(\d+\.\d+\.\d+)")


def read(rel):
    with open(os.path.join(REPO, rel), encoding="utf-8") as f:
        return f.read()


class Pins(unittest.TestCase):
    def test_compose_image(self):
        svc = yaml.safe_load(read("docker/compose.yaml"))["services"]["k6"]
        self.assertEqual(svc["image"], f"grafana/k6:{k6tool.PINNED}")

    def test_testrun_images(self):
        spec = yaml.safe_load(read("docker/kubernetes/overlays/k6/testrun.yaml"))["spec"]
        images = {part: spec[part]["image"] for part in ("initializer", "runner", "starter")
                  if (spec.get(part) or {}).get("image")}
        self.assertIn("runner", images)
        for part, image in images.items():
            self.assertEqual(image, f"grafana/k6:{k6tool.PINNED}", part)

    def test_types_package(self):
        pkg = json.loads(read("loadtests/k6/package.json"))
        lock = json.loads(read("loadtests/k6/package-lock.json"))
        self.assertEqual(pkg["devDependencies"]["@types/k6"], k6tool.PINNED)
        self.assertEqual(lock["packages"]["node_modules/@types/k6"]["version"], k6tool.PINNED)

    def test_docs_name_the_pinned_version_only(self):
        named = 0
        for rel in DOCS:
            for m in DOC_VERSION.finditer(read(rel)):
                named += 1
                self.assertEqual(m.group(1), k6tool.PINNED, f"{rel}: {m.group(0)}")
        self.assertGreater(named, 0, "the docs name no k6 version")

    def test_install_hint_names_it(self):
        self.assertIn(f"k6 {k6tool.PINNED}", k6tool.INSTALL_HINT)


class Binary(unittest.TestCase):
    def test_the_k6_at_hand_is_the_pinned_one(self):
        path = k6tool.path()
        if path is None:
            self.skipTest(k6tool.missing())
        self.assertEqual(k6tool.version(path), k6tool.PINNED,
                         f"{path} is k6 {k6tool.version(path)}; the tests ran k6 {k6tool.PINNED} "
                         "and compose.yaml, the TestRun, @types/k6 and the docs pin it: change "
                         "them together (loadtests/loadlib/tools/k6.py PINNED first)")


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    # every check ran but the binary's: say so to CTest (skipped, not passed)
    sys.exit(77 if result.skipped else 0)
