"""Where load may go: only this machine. Loopback checks for hosts and URLs, and
the hosts and port a libpq connection string names (so a run refuses to drop
and reseed a database on another machine).

Names count as loopback only when they are the fixed loopback names; nothing
here resolves a name, so nothing here can be fooled by DNS or block on it.

One exception, for loadtests/bench --netns: an address of 198.18.0.0/15 (RFC 2544's
benchmark range) that is configured, right now, on an interface inside one of the
benchmark's own network namespaces (NETNS_NAMES), for a connection made from inside
one of those namespaces (`from_ns`). They exist only on this machine and only while
the benchmark runs; the host's own interfaces never count, whatever address they
carry, and from the host's namespace such an address is refused, because there it
would follow the default route off the machine.
"""
import ipaddress
import json
import os
import re
import subprocess
import urllib.parse

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")
# the three-host layout of loadtests/bench --netns: load generator, server, PostgreSQL
NETNS_NAMES = ("nb-load", "nb-srv", "nb-db")
BENCH_NET = ipaddress.ip_network("198.18.0.0/15")


class NotLoopback(ValueError):
    """An address that is not this machine's loopback."""


def is_loopback(host):
    """True for 127.0.0.0/8, ::1 and the loopback names; False for anything else,
    including the empty host."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def netns_addresses():
    """The 198.18.0.0/15 addresses configured now on interfaces inside the benchmark's
    namespaces that exist now (`ip -n NAME -j addr show`; no name is resolved)."""
    found = set()
    for name in NETNS_NAMES:
        if not os.path.exists(f"/run/netns/{name}"):
            continue
        try:
            out = subprocess.run(["ip", "-n", name, "-j", "addr", "show"], capture_output=True,
                                 text=True, timeout=10).stdout
            links = json.loads(out or "[]")
        except (OSError, subprocess.TimeoutExpired, ValueError):
            continue
        for link in links:
            for a in link.get("addr_info", []):
                try:
                    ip = ipaddress.ip_address(a.get("local", ""))
                except ValueError:
                    continue
                if ip in BENCH_NET:
                    found.add(str(ip))
    return found


def is_own_netns_address(host, from_ns=None, addresses=None):
    """True when host is an IPv4 address of 198.18.0.0/15 held now by one of the
    benchmark's own namespaces and the connection leaves from one of them (`from_ns`,
    which must exist). `addresses`: the set to check against (for tests); by default
    netns_addresses(), read at the moment of the check."""
    if not host or from_ns not in NETNS_NAMES:
        return False
    if addresses is None and not os.path.exists(f"/run/netns/{from_ns}"):
        return False
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    if ip not in BENCH_NET:
        return False
    return str(ip) in (netns_addresses() if addresses is None else addresses)


def is_local(host, from_ns=None, addresses=None):
    """is_loopback, or an address of the benchmark's own namespaces while they exist,
    reached from inside one of them."""
    return is_loopback(host) or is_own_netns_address(host, from_ns, addresses)


def is_loopback_host(host):
    """is_loopback for a database host, where no host (or a directory) means a unix socket."""
    if host is None or host == "" or host.startswith("/"):
        return True
    return is_loopback(host)


def require_loopback_url(url, what="URL", from_ns=None, addresses=None):
    """The URL's host when it is http(s) on loopback, or on one of the benchmark's own
    namespaces' addresses reached from inside one of them (is_local); raises
    NotLoopback otherwise."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise NotLoopback(f"{what} must be http://host:port (got {url!r})")
    if not is_local(u.hostname, from_ns, addresses):
        raise NotLoopback(f"{what} {u.hostname} is not a loopback address")
    return u.hostname


def db_hosts(url):
    """Every host a libpq URI or key=value string names ([] means the default: a unix socket)."""
    if re.match(r"^postgres(ql)?://", url):
        u = urllib.parse.urlsplit(url)
        netloc = u.netloc.rsplit("@", 1)[-1]
        hosts = []
        for part in netloc.split(","):
            part = part.strip()
            if part.startswith("["):
                hosts.append(part[1:part.index("]")] if "]" in part else part)
            else:
                hosts.append(part.rsplit(":", 1)[0] if part.count(":") == 1 else part)
        q = urllib.parse.parse_qs(u.query)
        hosts += [h for v in q.get("host", []) + q.get("hostaddr", []) for h in v.split(",")]
        return [urllib.parse.unquote(h) for h in hosts if h]
    hosts = []
    for m in re.finditer(r"\b(host|hostaddr)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", url):
        hosts += m.group(2).strip("'").split(",")
    return [h for h in hosts if h]


def db_port(url):
    """The TCP port a libpq URI or key=value string names (5432 by default)."""
    if re.match(r"^postgres(ql)?://", url):
        netloc = urllib.parse.urlsplit(url).netloc.rsplit("@", 1)[-1]
        m = re.search(r":(\d+)$", netloc.split(",")[0])
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        if "port" in q:
            return int(q["port"][0])
        return int(m.group(1)) if m else 5432
    m = re.search(r"\bport\s*=\s*'?(\d+)", url)
    return int(m.group(1)) if m else 5432


def remote_db_hosts(url, from_ns=None, addresses=None):
    """The hosts of a connection string that are not on this machine (loopback, a unix
    socket, or, for a client inside one of the benchmark's namespaces, an address of
    those namespaces while they exist)."""
    return [h for h in db_hosts(url)
            if not is_loopback_host(h) and not is_own_netns_address(h, from_ns, addresses)]
