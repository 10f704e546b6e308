#!/usr/bin/python3
"""The notesd image and the three peer images built and run for real.

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

Then the Express peer on Node, Bun and Deno: each pinned base (compose.yaml's
BASE arguments) is used if present or pulled, else a stand-in is built for it
(the Debian base plus that runtime from npm at the version the harness pins,
docker/tests/Dockerfile.runtimes), and the three images are built from
docker/Dockerfile.peers unchanged and run side by side, each checked as above
where the peer and notesd promise the same: the notes routes answer with the
binary's status, content type and bytes (reads, errors, POST and PUT),
/json has the note's shape, the HEALTHCHECK turns healthy, PID 1 is the
runtime with UID 10001, --read-only works, `docker stop` exits 0.

Exit status: 0 passed, 1 failed, 77 (CTest's skip) when no engine can run.
"""
import contextlib
import json
import os
import re
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
# The image's HEALTHCHECK command runs as the image defines it; only its pace is
# the test's: every second, where the image's 10 s interval would have the test
# wait 10 s for the first check of each container.
HEALTH_PACE = ["--health-interval", "1s"]
# The peer images as compose.yaml builds them: service name = RUNTIME, and its
# BASE. The process each runs as PID 1 is named after the runtime.
PEER_DOCKERFILE = os.path.join(REPO, "docker", "Dockerfile.peers")
PEER_RUNTIMES = ("node", "bun", "deno")

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
    ("NOTESD-PROBE", "/notes/1", None),  # 405; no route may ever name this method
]
# The notes routes, where the Express peer and notesd give the same bytes
# (docs/api.md, "Same bytes as the reference"): rows, lists, a missing row.
PEER_SAME_BYTES = [
    ("GET", "/notes/1", None),
    ("GET", "/notes/123456", None),
    ("GET", "/notes/999999999", None),
    ("GET", "/notes?tag=js", None),
    ("GET", "/notes?tag=deno", None),
    ("GET", "/notes?tag=unknown", None),
    ("PUT", "/notes/999999999", b'{"title":"t","body":"b","tag":"x"}'),
]
# Bad bodies: both answer 400, with different bodies by design (notesd a JSON
# error, the peer Express's text "Bad Request"; loadtests/verification/README.md).
# None of them changes a row: the peers run side by side on one database.
PEER_SAME_STATUS = [
    ("POST", "/notes", b'{"title": 1}'),
    ("POST", "/notes", b'{"title": "t", "body": "b"}'),
    ("PUT", "/notes/1", b'{"title": "t"}'),
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
        t_peers = time.monotonic()
        peers = build_peer_images(c, engine)
        peer_seconds = time.monotonic() - t_peers
        print(f"peers: bases and images ready in {peer_seconds:.0f} s", flush=True)

        db_url = tl.create_database("docker_image")
        binary = tl.Notesd(db_url, env={"STATIC_DIR": os.path.join(REPO, "loadtests", "static"),
                                        "SERVER_TIMING": "0"})
        port, mport = tl.free_port(), tl.free_port()
        env = {"DB_URL": db_url, "HOST": "127.0.0.1", "PORT": port, "METRICS_HOST": "127.0.0.1",
               "METRICS_PORT": mport, "SERVER_TIMING": "0", "LOG_LEVEL": "warn"}
        args = ["--read-only", "--tmpfs", "/tmp", *HEALTH_PACE]
        for k, v in env.items():
            args += ["-e", f"{k}={v}"]
        try:
            with eng.container(engine, CONTAINER, args, IMAGE):
                run_container_checks(c, engine, tl, binary, port, mport)
            if peers:
                t_peers = time.monotonic()
                run_peer_checks(c, engine, tl, binary, db_url, peers)
                peer_seconds += time.monotonic() - t_peers
                print(f"peers: {peer_seconds:.0f} s in all (builds and checks)", flush=True)
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


def peer_bases():
    """{runtime: BASE} from compose.yaml's node, bun and deno services, so the
    test builds what Compose builds."""
    import yaml
    services = yaml.safe_load(open(os.path.join(REPO, "docker", "compose.yaml")))["services"]
    return {rt: services[rt]["build"]["args"]["BASE"] for rt in PEER_RUNTIMES}


def build_peer_images(c, engine):
    """Each pinned base (or its stand-in), then the peer image on it; prints
    sizes. Returns [(runtime, image)] of the images built."""
    built = []
    for rt, base in peer_bases().items():
        image = f"notesd-peer:{rt}"
        try:
            how = engine.ensure_runtime_base(base, rt)
            print(f"base: {base} ({how})", flush=True)
            took = engine.build(image, PEER_DOCKERFILE, REPO, build_args={"BASE": base, "RUNTIME": rt})
        except AssertionError as e:
            c.check(f"{image} builds on {base}", False, str(e)[-1500:])
            continue
        base_size, size = engine.image_size(base), engine.image_size(image)
        print(f"build: {image} in {took:.0f} s; size: {base} {mib(base_size)}, {image} {mib(size)}; "
              f"the peer adds {mib(size - base_size)}", flush=True)
        c.check(f"{image}: the peer (node_modules, server.js, static files) adds less than 40 MiB",
                size - base_size < 40 << 20, mib(size - base_size))
        built.append((rt, image))
    return built


def run_peer_checks(c, engine, tl, binary, db_url, peers):
    """The peer containers start together (their health checks then run side
    by side) and are checked one after the other."""
    ports = {rt: (tl.free_port(), tl.free_port()) for rt, _ in peers}
    with contextlib.ExitStack() as stack:
        for rt, image in peers:
            port, mport = ports[rt]
            args = ["--read-only", "--tmpfs", "/tmp", *HEALTH_PACE, "-e", f"DB_URL={db_url}", "-e", "HOST=127.0.0.1",
                    "-e", f"PORT={port}", "-e", f"METRICS_PORT={mport}"]
            stack.enter_context(eng.container(engine, f"notesd-test-peer-{rt}", args, image))
        t_start = time.monotonic()
        for rt, image in peers:
            try:
                check_peer(c, engine, binary, rt, f"notesd-test-peer-{rt}", *ports[rt], t_start)
            except AssertionError as e:
                c.check(f"{rt}: the peer container runs", False, e)


def check_peer(c, engine, binary, rt, name, port, mport, t_start):
    def answers():
        state = engine.inspect(name, "{{.State.Status}}")
        if state != "running":
            raise AssertionError(f"container is {state}: {engine.run('logs', name, check=False).stdout[-1000:]}")
        try:
            return fetch(port, "GET", "/status", timeout=2)[0] == 200
        except OSError:
            return False
    eng.poll(answers, 60, f"the {rt} peer to answer /status")

    for method, path, body in PEER_SAME_BYTES:
        want = fetch(binary.port, method, path, body)
        got = fetch(port, method, path, body)
        c.check(f"{rt}: {method} {path}: same status, type and bytes as the binary", got == want,
                f"peer {got[:2]} {got[2][:200]!r}, binary {want[:2]} {want[2][:200]!r}")
    for method, path, body in PEER_SAME_STATUS:
        want, got = fetch(binary.port, method, path, body)[0], fetch(port, method, path, body)[0]
        c.check(f"{rt}: {method} {path} {body.decode()}: {got}, as the binary ({want})", got == want == 400)
    status, ctype, body = fetch(port, "GET", "/json")
    doc = json.loads(body) if status == 200 else {}
    c.check(f"{rt}: GET /json: a note-shaped object, as notesd's", status == 200 and list(doc) ==
            ["id", "title", "body", "tag", "created_at"] and ctype == fetch(binary.port, "GET", "/json")[1],
            f"{status} {ctype} {body[:200]!r}")
    created = fetch(port, "POST", "/notes", f'{{"title":"t","body":"b","tag":"{rt}"}}'.encode())
    row = json.loads(created[2]) if created[0] == 201 else {}
    c.check(f"{rt}: POST /notes: 201, and the binary reads the row with the same bytes",
            created[0] == 201 and fetch(binary.port, "GET", f"/notes/{row.get('id')}")[1:] == created[1:],
            f"{created[0]} {created[2][:200]!r}")
    if row:
        updated = fetch(port, "PUT", f"/notes/{row['id']}", f'{{"title":"u","body":"v","tag":"{rt}2"}}'.encode())
        doc = json.loads(updated[2]) if updated[0] == 200 else {}
        c.check(f"{rt}: PUT /notes/:id: 200, the row changed, and the binary reads it with the same bytes",
                updated[0] == 200 and (doc.get("title"), doc.get("tag")) == ("u", rt + "2")
                and fetch(binary.port, "GET", f"/notes/{row['id']}")[1:] == updated[1:],
                f"{updated[0]} {updated[2][:200]!r}")

    try:
        eng.poll(lambda: engine.inspect(name, "{{.State.Health.Status}}") == "healthy" or None,
                 60, f"the {rt} peer's HEALTHCHECK to report healthy")
        c.check(f"{rt}: HEALTHCHECK reports healthy ({time.monotonic() - t_start:.0f} s after start)", True)
    except AssertionError as e:
        c.check(f"{rt}: HEALTHCHECK reports healthy", False,
                f"{e}; {engine.inspect(name, '{{json .State.Health}}')[-500:]}")

    pid = engine.inspect(name, "{{.State.Pid}}")
    uids = [l.split()[1:] for l in open(f"/proc/{pid}/status") if l.startswith("Uid:")][0]
    c.check(f"{rt}: PID 1 runs as UID 10001 (real, effective, saved)", uids[:3] == ["10001"] * 3, uids)
    # argv[0], not comm: Node names its main thread "node-MainThread".
    argv0 = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0].decode()
    c.check(f"{rt}: PID 1 is {rt} (SIGTERM reaches server.js)", os.path.basename(argv0) == rt, argv0)
    w = engine.run("exec", name, "bash", "-c", "echo x > /app/x", check=False)
    c.check(f"{rt}: root filesystem is read-only", w.returncode != 0 and "Read-only file system" in w.stdout,
            w.stdout)
    metrics = fetch(mport, "GET", "/metrics")[2].decode()
    m = re.search(r'notes_build_info\{version="([^"]*)",runtime="([^"]*)"', metrics)
    pin = json.load(open(os.path.join(eng.RUNTIMES_DIR, "package.json")))["dependencies"][rt]
    c.check(f"{rt}: notes_build_info: runtime {m and m.group(2)} {m and m.group(1)}, the harness's pin",
            m is not None and (m.group(2), m.group(1)) == (rt, pin), f"want {rt} {pin}: {metrics[-300:]}")

    t0 = time.monotonic()
    engine.run("stop", "--time", "10", name)
    code = engine.inspect(name, "{{.State.ExitCode}}")
    stopped = time.monotonic() - t0
    c.check(f"{rt}: docker stop: exit 0 after {stopped:.2f} s", code == "0" and stopped < 10,
            f"exit {code} after {stopped:.2f} s; {engine.run('logs', '--tail', '5', name, check=False).stdout}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAIL {e}")
        sys.exit(1)
