"""Load generators that no adapter in loadlib/tools knows, for judge's tests: plain
Python, one thread driving C keep-alive HTTP/1.1 connections with select() (whose
timeout has microseconds, where threads waking on a shared interpreter lock would
bunch their sends), each keeping or breaking an open model's schedule in one known way.

    python3 generators.py MODE URL --rate R --duration S [--connections C]
                          [--drop SHARE] [--log FILE] [--seed N] [--plan]
    python3 generators.py closed URL --requests N [--connections C] [--log FILE]

  poisson   Poisson arrivals at R/s: exponential gaps, each request sent on whichever
            of the C connections is free (an honest open model)
  phased    C connections, each sending every C/R seconds from a random phase (honest:
            its arrivals are nearly as irregular as Poisson ones, CV about 0.9)
  lockstep  C connections, each sending every C/R seconds, all from the same phase
            (the rate on average; bursts of C at once)
  bursts    each second's R requests sent at once at the start of the second
  closed    C connections, each sending its next request when its answer is in, N in all

--drop SHARE leaves that share of the scheduled requests unsent and says nothing: its
claim counts them. --plan prints the requests it would claim (a --seed makes the same
schedule every time) and sends nothing. --log FILE writes judge's per-request CSV (start_us, request_id,
latency_us, status) with an X-Request-Id on every request. Prints one JSON line:
{"sent", "claimed" (what it would report), "errors", "late_ms" (the most any send
came after its time: the generator's own lateness, which the server would see)}.
Answers are read by their Content-Length (notesd's /json has one).
"""
import argparse
import json
import random
import select
import socket
import time
import urllib.parse


def schedule(mode, rate, duration, connections, rng, requests=0):
    """[(seconds from the start, connection or None for any free one)] in order."""
    due = []
    if mode == "poisson":
        t = rng.expovariate(rate)
        while t < duration:
            due.append((t, None))
            t += rng.expovariate(rate)
    elif mode in ("phased", "lockstep"):
        period = connections / rate
        for c in range(connections):
            t = rng.uniform(0, period) if mode == "phased" else 0.0
            while t < duration:
                due.append((t, c))
                t += period
    elif mode == "bursts":
        for second in range(int(duration)):
            due += [(float(second), i % connections) for i in range(int(rate))]
    elif mode == "closed":
        # every request due at once, each on its connection: sent as the one before it on
        # that connection is answered
        due = [(0.0, i % connections) for i in range(requests)]
    return sorted(due, key=lambda d: d[0])


class Conn:
    """One keep-alive connection: idle, or waiting for the answer to one request."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.buf, self.busy = b"", None          # busy: (request id, monotonic start, wall start)

    def send(self, data, rid, wall0, t0):
        start = time.monotonic()
        self.sock.sendall(data)
        self.busy = (rid, start, int((wall0 + start - t0) * 1e6))

    def answered(self):
        """The status once the whole answer is in, else None."""
        head, sep, rest = self.buf.partition(b"\r\n\r\n")
        if not sep:
            return None
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(rest) < length:
            return None
        self.buf = rest[length:]
        return int(head.split(b" ", 2)[1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("poisson", "phased", "lockstep", "bursts", "closed"))
    p.add_argument("url")
    p.add_argument("--rate", type=float, default=0.0)
    p.add_argument("--duration", type=float, default=0.0)
    p.add_argument("--requests", type=int, default=0)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--drop", type=float, default=0.0)
    p.add_argument("--log")
    p.add_argument("--seed", type=int)
    p.add_argument("--plan", action="store_true")
    args = p.parse_args()
    if (args.mode == "closed") != bool(args.requests) or \
            (args.mode != "closed" and not (args.rate and args.duration)):
        p.error("closed takes --requests; the others --rate and --duration")
    rng = random.Random(args.seed)
    due = schedule(args.mode, args.rate, args.duration, args.connections, rng, args.requests)
    claimed = len(due)
    if args.plan:
        print(json.dumps({"claimed": claimed}))
        return
    if args.drop:
        keep = set(rng.sample(range(len(due)), round(len(due) * (1 - args.drop))))
        due = [d for i, d in enumerate(due) if i in keep]
    u = urllib.parse.urlsplit(args.url)
    path = u.path + (f"?{u.query}" if u.query else "")
    conns = [Conn(u.hostname, u.port or 80) for _ in range(args.connections)]
    log, sent, errors, late = [], 0, 0, 0.0
    t0 = time.monotonic() + 0.05
    wall0 = time.time() + (t0 - time.monotonic())
    waiting = []                          # requests due whose connection is busy, in order
    i = 0
    while i < len(due) or waiting or any(c.busy for c in conns):
        now = time.monotonic()
        while i < len(due) and t0 + due[i][0] <= now:
            waiting.append(due[i])
            i += 1
        still = []
        for at, which in waiting:
            free = [c for c in ([conns[which]] if which is not None else conns) if not c.busy]
            if not free:
                still.append((at, which))
                continue
            rid = f"g{sent}"
            late = max(late, time.monotonic() - (t0 + at))
            free[0].send(f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nX-Request-Id: {rid}\r\n"
                         "\r\n".encode(), rid, wall0, t0)
            sent += 1
        waiting = still
        busy = [c for c in conns if c.busy]
        timeout = 0.0 if waiting and len(busy) < len(conns) else \
            max(0.0, t0 + due[i][0] - time.monotonic()) if i < len(due) else 1.0
        readable = select.select([c.sock for c in busy], [], [], timeout)[0] if busy else \
            time.sleep(timeout) or []
        for c in busy:
            if c.sock not in readable:
                continue
            data = c.sock.recv(65536)
            c.buf += data
            status = c.answered() if data else 0
            if status is None:
                continue
            rid, start, wall = c.busy
            errors += status == 0
            log.append((wall, rid, int((time.monotonic() - start) * 1e6), status))
            c.busy = None
    for c in conns:
        c.sock.close()
    if args.log:
        with open(args.log, "w") as f:
            f.write("start_us,request_id,latency_us,status\n")
            for row in sorted(log):
                f.write("%d,%s,%d,%d\n" % row)
    print(json.dumps({"sent": sent, "claimed": claimed, "errors": errors,
                      "late_ms": round(late * 1000, 3)}), flush=True)


if __name__ == "__main__":
    main()
