"""Where load may go: only this machine. Loopback checks for hosts and URLs, and
the hosts and port a libpq connection string names (so a run refuses to drop
and reseed a database on another machine).

Names count as loopback only when they are the fixed loopback names; nothing
here resolves a name, so nothing here can be fooled by DNS or block on it.
"""
import ipaddress
import re
import urllib.parse

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


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


def is_loopback_host(host):
    """is_loopback for a database host, where no host (or a directory) means a unix socket."""
    if host is None or host == "" or host.startswith("/"):
        return True
    return is_loopback(host)


def require_loopback_url(url, what="URL"):
    """The URL's host when it is http(s) on loopback; raises NotLoopback otherwise."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise NotLoopback(f"{what} must be http://host:port (got {url!r})")
    if not is_loopback(u.hostname):
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


def remote_db_hosts(url):
    """The hosts of a connection string that are not on this machine."""
    return [h for h in db_hosts(url) if not is_loopback_host(h)]
