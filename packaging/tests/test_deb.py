#!/usr/bin/python3
"""The Debian package built as docs/install.md builds it, from this source
tree into a build directory of its own, and checked.

    NOTESD_BUILD_DIR=build-test /usr/bin/python3 packaging/tests/test_deb.py

- configure with -DNOTESD_DEBIAN_FLAGS=ON, build, `cpack -G DEB`;
- lintian (--display-info): no error, and no warning or note that
  docs/install.md does not accept with its reason;
- Depends covers every library the binary is linked against (the Debian
  package each NEEDED entry comes from, as dpkg -S finds it here), each with a
  version as dpkg-shlibdeps writes it; Suggests names PostgreSQL;
- the conffiles are the settings file, the maintainer scripts are executable,
  every file is owned by root, the binary is stripped;
- the package's size, printed.

The package is left in BUILD/package-test/ for packaging/tests/test_root.py
(CTest fixture `deb`). Exit status: 0 passed, 1 failed, 77 (skip) without
cpack's helpers (dpkg-shlibdeps, file) or lintian.
"""
import glob
import os
import re
import shutil

import pkglib as lib

BUILD = os.path.abspath(os.environ.get("NOTESD_BUILD_DIR") or os.path.join(lib.REPO, "build"))
OUT = os.path.join(BUILD, "package-test")


def packages_of(paths):
    """{path: the Debian package that holds that library, or None}, as dpkg knows
    it: dpkg records the path the package ships, which on a merged /usr may be
    /lib's or /usr/lib's name for the file that ldconfig names. One dpkg -S for
    all of them: each call reads dpkg's whole file list."""
    candidates = {}
    for path in paths:
        real = os.path.realpath(path)
        names = {path, real, os.path.join(os.path.dirname(path), os.path.basename(real))}
        names |= {n.replace("/usr/lib/", "/lib/", 1) for n in names} | \
                 {n.replace("/lib/", "/usr/lib/", 1) for n in names if n.startswith("/lib/")}
        candidates[path] = sorted(names)
    asked = sorted({n for names in candidates.values() for n in names})
    owner = {}
    # "package[:arch]: path" per match; names nobody owns go to stderr.
    for line in lib.run(["dpkg", "-S", *asked], check=False).stdout.splitlines():
        package, sep, owned = line.partition(": ")
        if sep and not line.startswith("diversion "):
            owner[owned.strip()] = package.split(":")[0]
    return {path: next((owner[n] for n in names if n in owner), None)
            for path, names in candidates.items()}


def main():
    for tool, package in (("dpkg-shlibdeps", "dpkg-dev"), ("file", "file"), ("lintian", "lintian")):
        if not shutil.which(tool):
            lib.skip(f"{tool} is missing (Debian package {package})")
    c = lib.Checks()
    shutil.rmtree(OUT, ignore_errors=True)
    build = os.path.join(OUT, "build")
    lib.run(["cmake", "-S", lib.REPO, "-B", build, "-DBUILD_TESTING=OFF", "-DNOTESD_DEBIAN_FLAGS=ON"])
    lib.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2)], timeout=900)
    lib.run(["cpack", "-G", "DEB", "-B", OUT], cwd=build)
    debs = glob.glob(os.path.join(OUT, "notesd_*.deb"))
    c.check("cpack made one package", len(debs) == 1, debs)
    deb = debs[0]
    name = f"notesd_{lib.project_version()}-"
    c.check(f"its name starts {name}", os.path.basename(deb).startswith(name), deb)
    print(f"package: {os.path.basename(deb)}, {os.path.getsize(deb):,} bytes; "
          f"Installed-Size {lib.run(['dpkg-deb', '-f', deb, 'Installed-Size']).stdout.strip()} KiB")

    # lintian refuses nothing it is asked as root, but says so on stderr.
    r = lib.run(["lintian", "--display-info", "--no-tag-display-limit", deb], check=False)
    print(r.stdout)
    tags = re.findall(r"^([EWIPXO]): notesd: (\S+)", r.stdout, re.M)
    errors = [t for level, t in tags if level == "E"]
    c.check("lintian: no error", not errors and r.returncode == 0, errors or r.stderr)
    accepted = lib.accepted_lintian_tags()
    unexplained = sorted({(level, t) for level, t in tags if accepted.get(t) != level})
    c.check(f"lintian: every warning and note is one docs/install.md accepts ({len(accepted)})",
            not unexplained, unexplained)
    stale = sorted(set(accepted) - {t for _, t in tags})
    c.check("docs/install.md accepts no tag lintian no longer gives", not stale, stale)

    fields = {k: lib.run(["dpkg-deb", "-f", deb, k]).stdout.strip() for k in ("Depends", "Suggests")}
    print(f"Depends: {fields['Depends']}")
    depends = dict(re.findall(r"([a-z0-9.+-]+) \(([^)]*)\)", fields["Depends"]))
    unversioned = [d for d in fields["Depends"].split(", ") if "(" not in d]
    c.check("Depends: every package with a version", not unversioned, unversioned)
    extract = os.path.join(OUT, "root")
    lib.run(["dpkg-deb", "-x", deb, extract])
    binary = os.path.join(extract, "usr", "bin", "notesd")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                        lib.run(["readelf", "-d", binary]).stdout)
    cache = lib.run(["ldconfig", "-p"]).stdout
    found = {}
    for soname in needed:
        m = re.search(rf"^\s+{re.escape(soname)} \(libc6,x86-64\) => (\S+)$", cache, re.M)
        found[soname] = m and m.group(1)
    owners = packages_of([path for path in found.values() if path])
    providers = {soname: path and owners[path] for soname, path in found.items()}
    print("NEEDED: " + ", ".join(f"{s} ({p})" for s, p in providers.items()))
    uncovered = [s for s, p in providers.items() if p not in depends]
    c.check(f"Depends covers every NEEDED library ({len(needed)})", needed and not uncovered,
            f"not covered: {uncovered}")
    c.check("Suggests: postgresql", "postgresql" in fields["Suggests"].split(", "), fields["Suggests"])

    conffiles = lib.run(["dpkg-deb", "-I", deb, "conffiles"]).stdout.split()
    c.check("conffiles: /etc/default/notesd", conffiles == ["/etc/default/notesd"], conffiles)
    control = os.path.join(OUT, "control")
    lib.run(["dpkg-deb", "-e", deb, control])
    for script in ("postinst", "postrm"):
        c.check(f"{script} is executable", os.access(os.path.join(control, script), os.X_OK))
    listing = lib.run(["dpkg-deb", "-c", deb]).stdout.splitlines()
    not_root = [l for l in listing if l.split()[1] != "root/root"]
    c.check("every file is root's", not not_root, not_root[:3])
    c.check("the binary is stripped",
            "not stripped" not in lib.run(["file", "-L", binary]).stdout)
    c.finish()


if __name__ == "__main__":
    main()
