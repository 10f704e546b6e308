"""A Docker engine for the container tests, and the base images they build on.

Owns: finding or starting a dockerd (isolated data-root, exec-root, pid file and
socket; no bridge, no iptables), stopping what it started by PID, the
stand-ins for pinned base images no registry serves here (the mmdebstrap
Debian base; the peer runtimes' bases, that base plus the runtime from npm),
and building images with host networking. It does not know what the images
are for; the tests do.

Every container and every build uses the host's network (the daemon has no
bridge at all), so nothing leaves loopback except apt's and npm's downloads.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77  # CTest's SKIP_RETURN_CODE for these tests

# The daemon never gets Docker's default bridge (172.17.0.0/16): no docker0, no
# NAT, no forwarding. Containers run with --network host instead.
DAEMON_CONFIG = {"bridge": "none", "iptables": False, "ip6tables": False,
                 "ip-forward": False, "ip-masq": False}

# The pinned base image of docker/Dockerfile, and the Debian suites behind it.
DEBIAN_BASE = "debian:bookworm-20260824-slim"
DEBIAN_SOURCES = ["deb http://deb.debian.org/debian bookworm main",
                  "deb http://deb.debian.org/debian bookworm-updates main",
                  "deb http://deb.debian.org/debian-security bookworm-security main"]
# What makes the official slim image slim, done the same way here, so image
# sizes compare: no documentation, manual pages or translations (copyright
# files stay), and no apt package caches left in layers.
SLIM_DPKG_OPTIONS = ["path-exclude=/usr/share/doc/*", "path-include=/usr/share/doc/*/copyright",
                     "path-exclude=/usr/share/man/*", "path-exclude=/usr/share/info/*",
                     "path-exclude=/usr/share/groff/*", "path-exclude=/usr/share/lintian/*",
                     "path-exclude=/usr/share/locale/*",
                     "path-include=/usr/share/locale/locale.alias"]
SLIM_APT_OPTIONS = ['Dir::Cache::pkgcache ""', 'Dir::Cache::srcpkgcache ""']

# The peer runtimes: the harness's lockfile (node, bun, deno from npm) and the
# Dockerfile whose targets wrap each binary into a stand-in base image.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIMES_DIR = os.path.join(REPO, "loadtests", "peers", "runtimes")
RUNTIMES_DOCKERFILE = os.path.join(REPO, "docker", "tests", "Dockerfile.runtimes")
# Where `npm ci` leaves each runtime's binary, relative to node_modules.
RUNTIME_BINARIES = {"node": "node/bin/node", "bun": "bun/bin/bun.exe", "deno": "deno/deno"}
# The node stand-in needs npm (Dockerfile.peers's deps stage runs npm ci); the
# node npm package carries none. This is the npm Node 26.11.0 ships; the
# official 26.10.0 image has its release's npm 11, which only runs `npm ci` here.
STANDIN_NPM = "11.20.0"
STANDIN_LABEL = "org.notesd.standin"
STANDIN_DIGEST_LABEL = "org.notesd.standin-digest"  # what a stand-in was built from
# The certificate authorities the host trusts (Debian's ca-certificates, with
# the local ones update-ca-certificates added).
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def _exit_on_signal(signum, frame):
    raise SystemExit(f"stopped by signal {signum}")


def skip(reason):
    print(f"SKIP {reason}", flush=True)
    sys.exit(SKIP)


def cache_dir():
    """Where the daemon's data and the base tarball survive between runs:
    NOTESD_DOCKER_CACHE, else /var/cache/notesd-test when writable."""
    d = os.environ.get("NOTESD_DOCKER_CACHE") or "/var/cache/notesd-test"
    try:
        os.makedirs(d, exist_ok=True)
    except PermissionError:
        skip(f"cannot create the cache directory {d}; set NOTESD_DOCKER_CACHE")
    return d


def docker_cli():
    """Debian's docker client first: it matches the 20.10 daemon, and its
    DOCKER_BUILDKIT=1 uses the daemon's own BuildKit (newer clients want buildx)."""
    for p in ("/usr/bin/docker", shutil.which("docker")):
        if p and os.access(p, os.X_OK):
            return p
    return None


class Engine:
    """A Docker daemon to talk to: one already answering (DOCKER_HOST, or the
    default socket), or one this object starts and later stops by PID."""

    def __init__(self):
        self.cli = docker_cli()
        if not self.cli:
            skip("no docker client (Debian package docker.io)")
        self.cache = cache_dir()
        self.proc = None
        self.env = dict(os.environ)
        self._lock = None

    # ------------------------------------------------------------ lifetime

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        # SIGTERM (CTest's timeout, a Ctrl-C'd parent) unwinds like a failure, so
        # the daemon this object starts is stopped on the way out.
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, _exit_on_signal)
        # One test at a time per cache: the daemon's data-root is not shareable.
        self._lock = open(os.path.join(self.cache, "lock"), "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        if os.environ.get("DOCKER_HOST") or os.path.exists("/var/run/docker.sock"):
            if self._answers():
                print(f"engine: using the running daemon ({self.env.get('DOCKER_HOST') or '/var/run/docker.sock'})")
                return
        dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
        if not os.access(dockerd, os.X_OK):
            skip("no dockerd (Debian package docker.io)")
        if os.geteuid() != 0:
            skip("dockerd needs root here (no rootless setup), and no daemon is running")
        run = "/run/notesd-test"
        os.makedirs(run, exist_ok=True)
        sock = os.path.join(run, "docker.sock")
        pidfile = os.path.join(run, "docker.pid")
        self._stop_stale(pidfile)
        config = os.path.join(run, "daemon.json")
        with open(config, "w") as f:
            json.dump(DAEMON_CONFIG, f)
        self.log_path = os.path.join(self.cache, "dockerd.log")
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [dockerd, "--config-file", config, "--data-root", os.path.join(self.cache, "docker"),
             "--exec-root", os.path.join(run, "exec"), "--pidfile", pidfile, "-H", f"unix://{sock}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.env["DOCKER_HOST"] = f"unix://{sock}"
        deadline = time.monotonic() + 60
        while not self._answers():
            if self.proc.poll() is not None:
                reason = self._log_tail()
                self.proc = None
                skip(f"dockerd could not start: {reason}")
            if time.monotonic() > deadline:
                self.stop()
                skip("dockerd did not answer within 60 s")
            time.sleep(0.2)
        print(f"engine: started dockerd pid {self.proc.pid} on {sock} (data in {self.cache}/docker)")

    def stop(self):
        if self.proc is not None:
            self.tidy()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            print(f"engine: stopped dockerd pid {self.proc.pid} (exit {self.proc.returncode})")
            self.proc = None
        if self._lock:
            self._lock.close()
            self._lock = None

    def tidy(self):
        """Keeps the cache from growing run after run: images a rebuild left
        untagged, and build cache beyond 3 GB. Only on a daemon of our own."""
        self.run("image", "prune", "--force", check=False)
        self.run("builder", "prune", "--force", "--keep-storage", "3gb", check=False)

    def _stop_stale(self, pidfile):
        """A daemon a killed test left behind holds the data-root; end it by its PID."""
        try:
            pid = int(open(pidfile).read().strip())
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except (OSError, ValueError):
            return
        if not cmd or not cmd[0].endswith(b"dockerd") or self.cache.encode() not in b" ".join(cmd):
            return
        print(f"engine: stopping dockerd pid {pid} left by an earlier run")
        os.kill(pid, signal.SIGTERM)
        for _ in range(150):
            if not os.path.exists(f"/proc/{pid}"):
                return
            time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)

    def _answers(self):
        r = subprocess.run([self.cli, "info", "--format", "{{.ServerVersion}}"], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return r.returncode == 0 and r.stdout.strip() != ""

    def _log_tail(self):
        try:
            lines = [l for l in open(self.log_path).read().splitlines() if "level=error" in l or "failed" in l]
        except OSError:
            return "no log"
        return lines[-1][:300] if lines else "see " + self.log_path

    # ------------------------------------------------------------ commands

    def run(self, *args, check=True, capture=True, timeout=600, env=None):
        """docker ARGS; returns CompletedProcess (text)."""
        r = subprocess.run([self.cli, *args], env={**self.env, **(env or {})}, text=True,
                           stdout=subprocess.PIPE if capture else None,
                           stderr=subprocess.STDOUT if capture else None, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)} exited {r.returncode}: {(r.stdout or '')[-2000:]}")
        return r

    def has_image(self, ref):
        return self.run("image", "inspect", ref, check=False).returncode == 0

    def image_size(self, ref):
        return int(self.run("image", "inspect", "--format", "{{.Size}}", ref).stdout.strip())

    def inspect(self, container, fmt):
        return self.run("inspect", "--format", fmt, container).stdout.strip()

    def build(self, tag, dockerfile, context, target=None, build_args=None, log_name=None,
              labels=None):
        """BuildKit build with host networking (apt-get and npm in RUN steps);
        returns seconds taken. The log goes to the cache directory."""
        args = ["build", "--network", "host", "--progress", "plain", "-f", dockerfile, "-t", tag]
        if target:
            args += ["--target", target]
        for k, v in (build_args or {}).items():
            args += ["--build-arg", f"{k}={v}"]
        for k, v in (labels or {}).items():
            args += ["--label", f"{k}={v}"]
        t0 = time.monotonic()
        r = self.run(*args, context, check=False, env={"DOCKER_BUILDKIT": "1"}, timeout=1200)
        took = time.monotonic() - t0
        log = os.path.join(self.cache, f"build-{log_name or tag.replace('/', '_').replace(':', '_')}.log")
        with open(log, "w") as f:
            f.write(r.stdout)
        if r.returncode != 0:
            raise AssertionError(f"building {tag} failed (log: {log}): {r.stdout[-1500:]}")
        return took

    # ------------------------------------------------------------ base image

    def ensure_debian_base(self, ref=DEBIAN_BASE):
        """Makes `ref` available. The pinned image is pulled only with
        NOTESD_DOCKER_PULL=1 (no registry is reachable on the test machines);
        otherwise a stand-in is built with mmdebstrap from Debian's archive,
        with the official slim image's exclusions, and imported under that name.
        The tarball is cached, so a later run only imports it."""
        if self.has_image(ref):
            return "present"
        if os.environ.get("NOTESD_DOCKER_PULL") == "1":
            if self.run("pull", ref, check=False, timeout=300).returncode == 0:
                return "pulled"
        tarball = os.path.join(self.cache, "bookworm-slim-standin.tar")
        if not os.path.exists(tarball):
            if not shutil.which("mmdebstrap"):
                skip(f"{ref} is not present and mmdebstrap (Debian package) is missing to build a stand-in")
            part = tarball + ".part"
            cmd = ["mmdebstrap", "--variant=minbase", "--format=tar", "--quiet"]
            cmd += [f"--dpkgopt={o}" for o in SLIM_DPKG_OPTIONS]
            cmd += [f"--aptopt={o}" for o in SLIM_APT_OPTIONS]
            cmd += ["bookworm", part, *DEBIAN_SOURCES]
            t0 = time.monotonic()
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                raise AssertionError(f"mmdebstrap failed: {r.stdout[-1500:]}")
            os.rename(part, tarball)
            print(f"engine: mmdebstrap built {tarball} in {time.monotonic() - t0:.0f} s")
        self.run("import", "--change", 'CMD ["bash"]', "--change", f"LABEL {STANDIN_LABEL}=mmdebstrap",
                 "--message", "stand-in for " + ref + ", built by mmdebstrap", tarball, ref)
        return "stand-in"

    def ensure_runtime_base(self, ref, runtime):
        """Makes the peer base `ref` (node, bun or deno image) available. A
        pulled original is used as it is; otherwise a stand-in is built from
        docker/tests/Dockerfile.runtimes (target `runtime`) on the Debian base
        and tagged `ref`, labelled with a digest of what it is built from
        (standin_digest); a stand-in with the same digest is kept, and an edit
        of any of it builds a new one."""
        if self.has_image(ref) and not self.is_standin(ref):
            return "present"
        if os.environ.get("NOTESD_DOCKER_PULL") == "1":
            if self.run("pull", ref, check=False, timeout=300).returncode == 0:
                return "pulled"
        context = self.runtimes_context()
        digest = self.standin_digest(context)
        fmt = '{{index .Config.Labels "' + STANDIN_DIGEST_LABEL + '"}}'
        if self.run("image", "inspect", "--format", fmt, ref, check=False).stdout.strip() == digest:
            return "stand-in, unchanged"
        took = self.build(ref, RUNTIMES_DOCKERFILE, context, target=runtime,
                          build_args={"DEBIAN_BASE": DEBIAN_BASE}, log_name=f"standin-{runtime}",
                          labels={STANDIN_DIGEST_LABEL: digest})
        return f"stand-in, {took:.0f} s"

    def standin_digest(self, context):
        """sha256 of Dockerfile.runtimes, the Debian base's image ID and the context:
        its runtimes by the digest of the lockfile they were installed from
        (runtimes_context's stamp), and its CA bundle."""
        h = hashlib.sha256()
        for path in (RUNTIMES_DOCKERFILE, os.path.join(os.path.dirname(context), "stamp"),
                     os.path.join(context, "ca-certificates.crt")):
            with open(path, "rb") as f:
                h.update(f.read())
        h.update(self.run("image", "inspect", "--format", "{{.Id}}", DEBIAN_BASE).stdout.encode())
        return h.hexdigest()

    @staticmethod
    def _copy_ca_bundle(context):
        """The host's CA bundle for the node stand-in's npm (Dockerfile.runtimes
        says why); rewritten only when it changed, so the build cache holds."""
        with open(CA_BUNDLE, "rb") as f:
            data = f.read()
        dest = os.path.join(context, "ca-certificates.crt")
        if not os.path.exists(dest) or open(dest, "rb").read() != data:
            with open(dest, "wb") as f:
                f.write(data)

    def is_standin(self, ref):
        fmt = '{{index .Config.Labels "' + STANDIN_LABEL + '"}}'
        r = self.run("image", "inspect", "--format", fmt, ref, check=False)
        return r.returncode == 0 and r.stdout.strip() not in ("", "<no value>")

    def runtimes_context(self):
        """The build context of Dockerfile.runtimes: the three binaries and
        npm's package directory, hard links into `npm ci` of the harness's
        lockfile in the cache directory (never into the source tree). Installed
        again only when the lockfile or STANDIN_NPM changes; every binary must
        report the version package.json pins."""
        work = os.path.join(self.cache, "peer-runtimes")
        context = os.path.join(work, "context")
        files = [os.path.join(RUNTIMES_DIR, n) for n in ("package.json", "package-lock.json")]
        digest = hashlib.sha256(b"".join(open(f, "rb").read() for f in files) + STANDIN_NPM.encode()).hexdigest()
        stamp = os.path.join(work, "stamp")
        if os.path.isdir(context) and os.path.exists(stamp) and open(stamp).read() == digest:
            self._copy_ca_bundle(context)
            return context
        npm = shutil.which("npm")
        if not npm:
            raise AssertionError("npm is needed to install the peer runtimes from npm (Debian package npm)")
        shutil.rmtree(work, ignore_errors=True)
        install, npm_prefix = os.path.join(work, "install"), os.path.join(work, "npm")
        os.makedirs(install)
        os.makedirs(npm_prefix)
        for f in files:
            shutil.copy(f, install)
        t0 = time.monotonic()
        for cwd, args in ((install, ["ci"]), (npm_prefix, ["install", "--no-save", f"npm@{STANDIN_NPM}"])):
            r = subprocess.run([npm, *args, "--no-audit", "--no-fund"], cwd=cwd, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
            if r.returncode != 0:
                raise AssertionError(f"npm {' '.join(args)} in {cwd} failed: {r.stdout[-1500:]}")
        os.makedirs(context)
        pins = json.load(open(files[0]))["dependencies"]
        for runtime, rel in RUNTIME_BINARIES.items():
            dest = os.path.join(context, runtime)
            os.link(os.path.join(install, "node_modules", rel), dest)
            out = subprocess.run([dest, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True).stdout
            if pins[runtime] not in out.split("\n")[0]:
                raise AssertionError(f"{runtime} from npm reports {out.strip()!r}, package.json pins {pins[runtime]}")
        shutil.copytree(os.path.join(npm_prefix, "node_modules", "npm"), os.path.join(context, "npm"),
                        symlinks=True, copy_function=os.link)
        self._copy_ca_bundle(context)
        with open(stamp, "w") as f:
            f.write(digest)
        print(f"engine: npm installed node {pins['node']}, bun {pins['bun']}, deno {pins['deno']} "
              f"and npm {STANDIN_NPM} in {time.monotonic() - t0:.0f} s ({work})", flush=True)
        return context


@contextlib.contextmanager
def container(engine, name, args, image, cmd=()):
    """docker run -d --network host ... ; removed (with -f) on the way out."""
    engine.run("rm", "-f", name, check=False)
    engine.run("run", "-d", "--name", name, "--network", "host", *args, image, *cmd)
    try:
        yield name
    finally:
        engine.run("rm", "-f", name, check=False)


def poll(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)
