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
  - booted with systemd-nspawn (systemd 252 as the root's PID 1, the host's
    network), notesd.service enabled with DB_URL in its settings file: systemd
    counts it started once READY=1 came (its STATUS= shown), it runs as a
    dynamic user with no capability, no new privileges and a seccomp filter,
    its descriptor limit and MAX_CONNECTIONS agree, it serves a note and
    /readyz, and `systemctl stop` ends it with status 0;
  - `dpkg --purge notesd` removes it, its settings file with it.

The root's base is cached as a tarball in /var/cache/notesd-test
(NOTESD_DOCKER_CACHE), beside the container tests' base, and so are the
packages apt downloads; a later run only unpacks it (a few seconds) and
installs from the cache. Exit status: 0 passed, 1 failed, 77 (skip) where
mmdebstrap cannot run: no mmdebstrap or systemd-nspawn, not root (chroot and
nspawn need it), or the Debian mirror out of reach.
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
import notes_testlib  # noqa: E402  (the suite's PostgreSQL, free ports)

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


# A unit the booted root runs after notesd.service: it writes what systemd and
# /proc say of the service, and what it answers, to /probe.out, stops the
# service and powers the root off. bash's /dev/tcp speaks HTTP: minbase has no curl.
PROBE_UNIT = r"""[Unit]
Description=what notesd.service looks like from inside
After=notesd.service
Wants=notesd.service

[Service]
Type=oneshot
ExecStart=/bin/bash /probe.sh
ExecStartPost=/bin/systemctl poweroff --no-block

[Install]
WantedBy=multi-user.target
"""
PROBE_SCRIPT = r"""exec >/probe.out 2>&1
get() { # PORT PATH: the status line of GET PATH
  exec 3<>/dev/tcp/127.0.0.1/$1 && printf 'GET %s HTTP/1.0\r\n\r\n' "$2" >&3 &&
    IFS= read -r -t 10 line <&3 && exec 3<&- && echo "${line%$'\r'}"
}
systemctl show notesd -p ActiveState -p SubState -p StatusText -p NRestarts -p Type
pid=$(systemctl show -p MainPID --value notesd)
grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/$pid/status | sed -E 's/:\s+/=/; s/\s+/ /g'
echo "NoFile=$(awk '/^Max open files/ {print $4}' /proc/$pid/limits)"
echo "Notes1=$(get @PORT@ /notes/1)"
echo "Readyz=$(get @METRICS_PORT@ /readyz)"
echo "Line=$(journalctl -u notesd -o cat --no-pager | grep -m1 'listening on')"
systemctl stop notesd
systemctl show notesd -p Result -p ExecMainStatus -p ActiveState | sed 's/^/Stopped/'
"""


def boot_and_probe(c, root, db_url):
    """Boots the root with systemd-nspawn, notesd.service enabled, and checks
    what the probe unit wrote."""
    port, metrics_port = notes_testlib.free_port(), notes_testlib.free_port()
    settings = os.path.join(root, "etc", "default", "notesd")
    with open(settings, "a") as f:
        f.write(f"DB_URL={db_url}\nHOST=127.0.0.1\nPORT={port}\n"
                f"METRICS_HOST=127.0.0.1\nMETRICS_PORT={metrics_port}\n")
    units = os.path.join(root, "etc", "systemd", "system")
    with open(os.path.join(units, "probe.service"), "w") as f:
        f.write(PROBE_UNIT)
    with open(os.path.join(root, "probe.sh"), "w") as f:
        f.write(PROBE_SCRIPT.replace("@PORT@", str(port)).replace("@METRICS_PORT@", str(metrics_port)))
    wants = os.path.join(units, "multi-user.target.wants")
    os.makedirs(wants, exist_ok=True)
    os.symlink("/usr/lib/systemd/system/notesd.service", os.path.join(wants, "notesd.service"))
    os.symlink("/etc/systemd/system/probe.service", os.path.join(wants, "probe.service"))
    # No systemd runs on the host: nothing to register with, no scope to ask for.
    t0 = time.monotonic()
    r = lib.run(["systemd-nspawn", "--directory", root, "--boot", "--register=no", "--keep-unit",
                 "--quiet"], check=False, timeout=300, env={"SYSTEMD_COLORS": "0"})
    probe = {}
    try:
        with open(os.path.join(root, "probe.out")) as f:
            out = f.read()
        probe = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    except OSError:
        out = "(no /probe.out)"
    print(f"booted, probed and powered off in {time.monotonic() - t0:.1f} s (nspawn exit {r.returncode}):")
    print(out, flush=True)
    c.check("nspawn: the root booted and powered off", r.returncode == 0 and probe,
            r.stdout[-1500:] + r.stderr[-1500:])
    if not probe:
        return
    c.check("systemd: notesd.service active (running), Type=notify",
            (probe.get("ActiveState"), probe.get("SubState"), probe.get("Type")) ==
            ("active", "running", "notify"), probe)
    c.check("systemd shows notesd's STATUS= line",
            probe.get("StatusText") == f"API on port {port}, 1 loop(s)", probe.get("StatusText"))
    c.check("no restart", probe.get("NRestarts") == "0", probe.get("NRestarts"))
    uids = set(probe.get("Uid", "0").split())
    c.check("a dynamic user (UID 61184-65519)",
            len(uids) == 1 and 61184 <= int(uids.pop()) <= 65519, probe.get("Uid"))
    c.check("no capability, not even in the bounding set",
            probe.get("CapEff") == probe.get("CapBnd") == "0000000000000000",
            (probe.get("CapEff"), probe.get("CapBnd")))
    c.check("no new privileges, a seccomp filter",
            probe.get("NoNewPrivs") == "1" and probe.get("Seccomp") == "2", probe)
    # LimitNOFILE=65536, or the host's hard limit where systemd may not raise it.
    m = re.search(r"max connections (\d+)", probe.get("Line", ""))
    nofile = int(probe.get("NoFile", "0"))
    c.check("MAX_CONNECTIONS is the descriptor limit less 78, as the unit's comment says",
            m and nofile - int(m.group(1)) == 78, f"limit {nofile}: {probe.get('Line')}")
    c.check("GET /notes/1 answered 200", probe.get("Notes1", "").startswith("HTTP/1.1 200"),
            probe.get("Notes1"))
    c.check("GET /readyz answered 200 (the database reached)",
            probe.get("Readyz", "").startswith("HTTP/1.1 200"), probe.get("Readyz"))
    c.check("systemctl stop: exit status 0",
            (probe.get("StoppedResult"), probe.get("StoppedExecMainStatus"),
             probe.get("StoppedActiveState")) == ("success", "0", "inactive"), probe)


def main():
    if not shutil.which("mmdebstrap"):
        lib.skip("mmdebstrap is missing (Debian package mmdebstrap)")
    if not shutil.which("systemd-nspawn"):
        lib.skip("systemd-nspawn is missing (Debian package systemd-container)")
    if os.geteuid() != 0:
        lib.skip("the root is entered with chroot and systemd-nspawn, which need root")
    try:
        urllib.request.urlopen(MIRROR_RELEASE, timeout=15).close()
    except OSError as e:
        lib.skip(f"the Debian mirror is out of reach ({MIRROR_RELEASE}: {e})")
    debs = glob.glob(os.path.join(BUILD, "package-test", "notesd_*.deb"))
    if len(debs) != 1:
        raise SystemExit(f"FAIL no package in {BUILD}/package-test (packaging/tests/test_deb.py makes it)")
    deb = debs[0]
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
        boot_and_probe(c, root, db_url)

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
