#!/usr/bin/python3
"""The Debian package installed into a clean Debian 12 root, and run there.

    NOTESD_BUILD_DIR=build-test NOTESD_PGSTATE=build-test/pgstate.json \
      /usr/bin/python3 packaging/tests/test_root.py

Takes the package packaging/tests/test_deb.py left in BUILD/package-test/ and a
Debian 12 root made by mmdebstrap (variant minbase: no man-db, none of notesd's
libraries), and in that root, through chroot:

  - `apt-get install ./notesd_*.deb man-db systemd` installs it with its
    dependencies from the Debian mirror, as docs/install.md says to;
  - `notesd --version` runs: the libraries Depends brought are enough;
  - `man notesd` shows every option the root's `notesd --help` shows;
  - `systemd-analyze verify notesd.service` passes the unit where it is
    installed, and `systemd-analyze security` gives docs/install.md's figure;
  - notesd, with the package's settings file, serves the test suite's
    PostgreSQL (a note, and the packaged static file, byte for byte) and
    exits 0 on SIGTERM;
  - `dpkg --purge notesd` removes it, its settings file with it.

The root's base is cached as a tarball in /var/cache/notesd-test
(NOTESD_DOCKER_CACHE), beside the container tests' base, and so are the
packages apt downloads; a later run only unpacks it (a few seconds) and
installs from the cache. Exit status: 0 passed, 1 failed, 77 (skip) where
mmdebstrap cannot run: no mmdebstrap, not root (chroot needs it), or the
Debian mirror out of reach.
"""
import fcntl
import glob
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import pkglib as lib

sys.path.insert(0, os.path.join(lib.REPO, "docker", "tests"))
sys.path.insert(0, os.path.join(lib.REPO, "tests", "integration"))
import engine  # noqa: E402  (the cache directory and the Debian sources of the container tests)

BUILD = os.path.abspath(os.environ.get("NOTESD_BUILD_DIR") or os.path.join(lib.REPO, "build"))
MIRROR_RELEASE = "http://deb.debian.org/debian/dists/bookworm/Release"
# What the root gets besides the package: man to read its page, systemd for systemd-analyze.
EXTRA = ["man-db", "systemd"]


def base_tarball(cache):
    """A minbase Debian 12 root as a tarball, made once by mmdebstrap. Unlike
    the container tests' slim base it keeps /usr/share/man: man pages are what
    this test reads."""
    tarball = os.path.join(cache, "bookworm-minbase.tar")
    with open(os.path.join(cache, "bookworm-minbase.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(tarball):
            return tarball
        part = tarball + ".part"
        t0 = time.monotonic()
        lib.run(["mmdebstrap", "--variant=minbase", "--format=tar", "--quiet", "bookworm", part,
                 *engine.DEBIAN_SOURCES], timeout=900)
        os.rename(part, tarball)
        print(f"mmdebstrap made {tarball} in {time.monotonic() - t0:.0f} s", flush=True)
    return tarball


def in_root(root, command, check=True, env=None, timeout=600):
    """`command` (a shell line) in the root, with /proc and /dev mounted in a
    mount namespace of its own, so nothing stays mounted when it ends."""
    script = (f'mount -t proc proc "{root}/proc" && mount --rbind /dev "{root}/dev" && '
              f'exec chroot "{root}" /bin/sh -c "$0"')
    return lib.run(["unshare", "--mount", "--propagation", "private", "--fork", "sh", "-c", script,
                    command], check=check, timeout=timeout,
                   env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8",
                        "DEBIAN_FRONTEND": "noninteractive", **(env or {})})


def mounted_under(root):
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(root)]


def sync_dir(src, dst, pattern):
    """Copies the files matching `pattern` from src to dst that dst lacks."""
    os.makedirs(dst, exist_ok=True)
    for path in glob.glob(os.path.join(src, pattern)):
        target = os.path.join(dst, os.path.basename(path))
        if os.path.isfile(path) and not os.path.exists(target):
            shutil.copy2(path, target)


def serve_from_root(c, root, db_url):
    """notesd of the root with the package's settings, against the suite's PostgreSQL."""
    settings = {}
    with open(os.path.join(root, "etc", "default", "notesd")) as f:
        for line in f:
            m = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
            if m:
                settings[m.group(1)] = m.group(2)
    env = {"PATH": "/usr/bin:/bin", **settings, "DB_URL": db_url, "PORT": "0",
           "HOST": "127.0.0.1", "METRICS_PORT": "0", "LOG_LEVEL": "info"}
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    proc = subprocess.Popen([chroot, root, "/usr/bin/notesd"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    out = b""
    try:
        deadline = time.monotonic() + 20
        while b"listening on" not in out or not out.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                raise AssertionError(f"no start-up line from the root's notesd: {out.decode()}")
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"the root's notesd exited {proc.wait()}: {out.decode()}")
            out += chunk
        port = int(re.search(rb"listening on http://127\.0\.0\.1:(\d+)", out).group(1))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/notes/1", timeout=10) as r:
            body = r.read()
            c.check("the root's notesd serves GET /notes/1", r.status == 200 and b'"id":"1"' in body,
                    body[:200])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/app.min.js", timeout=10) as r:
            with open(os.path.join(lib.REPO, "loadtests", "static", "app.min.js"), "rb") as f:
                c.check("the packaged static file, byte for byte (STATIC_DIR of the settings)",
                        r.read() == f.read())
        proc.send_signal(signal.SIGTERM)
        c.check("SIGTERM: exit 0", proc.wait(30) == 0, proc.returncode)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def main():
    if not shutil.which("mmdebstrap"):
        lib.skip("mmdebstrap is missing (Debian package mmdebstrap)")
    if os.geteuid() != 0:
        lib.skip("the root is entered with chroot, which needs root")
    try:
        urllib.request.urlopen(MIRROR_RELEASE, timeout=15).close()
    except OSError as e:
        lib.skip(f"the Debian mirror is out of reach ({MIRROR_RELEASE}: {e})")
    debs = glob.glob(os.path.join(BUILD, "package-test", "notesd_*.deb"))
    if len(debs) != 1:
        raise SystemExit(f"FAIL no package in {BUILD}/package-test (packaging/tests/test_deb.py makes it)")
    deb = debs[0]
    import notes_testlib
    db_url = notes_testlib.create_database("package_root")

    c = lib.Checks()
    cache = engine.cache_dir()
    tarball = base_tarball(cache)
    apt_cache = os.path.join(cache, "apt-archives")
    root = tempfile.mkdtemp(prefix="root-", dir=cache)
    try:
        t0 = time.monotonic()
        lib.run(["tar", "-C", root, "-xf", tarball])
        shutil.copy("/etc/resolv.conf", os.path.join(root, "etc", "resolv.conf"))
        shutil.copy(deb, os.path.join(root, "tmp"))
        sync_dir(apt_cache, os.path.join(root, "var/cache/apt/archives"), "*.deb")
        c.check("the clean root has no notesd library",
                not in_root(root, "dpkg-query -W libh2o-evloop0.13 libpq5", check=False).stdout.strip())
        name = os.path.basename(deb)
        r = in_root(root, f"apt-get update -qq && apt-get install -y --no-install-recommends "
                          f"/tmp/{name} {' '.join(EXTRA)}", check=False, timeout=900)
        c.check("apt-get install ./notesd_*.deb in the root", r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:])
        sync_dir(os.path.join(root, "var/cache/apt/archives"), apt_cache, "*.deb")
        print(f"root ready in {time.monotonic() - t0:.0f} s", flush=True)
        if r.returncode != 0:
            c.finish()
        status = in_root(root, "dpkg-query -W -f '${Status} ${Version}' notesd").stdout
        c.check("dpkg: notesd installed", status.startswith("install ok installed"), status)

        version = in_root(root, "notesd --version", check=False)
        c.check("notesd --version in the root", version.returncode == 0 and
                version.stdout.startswith(f"notesd {lib.project_version()} "), version.stdout + version.stderr)
        rows = lib.help_rows(in_root(root, "notesd --help").stdout)
        text = re.sub(r".\x08", "", in_root(root, "man notesd", env={"MANPAGER": "cat",
                                                                      "MANWIDTH": "100"}).stdout)
        c.check("man notesd in the root", "NOTESD(8)" in text, text[:300])
        failures = lib.check_man_lists_help(text, rows)
        c.check(f"man notesd shows every option --help shows ({len(rows)})", rows and not failures,
                "; ".join(failures))

        r = in_root(root, "systemd-analyze verify notesd.service", check=False)
        c.check("systemd-analyze verify notesd.service in the root",
                r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr)
        r = in_root(root, "systemd-analyze security --offline=yes --no-pager "
                          "/usr/lib/systemd/system/notesd.service", check=False)
        figure = re.search(r"Overall exposure level for notesd\.service: ([0-9.]+)", r.stdout)
        stated, _ = lib.stated_exposure()
        c.check(f"systemd-analyze security in the root: {stated}, as docs/install.md states",
                figure and figure.group(1) == stated, r.stdout[-500:] + r.stderr)

        serve_from_root(c, root, db_url)

        r = in_root(root, "dpkg --purge notesd", check=False)
        left = [p for p in ("usr/bin/notesd", "etc/default/notesd", "usr/lib/systemd/system/notesd.service",
                            "usr/share/man/man8/notesd.8.gz") if os.path.exists(os.path.join(root, p))]
        c.check("dpkg --purge removes it and its settings", r.returncode == 0 and not left,
                (r.stdout + r.stderr)[-500:] + f" left: {left}")
    finally:
        still = mounted_under(root)
        if still:
            print(f"FAIL still mounted under {root}, left in place: {still}", flush=True)
            c.failed += 1
        else:
            shutil.rmtree(root, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
