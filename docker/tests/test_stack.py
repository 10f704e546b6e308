#!/usr/bin/python3
"""The Compose stack up end to end, offline.

    /usr/bin/python3 docker/tests/test_stack.py

Builds notesd:local and the Debian stand-ins of docker/offline/Dockerfile,
brings up docker/compose.yaml + docker/compose.offline.yaml (db, postgres_exporter,
notesd, prometheus; all host networking on 127.0.0.1) with Debian's
docker-compose 1.29 (merged by docker/offline/render.py, which drops the port
bindings that host networking refuses), and checks:

  - the database seeds itself and turns healthy, then notesd does (its image's
    HEALTHCHECK), and the API answers from the seeded rows;
  - no container network was created (host networking only);
  - through Prometheus's HTTP API: up{job="notesd"} and up{job="postgres"} are 1,
    notesd's lag histogram _count grows between two queries, the exporter sees
    the database (pg_up) and its pg_stat_statements metrics count the statements
    notesd sent;
  - every query of the two Grafana dashboards runs on that Prometheus, and those
    on notesd's and the exporter's metrics return series (Grafana itself is not
    in Debian and does not run here);

then takes everything down with its volumes. Ports come from 20000-29999,
below the ephemeral range where the other tests get theirs.

Exit status: 0 passed, 1 failed, 77 (CTest's skip) when no engine can run.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import yaml

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import engine as eng  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "docker", "offline"))
import render  # noqa: E402

PROJECT = "notesd-offline-test"
SERVICES = ["db", "postgres_exporter", "notesd", "prometheus"]
STANDINS = [("notesd-offline/postgres:15", "postgres"),
            ("notesd-offline/prometheus:2.42", "prometheus"),
            ("notesd-offline/postgres-exporter:0.11", "postgres-exporter")]


def free_ports(n, lo=20000, hi=29999):
    """n loopback ports in lo..hi that nothing is bound to now, searched from the top."""
    out = []
    for port in range(hi, lo - 1, -1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        out.append(port)
        if len(out) == n:
            return out
    raise AssertionError(f"no {n} free ports in {lo}..{hi}")


def http_get(port, path, timeout=5):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


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


class Stack:
    def __init__(self, engine, ports):
        self.engine = engine
        exe = shutil.which("docker-compose")
        if not exe:
            eng.skip("docker-compose not installed (Debian package docker-compose)")
        self.env = dict(engine.env, **{k: str(v) for k, v in ports.items()})
        # compose.yaml + compose.offline.yaml, merged by docker-compose itself,
        # without the port bindings that host networking refuses (see render.py).
        # notesd keeps its image's HEALTHCHECK command, checked every second rather
        # than at the image's 10 s interval, which the test would otherwise wait out.
        merged = yaml.safe_load(render.render(env=self.env))
        if "healthcheck" in merged["services"]["notesd"]:
            raise AssertionError("compose.yaml now sets notesd's healthcheck: pace that one instead")
        merged["services"]["notesd"]["healthcheck"] = {"interval": "1s"}
        self.file = os.path.join(engine.cache, "compose.offline.rendered.yaml")
        with open(self.file, "w") as f:
            yaml.safe_dump(merged, f, sort_keys=False)
        self.base = [exe, "-p", PROJECT, "-f", self.file]
        self._ids = {}

    def compose(self, *args, check=True, timeout=600):
        r = subprocess.run(self.base + list(args), env=self.env, cwd=REPO, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"docker-compose {' '.join(args)} exited {r.returncode}: {r.stdout[-2000:]}")
        return r

    def container(self, service):
        """The service's container ID, asked of docker-compose once (each call of it
        is a second or two of Python start-up)."""
        if service not in self._ids:
            cid = self.compose("ps", "-q", service).stdout.strip()
            if not cid:
                return ""
            self._ids[service] = cid
        return self._ids[service]

    def health(self, service):
        cid = self.container(service)
        return self.engine.inspect(cid, "{{.State.Health.Status}}") if cid else "missing"


def listeners():
    """(address, port) of every listening TCP socket on the host, from /proc."""
    out = []
    for path, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        with open(path) as f:
            for line in f.read().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state != "0A":  # LISTEN
                    continue
                hexaddr, hexport = local.split(":")
                raw = bytes.fromhex(hexaddr)
                if size == 4:
                    addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
                else:  # four little-endian 32-bit words
                    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    addr = socket.inet_ntop(socket.AF_INET6, raw)
                out.append((addr, int(hexport, 16)))
    return out


def prom_query(port, expr):
    status, body = http_get(port, "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    if status != 200:
        raise AssertionError(f"Prometheus answered {status} to {expr}: {body[:300]!r}")
    return json.loads(body)["data"]["result"]


def prom_value(port, expr):
    """The single value of an instant query, or None when it has no result (or
    Prometheus does not answer yet)."""
    try:
        result = prom_query(port, expr)
    except OSError:
        return None
    return float(result[0]["value"][1]) if len(result) == 1 else None


def main():
    t_start = time.monotonic()
    c = Checks()
    with eng.Engine() as engine:
        print(f"base: {eng.DEBIAN_BASE} ({engine.ensure_debian_base()})")
        took = engine.build("notesd:local", os.path.join(REPO, "docker", "Dockerfile"), REPO)
        print(f"build: notesd:local in {took:.0f} s")
        for tag, target in STANDINS:
            took = engine.build(tag, os.path.join(REPO, "docker", "offline", "Dockerfile"), REPO, target=target)
            print(f"build: {tag} (stand-in, target {target}) in {took:.0f} s, "
                  f"{engine.image_size(tag) / 1048576:.0f} MiB")

        names = ["OFFLINE_DB_PORT", "OFFLINE_APP_PORT", "OFFLINE_METRICS_PORT", "OFFLINE_EXPORTER_PORT",
                 "OFFLINE_PROMETHEUS_PORT"]
        ports = dict(zip(names, free_ports(len(names))))
        print("ports: " + ", ".join(f"{k}={v}" for k, v in ports.items()))
        stack = Stack(engine, ports)
        stack.compose("down", "--volumes", "--remove-orphans", check=False)  # a run killed earlier
        try:
            t0 = time.monotonic()
            stack.compose("up", "-d", "--no-build", *SERVICES)
            print(f"up: {time.monotonic() - t0:.0f} s (compose waits for the database's health)")
            run_checks(c, engine, stack, ports)
        except AssertionError as e:
            c.check("stack", False, str(e))
            print(stack.compose("logs", "--no-color", "--tail", "30", check=False).stdout)
        finally:
            r = stack.compose("down", "--volumes", "--remove-orphans", check=False)
            left = engine.run("ps", "-aq", "--filter", f"label=com.docker.compose.project={PROJECT}").stdout.split()
            c.check("docker-compose down removes every container", r.returncode == 0 and not left,
                    r.stdout[-500:] + f" left: {left}")
    print(f"took {time.monotonic() - t_start:.0f} s")
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


def run_checks(c, engine, stack, ports):
    app, prom = ports["OFFLINE_APP_PORT"], ports["OFFLINE_PROMETHEUS_PORT"]
    c.check("db is healthy (pg_isready over TCP after seeding)", stack.health("db") == "healthy", stack.health("db"))
    t0 = time.monotonic()
    eng.poll(lambda: stack.health("notesd") == "healthy", 60, "notesd's HEALTHCHECK")
    c.check(f"notesd is healthy ({time.monotonic() - t0:.0f} s after up)", True)

    socks = [(addr, port) for addr, port in listeners() if port in ports.values()]
    wild = [f"{addr}:{port}" for addr, port in socks if addr != "127.0.0.1"]
    missing = set(ports.values()) - {port for _, port in socks}
    c.check(f"every service listens, on 127.0.0.1 only ({len(socks)} sockets)", not wild and not missing,
            f"not loopback: {wild}, not listening: {sorted(missing)}")

    networks = engine.run("network", "ls", "--format", "{{.Name}}").stdout.split()
    c.check("no container network was created (host networking only)",
            not [n for n in networks if n.startswith(PROJECT.replace("-", ""))] and
            not [n for n in networks if PROJECT in n], networks)

    status, body = http_get(app, "/notes?tag=js")
    rows = json.loads(body) if status == 200 else []
    c.check("GET /notes?tag=js answers 20 seeded rows", status == 200 and len(rows) == 20 and
            rows[0]["tag"] == "js", f"{status} {body[:200]!r}")
    for i in range(1, 51):
        assert http_get(app, f"/notes/{i}")[0] == 200

    eng.poll(lambda: prom_value(prom, 'up{job="notesd"}') == 1, 30, 'up{job="notesd"} == 1')
    c.check('Prometheus: up{job="notesd"} == 1', True)
    eng.poll(lambda: prom_value(prom, 'up{job="postgres"}') == 1, 30, 'up{job="postgres"} == 1')
    c.check('Prometheus: up{job="postgres"} == 1', True)
    c.check('Prometheus: up{job="prometheus"} == 1', eng.poll(
        lambda: prom_value(prom, 'up{job="prometheus"}') == 1, 30, "self-scrape"))

    lag = 'notes_eventloop_delay_seconds_count{job="notesd"}'
    first = eng.poll(lambda: prom_value(prom, lag), 30, lag)
    # A later scrape (they come every second) carries more probe ticks.
    try:
        second = eng.poll(lambda: (prom_value(prom, lag) or 0) > first and prom_value(prom, lag), 30,
                          f"{lag} to grow past {first:.0f}")
    except AssertionError:
        second = prom_value(prom, lag)
    c.check(f"the lag histogram's _count grows between two queries ({first:.0f} -> {second})",
            second is not None and second > first, f"{first} -> {second}")

    c.check("Prometheus: pg_up == 1 (the exporter reaches PostgreSQL)",
            eng.poll(lambda: prom_value(prom, 'pg_up{job="postgres"}') == 1, 30, "pg_up"))
    # get_note ran 50 times through the pool: pg_stat_statements counts them, the
    # exporter exports the count, and Prometheus scraped it.
    calls = ('max(pg_stat_statements_calls_total{job="postgres", datname="notes", user="postgres"})')
    top = eng.poll(lambda: (prom_value(prom, calls) or 0) >= 50 and prom_value(prom, calls), 30,
                   "pg_stat_statements_calls_total to count notesd's 50 reads")
    c.check(f"pg_stat_statements collector: the busiest statement has {top:.0f} calls (>= 50)", True)
    for name in ("pg_stat_statements_seconds_total", "pg_stat_statements_rows_total"):
        n = len(prom_query(prom, f'{name}{{job="postgres"}}'))
        c.check(f"Prometheus has {name} ({n} series)", n > 0, n)
    info = prom_query(prom, 'notes_build_info{job="notesd"}')
    c.check("notes_build_info scraped under job notesd", len(info) == 1, info)
    check_dashboards(c, prom)


# Panels whose queries may rightly be empty here: no error responses were sent.
MAY_BE_EMPTY = {"Responses other than 2xx per second"}


def check_dashboards(c, prom):
    """Every query of the two dashboards, with Grafana's variables filled in as
    Grafana would (job notesd, database notes), runs on the live Prometheus;
    those about notesd and postgres_exporter return series. Queries of other
    sources (k6, the peer's own names) need only be accepted."""
    sys.path.insert(0, os.path.join(REPO, "docker"))
    from checks import files, metrics  # the dashboards' query list and the name extractor
    ours = metrics.allowed_metric_names() - metrics.k6_metric_names() - metrics.PEER_METRICS
    defs = os.path.join(REPO, "docker", "grafana", "provisioning", "dashboards", "definitions")
    for fname in ("notesd-app.json", "postgres.json"):
        with open(os.path.join(defs, fname)) as f:
            dash = json.load(f)
        ran, empty, bad = 0, {}, []
        for where, expr in files.dashboard_queries(dash):
            if where.startswith("variable"):
                continue
            q = (expr.replace("$__rate_interval", "10s").replace('"$job"', '"notesd"')
                 .replace('"$datname"', '"notes"').replace('"$testid"', '".*"'))
            try:
                result = prom_query(prom, q)
            except AssertionError as e:
                bad.append(f"{where}: {e}")
                continue
            ran += 1
            names = metrics.metric_names(expr)
            title = where.split("'")[1] if "'" in where else where
            if names <= ours and not result and title not in MAY_BE_EMPTY:
                empty[where] = q
        c.check(f"{fname}: {ran} queries accepted by Prometheus", not bad, bad)
        # A rate over the reads sent above needs two scrapes since they were
        # served: a query still empty is asked again until it has data.
        def all_have_data():
            for w, q in list(empty.items()):
                if prom_query(prom, q):
                    del empty[w]
            return not empty
        try:
            eng.poll(all_have_data, 30, "every query on notesd's and the exporter's metrics to return data")
        except AssertionError:
            pass  # the check below names the queries still empty
        c.check(f"{fname}: every query on notesd's and the exporter's metrics returns data", not empty,
                sorted(empty))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAIL {e}")
        sys.exit(1)
