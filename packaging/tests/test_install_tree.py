#!/usr/bin/python3
"""`cmake --install` of a build, at two prefixes, checked file by file.

    NOTESD_BUILD_DIR=build-test /usr/bin/python3 packaging/tests/test_install_tree.py

- `--prefix DIR/usr` puts the binary, the man page, the unit, the settings
  file, the SQL, the static files and the documentation under DIR/usr, and
  every path the unit, the settings file and the man page name is that
  prefix's (the settings in PREFIX/etc, as GNUInstallDirs has it);
- the man page renders without a groff warning (lintian's command) and shows
  every option `notesd --help` shows, each with its variable and default;
- `systemd-analyze verify` passes the installed unit (its ExecStart exists,
  its man page is found), and `systemd-analyze security --offline=yes` gives
  the exposure figure and the failed checks that docs/install.md states;
- `--prefix /usr` with DESTDIR, as the package is made: the unit runs
  /usr/bin/notesd with /etc/default/notesd.

Exit status: 0 passed, 1 failed, 77 (skip) without systemd-analyze or man.
"""
import gzip
import os
import re
import shutil
import tempfile

import pkglib as lib

BUILD = os.path.abspath(os.environ.get("NOTESD_BUILD_DIR") or os.path.join(lib.REPO, "build"))

# Relative to the prefix; the settings file is checked on its own (its directory depends on it).
FILES = ["bin/notesd", "share/man/man8/notesd.8.gz", "lib/systemd/system/notesd.service",
         "share/notesd/sql/schema.sql", "share/notesd/sql/seed.sql", "share/notesd/sql/reset.sql",
         "share/notesd/sql/pg_stat_statements.sql", "share/notesd/static/app.min.js",
         "share/doc/notesd/copyright", "share/doc/notesd/changelog.Debian.gz",
         "share/doc/notesd/install.md.gz", "share/doc/notesd/configuration.md.gz",
         "share/doc/notesd/api.md.gz", "share/doc/notesd/api-reference.md.gz",
         "share/doc/notesd/metrics.md.gz",
         "share/doc/notesd/decisions.md.gz", "share/doc/notesd/journal.md.gz"]


def unit_value(unit, key):
    m = re.search(rf"^{key}=(.*)$", unit, re.M)
    return m.group(1) if m else None


def main():
    for tool in ("systemd-analyze", "man"):
        if not shutil.which(tool):
            lib.skip(f"{tool} is missing (Debian packages systemd, man-db)")
    c = lib.Checks()
    tmp = tempfile.mkdtemp(prefix="notesd-install-")
    try:
        prefix = os.path.join(tmp, "usr")
        lib.run(["cmake", "--install", BUILD, "--prefix", prefix])
        missing = [f for f in FILES if not os.path.isfile(os.path.join(prefix, f))]
        c.check("every file under --prefix", not missing, f"missing: {missing}")
        docdir = os.path.join(prefix, "share/doc/notesd")
        shipped = {n[:-6] for n in os.listdir(docdir) if n.endswith(".md.gz")}
        linked = set()
        for page in shipped:
            with gzip.open(os.path.join(docdir, page + ".md.gz"), "rt") as f:
                linked |= set(re.findall(r"\]\(([a-z-]+\.md)(?:#[^)]*)?\)", f.read()))
        man = gzip.open(os.path.join(prefix, "share/man/man8/notesd.8.gz"), "rt").read()
        linked |= set(re.findall(r"\b([a-z-]+\.md)\b", man))
        unshipped = sorted(p for p in linked if p[:-3] not in shipped)
        c.check("every page the shipped pages and the man page name is shipped", not unshipped,
                unshipped)
        settings = os.path.join(prefix, "etc", "default", "notesd")
        c.check("the settings file in PREFIX/etc/default", os.path.isfile(settings))

        unit_path = os.path.join(prefix, "lib/systemd/system/notesd.service")
        unit = open(unit_path).read()
        c.check("ExecStart names the prefix's binary",
                unit_value(unit, "ExecStart") == f"{prefix}/bin/notesd", unit_value(unit, "ExecStart"))
        c.check("EnvironmentFile names the prefix's settings",
                unit_value(unit, "EnvironmentFile") == settings, unit_value(unit, "EnvironmentFile"))
        c.check("the settings name the prefix's static files",
                f"STATIC_DIR={prefix}/share/notesd/static\n" in open(settings).read())
        c.check("no @PLACEHOLDER@ is left",
                not any(re.search(r"@[A-Z_]+@", open(p).read()) for p in (unit_path, settings)))

        notesd = os.path.join(prefix, "bin", "notesd")
        version = lib.run([notesd, "--version"]).stdout
        c.check("the installed notesd --version", version.startswith(f"notesd {lib.project_version()} "),
                version)
        rows = lib.help_rows(lib.run([notesd, "--help"]).stdout)
        c.check("--help has rows", len(rows) > 30, len(rows))

        man_path = os.path.join(prefix, "share/man/man8/notesd.8.gz")
        rc, warnings = lib.man_warnings(man_path)
        c.check("the man page renders without warnings", rc == 0 and warnings == "", warnings)
        text = lib.man_as_text(man_path)
        failures = lib.check_man_lists_help(text, rows)
        c.check(f"the man page shows every option --help shows ({len(rows)})", not failures,
                "; ".join(failures))
        for path in (f"{prefix}/etc/default/notesd", f"{prefix}/lib/systemd/system/notesd.service",
                     f"{prefix}/share/notesd/sql/", f"{prefix}/share/doc/notesd"):
            c.check(f"the man page names {path.replace(prefix, 'PREFIX')}",
                    path in re.sub(r"\s+", "", text) or path in text, path)

        # verify runs `man notesd(8)` for Documentation=; MANPATH finds the prefix's page.
        r = lib.run(["systemd-analyze", "verify", unit_path], check=False,
                    env={"MANPATH": os.path.join(prefix, "share", "man")})
        c.check("systemd-analyze verify passes the unit", r.returncode == 0 and not r.stdout.strip()
                and not r.stderr.strip(), r.stdout + r.stderr)

        figure, failed, output = lib.measured_exposure(unit_path)
        print(output)
        stated_figure, stated_rows = lib.stated_exposure()
        c.check(f"the exposure is the one docs/install.md states ({stated_figure})",
                figure == stated_figure, f"measured {figure}")
        c.check("the failed checks are the ones docs/install.md explains", failed == stated_rows,
                f"measured {failed}, stated {stated_rows}")

        destdir = os.path.join(tmp, "destdir")
        lib.run(["cmake", "--install", BUILD, "--prefix", "/usr"], env={"DESTDIR": destdir})
        unit = open(os.path.join(destdir, "usr/lib/systemd/system/notesd.service")).read()
        c.check("--prefix /usr: ExecStart=/usr/bin/notesd", unit_value(unit, "ExecStart") == "/usr/bin/notesd")
        c.check("--prefix /usr: EnvironmentFile=/etc/default/notesd",
                unit_value(unit, "EnvironmentFile") == "/etc/default/notesd"
                and os.path.isfile(os.path.join(destdir, "etc/default/notesd")))
        c.check("--prefix /usr: nothing in /usr/etc", not os.path.exists(os.path.join(destdir, "usr/etc")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
