#!/usr/bin/python3
"""Copies the files the overlays' ConfigMaps carry into the overlays themselves.

    /usr/bin/python3 docker/kubernetes/sync.py           write the copies (and remove stale ones)
    /usr/bin/python3 docker/kubernetes/sync.py --check   exit 1 and list what differs

kustomize's default load restrictor refuses files outside a kustomization's own
directory, and `kubectl apply -k` and GitOps tools (Argo CD, Flux) cannot turn it
off. So the SQL of sql/ and the k6 scripts of loadtests/ are kept here as byte
copies, next to the kustomization that generates their ConfigMap:

    overlays/statefulset/sql/      sql/schema.sql, seed.sql, pg_stat_statements.sql
    overlays/cloudnativepg/sql/    sql/schema.sql, seed.sql
    overlays/k6/loadtests/         loadtests/k6/*.js, loadtests/k6/lib/*.js, loadtests/mixes.json

The originals stay where they are and are the ones to edit; run this after a
change. docker/tests/test_kubernetes.py (CTest docker_kubernetes) runs --check and
fails while a copy differs, is missing, or is left over.
"""
import argparse
import filecmp
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# overlay directory (relative to HERE) -> the repository files it carries
SQL = {"overlays/statefulset/sql": ["sql/schema.sql", "sql/seed.sql", "sql/pg_stat_statements.sql"],
       "overlays/cloudnativepg/sql": ["sql/schema.sql", "sql/seed.sql"]}
K6_DIR = "overlays/k6/loadtests"


def k6_sources():
    """Every k6 script and lib module of loadtests/k6/, and loadtests/mixes.json, as
    paths relative to loadtests/."""
    k6 = os.path.join(REPO, "loadtests", "k6")
    out = [f"k6/{n}" for n in sorted(os.listdir(k6)) if n.endswith(".js")]
    out += [f"k6/lib/{n}" for n in sorted(os.listdir(os.path.join(k6, "lib"))) if n.endswith(".js")]
    return out + ["mixes.json"]


def plan():
    """{copy's absolute path: original's absolute path}."""
    out = {}
    for d, files in SQL.items():
        for rel in files:
            out[os.path.join(HERE, d, os.path.basename(rel))] = os.path.join(REPO, rel)
    for rel in k6_sources():
        out[os.path.join(HERE, K6_DIR, rel)] = os.path.join(REPO, "loadtests", rel)
    return out


def managed_dirs():
    return [os.path.join(HERE, d) for d in list(SQL) + [K6_DIR]]


def existing():
    """Every file now under the managed directories."""
    found = set()
    for d in managed_dirs():
        for root, _, files in os.walk(d):
            found.update(os.path.join(root, f) for f in files)
    return found


def differences():
    """['what differs', ...]: copies that are missing or not byte-identical, and files
    in the managed directories that copy nothing."""
    want = plan()
    problems = []
    for copy, original in sorted(want.items()):
        rel = os.path.relpath(copy, REPO)
        if not os.path.exists(copy):
            problems.append(f"{rel} is missing (a copy of {os.path.relpath(original, REPO)})")
        elif not filecmp.cmp(copy, original, shallow=False):
            problems.append(f"{rel} differs from {os.path.relpath(original, REPO)}")
    for extra in sorted(existing() - set(want)):
        problems.append(f"{os.path.relpath(extra, REPO)} copies nothing in the repository")
    return problems


def sync():
    want = plan()
    for copy, original in want.items():
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        if not os.path.exists(copy) or not filecmp.cmp(copy, original, shallow=False):
            shutil.copyfile(original, copy)
            print(f"wrote {os.path.relpath(copy, REPO)}")
    for extra in existing() - set(want):
        os.unlink(extra)
        print(f"removed {os.path.relpath(extra, REPO)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only report what differs")
    args = ap.parse_args()
    if args.check:
        problems = differences()
        for p in problems:
            print(p)
        if problems:
            print("run docker/kubernetes/sync.py to bring the copies up to date")
            return 1
        print(f"{len(plan())} copies identical to their originals")
        return 0
    sync()
    return 0


if __name__ == "__main__":
    sys.exit(main())
