#!/usr/bin/python3
"""openload.py: a small HTTP/1.1 load generator that measures what wrk cannot.

    openload.py --url http://127.0.0.1:8080/delay/0 --rate 500 --duration 5
    openload.py --url http://127.0.0.1:8080/delay/0 --closed 10 --duration 5

Open model (--rate R): request i is due at start + i/R whatever happened to the
earlier ones, and its latency is completion minus that *intended* start. A
request that finds no idle connection opens one (up to --max-connections,
then it waits for one, and the wait counts). A stalled server therefore shows
up in the percentiles as every request that was due during the stall, which
is what a client population arriving at rate R would see.

Closed model (--closed N): N workers each send a request, wait for the answer,
send the next; latency is completion minus actual send. This is how wrk and
k6's constant-vus executor measure, without wrk's after-the-fact correction:
during a stall each worker records one slow sample and sends nothing else.

Both print a summary and one machine-readable line:

    OPENLOAD_JSON {"model":"open","rate":500,"sent":2500,"ok":2500,"errors":0,
                   "p50_ms":..,"p90_ms":..,"p99_ms":..,"p999_ms":..,"max_ms":..,
                   "service_p99_ms":..,"send_lag_p99_ms":..,"connections":N,...}

`service_*` are the open model's latencies measured from the actual send
instead (the number a generator that ignores its schedule would report);
`send_lag_*` is how late the generator started each request against its
schedule (its own health: when it is large, the generator, not the server, is
the bottleneck, and the percentiles are pessimistic). Loopback targets
only; every run is bounded by --duration (at most 120 s) plus --timeout.
"""
import argparse
import asyncio
import json
import os
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True   # no __pycache__ next to the scripts
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from loadlib.netcheck import is_loopback  # noqa: E402
from loadlib.quantile import percentile as nearest_rank  # noqa: E402

MAX_DURATION = 120.0
MAX_RATE = 20000.0


def percentile(sorted_values, q):
    """Nearest-rank percentile of an ascending list (q in 0..100); 0 when empty."""
    v = nearest_rank(sorted_values, q)
    return 0.0 if v is None else v


class Client:
    """Keep-alive connections to one host; at most `limit` open at once."""

    def __init__(self, host, port, path, limit, timeout):
        self.host, self.port, self.limit, self.timeout = host, port, limit, timeout
        self.request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                        f"User-Agent: openload\r\n\r\n").encode()
        self.idle = []
        self.open = 0
        self.peak = 0
        self.freed = asyncio.Condition()

    async def acquire(self):
        async with self.freed:
            while not self.idle and self.open >= self.limit:
                await self.freed.wait()
            if self.idle:
                return self.idle.pop()
            self.open += 1
            self.peak = max(self.peak, self.open)
        try:
            return await asyncio.open_connection(self.host, self.port)
        except OSError:
            await self.discard(None)
            raise

    async def release(self, conn):
        async with self.freed:
            self.idle.append(conn)
            self.freed.notify()

    async def discard(self, conn):
        if conn is not None:
            conn[1].close()
        async with self.freed:
            self.open -= 1
            self.freed.notify()

    async def get(self):
        """One request; returns (status, seconds from send to complete answer).
        The clock starts once a connection is in hand."""
        conn = await self.acquire()
        sent = time.perf_counter()
        try:
            reader, writer = conn
            writer.write(self.request)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.timeout)
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            length, close = 0, False
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value.strip())
                elif name == "connection" and value.strip().lower() == "close":
                    close = True
                elif name == "transfer-encoding":
                    raise ValueError("chunked answers are not supported")
            if length:
                await asyncio.wait_for(reader.readexactly(length), self.timeout)
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError,
                asyncio.TimeoutError, asyncio.LimitOverrunError):
            await self.discard(conn)
            raise
        done = time.perf_counter()
        if close:
            await self.discard(conn)
        else:
            await self.release(conn)
        return status, sent, done

    async def close(self):
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


async def run_open(client, rate, duration, timeout):
    total = int(rate * duration)
    latencies, service, lag = [], [], []
    errors = {"status": 0, "socket": 0, "unfinished": 0}

    async def one(intended):
        lag.append(time.perf_counter() - intended)
        try:
            status, sent, done = await client.get()
        except Exception:  # any failure of one request is counted, never fatal
            errors["socket"] += 1
            return
        if 200 <= status <= 299:
            latencies.append(done - intended)
            service.append(done - sent)
        else:
            errors["status"] += 1

    start = time.perf_counter() + 0.05
    tasks = []
    for i in range(total):
        intended = start + i / rate
        delay = intended - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append((intended, asyncio.ensure_future(one(intended))))
    end = start + total / rate
    pending = [t for _, t in tasks if not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=timeout)
    now = time.perf_counter()
    for intended, task in tasks:
        if not task.done():
            task.cancel()
            errors["unfinished"] += 1
            latencies.append(now - intended)  # a lower bound: it had not answered yet
    return total, latencies, service, lag, errors, now - start, end - start


async def run_closed(client, workers, duration):
    latencies = []
    errors = {"status": 0, "socket": 0, "unfinished": 0}
    start = time.perf_counter()
    deadline = start + duration

    async def worker():
        while time.perf_counter() < deadline:
            try:
                status, sent, done = await client.get()
            except Exception:  # counted; the worker goes on with a new connection
                errors["socket"] += 1
                await asyncio.sleep(0.01)
                continue
            if 200 <= status <= 299:
                latencies.append(done - sent)
            else:
                errors["status"] += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = time.perf_counter() - start
    sent = len(latencies) + errors["status"] + errors["socket"]
    return sent, latencies, [], [], errors, elapsed, duration


def summarize(model, args, result, client):
    sent, latencies, service, lag, errors, elapsed, planned = result
    ms = lambda xs: sorted(x * 1000.0 for x in xs)
    lat, svc, lg = ms(latencies), ms(service), ms(lag)
    out = {"model": model, "url": args.url,
           "rate": args.rate if model == "open" else None,
           "workers": args.closed if model == "closed" else None,
           "duration_s": round(elapsed, 3), "sent": sent,
           "ok": len(latencies) - errors["unfinished"],
           "errors": errors["status"] + errors["socket"] + errors["unfinished"],
           "status_errors": errors["status"], "socket_errors": errors["socket"],
           "unfinished": errors["unfinished"],
           "achieved_rps": round((len(latencies) - errors["unfinished"]) / elapsed, 1)
           if elapsed > 0 else 0.0,
           "connections": client.peak}
    for name, q in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9)):
        out[f"{name}_ms"] = round(percentile(lat, q), 3)
    out["max_ms"] = round(lat[-1], 3) if lat else 0.0
    out["slow_ms"] = args.slow_ms
    out["slow"] = sum(1 for x in lat if x >= args.slow_ms)
    out["mean_ms"] = round(sum(lat) / len(lat), 3) if lat else 0.0
    if model == "open":
        for name, q in (("p50", 50), ("p99", 99)):
            out[f"service_{name}_ms"] = round(percentile(svc, q), 3)
            out[f"send_lag_{name}_ms"] = round(percentile(lg, q), 3)
        out["send_lag_max_ms"] = round(lg[-1], 3) if lg else 0.0
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--url", required=True, help="http://127.0.0.1:PORT/path (GET)")
    model = p.add_mutually_exclusive_group(required=True)
    model.add_argument("--rate", type=float, help="open model: requests per second")
    model.add_argument("--closed", type=int, metavar="N", help="closed model: N workers")
    p.add_argument("--duration", type=float, default=5.0, help="seconds (at most 120)")
    p.add_argument("--max-connections", type=int, default=512)
    p.add_argument("--slow-ms", type=float, default=100.0,
                   help="also count the answers at least this slow (default 100)")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="per request, and the wait for stragglers at the end")
    args = p.parse_args()
    u = urllib.parse.urlsplit(args.url)
    if u.scheme != "http" or not u.hostname:
        p.error("--url must be http://host:port/path")
    if not is_loopback(u.hostname):
        p.error("openload only loads loopback addresses")
    if not 0 < args.duration <= MAX_DURATION:
        p.error(f"--duration must be in (0, {MAX_DURATION:g}]")
    if args.rate is not None and not 0 < args.rate <= MAX_RATE:
        p.error(f"--rate must be in (0, {MAX_RATE:g}]")
    if args.closed is not None and not 1 <= args.closed <= 1000:
        p.error("--closed must be in 1..1000")
    path = u.path or "/"
    if u.query:
        path += "?" + u.query

    async def go():
        client = Client(u.hostname, u.port or 80, path, args.max_connections, args.timeout)
        try:
            if args.rate is not None:
                res = await run_open(client, args.rate, args.duration, args.timeout)
                return summarize("open", args, res, client)
            res = await run_closed(client, args.closed, args.duration)
            return summarize("closed", args, res, client)
        finally:
            await client.close()

    out = asyncio.run(go())
    what = (f"open model, {args.rate:g} req/s" if out["model"] == "open"
            else f"closed model, {args.closed} workers")
    print(f"{what} for {out['duration_s']} s against {args.url}")
    print(f"  sent {out['sent']}, ok {out['ok']}, errors {out['errors']} "
          f"(status {out['status_errors']}, socket {out['socket_errors']}, "
          f"unfinished {out['unfinished']}), {out['achieved_rps']} req/s, "
          f"{out['connections']} connections at most")
    print(f"  latency ms  p50 {out['p50_ms']}  p90 {out['p90_ms']}  p99 {out['p99_ms']}  "
          f"p99.9 {out['p999_ms']}  max {out['max_ms']}; {out['slow']} at or over "
          f"{args.slow_ms:g} ms"
          + ("  (from the intended send time)" if out["model"] == "open" else ""))
    if out["model"] == "open":
        print(f"  from the actual send: p50 {out['service_p50_ms']}  p99 {out['service_p99_ms']};"
              f" generator send lag p50 {out['send_lag_p50_ms']}  p99 {out['send_lag_p99_ms']}"
              f"  max {out['send_lag_max_ms']}")
    print("OPENLOAD_JSON " + json.dumps(out, separators=(",", ":")))
    return 0 if out["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
