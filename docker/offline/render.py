#!/usr/bin/python3
"""Prints docker/compose.yaml + docker/compose.offline.yaml as one Compose file
that Debian's docker-compose 1.29 can start.

    docker/offline/render.py > /tmp/notesd-offline.yaml
    docker-compose -p notesd-offline -f /tmp/notesd-offline.yaml up -d db postgres_exporter notesd prometheus

Why it exists: every service of the offline overlay runs with host networking,
and Docker refuses port bindings on the host network ("host" network_mode is
incompatible with port_bindings). compose.yaml publishes ports for its bridge
network, and an overlay cannot remove list entries in Compose v1 (Compose v2's
`!reset` tag is unknown to v1's YAML loader). So this runs `docker-compose
config` on the two files, with the caller's environment (the OFFLINE_*_PORT
variables), and drops `ports:` from the services on the host network;
everything else is exactly what Compose merged.
"""
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DOCKER = os.path.dirname(HERE)


def render(env=None, profiles=()):
    cmd = ["docker-compose", "-f", os.path.join(DOCKER, "compose.yaml"),
           "-f", os.path.join(DOCKER, "compose.offline.yaml")]
    for p in profiles:
        cmd += ["--profile", p]
    r = subprocess.run(cmd + ["config"], env=env, capture_output=True, text=True, cwd=DOCKER)
    if r.returncode != 0:
        raise SystemExit(f"render.py: docker-compose config failed: {r.stderr.strip()}")
    merged = yaml.safe_load(r.stdout)
    for svc in merged["services"].values():
        if svc.get("network_mode") == "host":
            svc.pop("ports", None)
    return yaml.safe_dump(merged, sort_keys=False)


if __name__ == "__main__":
    sys.stdout.write(render(profiles=sys.argv[1:]))
