#!/usr/bin/python3
"""Static checks of docker/ (no Docker engine needed).

    /usr/bin/python3 docker/check.py

Needs Debian's python3 with python3-yaml, and promtool (Debian package
`prometheus`). Uses docker-compose (Debian package `docker-compose`, v1) to
validate the compose files when it is installed, and skips that step otherwise.

What it checks:
  promtool     every Prometheus config passes `promtool check config`; scrape
               timeouts are not above their intervals; the live configs scrape
               every second
  grafana      the data source is the one the dashboards name (uid, URL,
               timeInterval = scrape interval); the provider's path is where
               compose mounts the dashboard files
  dashboards   every dashboard parses, is what make_dashboards.py generates, and
               every panel, query and variable uses the provisioned data source;
               every expression is valid PromQL (`promtool check rules`)
  metrics      every metric name in a dashboard expression is exported by notesd
               (docs/metrics.md's table; histograms with _bucket/_sum/_count),
               by the Express peer only (PEER_METRICS, found in server.js), by
               postgres_exporter (the list below) or by k6's remote-write output
               (K6_METRICS, with the trend stats compose.yaml and the TestRun
               configure); k6 queries select the `testid` variable
  offline      compose.offline.yaml: host networking everywhere, stand-ins built
               from docker/offline/Dockerfile targets, ports below the ephemeral
               range; its Prometheus template renders to a valid config
  compose      the compose files parse; every image has a pinned tag; the server
               waits for a healthy database; the database's health check goes
               over TCP; `docker-compose config -q` accepts them
  dockerfiles  the notesd build stage runs server/build.sh; the runtime stage is
               non-root (UID 10001), exposes 8080 and 9091, has a health check;
               the peer image follows the one-node_modules pattern, and its
               bases have the runtime versions loadtests/peers/runtimes pins
  defaults     ports and paths in compose, Dockerfiles and Prometheus agree with
               notesd's defaults in docs/configuration.md; every mounted or copied
               path exists
  libraries    (when a built notesd is at hand) the runtime packages provide every
               shared library the binary links against

Each concern is a module of docker/checks/ (checks/__init__.py says how a check
joins the registry this script runs, in the order above). A check that cannot run
on this machine prints `skip` and counts neither way. The last line is
`N passed, M failed`; the exit status is 1 when anything failed.
"""

import sys

# Importing the checks (and make_dashboards, which one of them runs) must not leave
# __pycache__ behind in the source tree.
sys.dont_write_bytecode = True

try:
    import yaml  # noqa: F401  (every module of checks/ reads YAML)
except ImportError:  # pragma: no cover - environment problem, reported plainly
    print("FAIL setup: the yaml module is missing; install Debian's python3-yaml "
          "(apt-get install python3-yaml) and run with /usr/bin/python3")
    print("0 passed, 1 failed")
    sys.exit(1)

import checks  # noqa: E402


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, fn):
        try:
            problems = fn() or []
        except checks.Skip as s:
            print(f"skip {name}: {s}")
            return
        except Exception as e:  # a check that crashes is a failed check
            problems = [f"{type(e).__name__}: {e}"]
        if problems:
            self.failed += 1
            for p in problems:
                print(f"FAIL {name}: {p}")
        else:
            self.passed += 1
            print(f"ok   {name}")


def main():
    report = Report()
    try:
        registry = checks.load()
    except LookupError as e:  # a module whose checks would never run
        print(f"FAIL the checks' registry: {e}")
        print("0 passed, 1 failed")
        return 1
    for title, fn in registry:
        report.run(title, fn)
    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
