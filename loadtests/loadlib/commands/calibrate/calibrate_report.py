"""calibrate's Markdown report (the sections without --tools): one section_*() per
section, each from the raw figures its runs.measure_*() returned, with the
truth each is judged against (the exact delay distribution, Little's law, the p99
an open model must see for the measured stalls); calibrate_command.py puts them together.
Nothing here runs anything.
"""
import math
import os
import platform

from loadlib import quantile
from loadlib.quantile import median
from loadlib.report import fmt_fixed as fmt
from loadlib.tools import wrk


def machine_line(runner, args, started):
    load = os.getloadavg()
    wrk_version = wrk.version_line(runner.wrk) or "wrk ?"
    pin = ("server `taskset -c 1`, wrk and openload.py `taskset -c 0`" if runner.pin and started
           else "wrk and openload.py `taskset -c 0` (server not started here)" if runner.pin
           else "no pinning (taskset missing or one CPU)")
    return (f"- machine: {platform.node()}, {os.cpu_count()} CPUs, {platform.system()} "
            f"{platform.release()}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
            f"at the start\n- tools: {wrk_version}; Python {platform.python_version()}\n"
            f"- pinning: {pin}\n- target: {args.base_url}"
            + (f" (metrics {args.metrics_url})" if args.metrics_url else " (no metrics URL)")
            + f"\n- {args.seconds} s per run\n")


def truth(jitter, q):
    """The q-th percentile of /delay/50?jitter=J in ms (uniform on [50-J, 50+J])."""
    return 50.0 + (2 * q / 100.0 - 1) * jitter


def share_between(hist, lo, hi):
    """Fraction of a histogram delta's observations in (lo, hi] seconds."""
    cum = dict(hist["buckets"])
    below = cum.get(lo, 0.0) if lo > 0 else 0.0
    return (cum.get(hi, hist["count"]) - below) / hist["count"]


def section_delay(runs):
    out = ["## 1. Known latency: `/delay/50`\n",
           "wrk -t1, `--latency`, percentiles from loadtests/calibration/latency.lua. Truth: the "
           "server answers 50 ms after it reads the request; with `?jitter=J` the delay is uniform "
           "on [50−J, 50+J], so p50 = 50, p90 = 50 + 0.8J, p99 = 50 + 0.98J; a closed model with c "
           "connections can do at most c / 50 ms requests per second.\n",
           "| route | c | requests | req/s (bound) | p50 ms (truth) | p90 ms (truth) | p99 ms (truth) "
           "| max ms | p50 error ms | p99 error ms | server mean ms |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        jitter, c = r["jitter"], r["connections"]
        h = r.get("histogram") or {}
        t50, t90, t99 = truth(jitter, 50), truth(jitter, 90), truth(jitter, 99)
        route = "/delay/50" + (f"?jitter={jitter}" if jitter else "")
        out.append(f"| `{route}` | {c} | {r['requests']} | {r['rps']:.1f} ({c / 0.05:.0f}) | "
                   f"{r['p50_ms']:.3f} ({t50:g}) | {r['p90_ms']:.3f} ({t90:g}) | "
                   f"{r['p99_ms']:.3f} ({t99:g}) | {r['max_ms']:.3f} | "
                   f"{r['p50_ms'] - t50:+.3f} | {r['p99_ms'] - t99:+.3f} | "
                   f"{fmt(h.get('mean_ms'), 3)} |")
    out.append("")
    notes = []
    for r in runs:
        jitter, c = r["jitter"], r["connections"]
        h = r.get("histogram") or {}
        if abs(r["p50_ms"] - 50.0) > 1.0 or r["p99_ms"] - truth(jitter, 99) > 5.0:
            where = ""
            if h.get("mean_ms") is not None:
                outside = r["mean_ms"] - h["mean_ms"]
                where = (f": the server's own mean was {h['mean_ms']:.2f} ms, so "
                         f"{outside:.2f} ms of wrk's mean {r['mean_ms']:.2f} ms was spent outside "
                         f"the server's handler (loopback, kernel, and wrk's own turn on its CPU)")
            notes.append(f"- c={c}{' jitter' if jitter else ''}: p50 {r['p50_ms'] - 50:+.2f} ms, "
                         f"p99 {r['p99_ms'] - truth(jitter, 99):+.2f} ms off the truth{where}")
    if notes:
        out.append("Deviations over 1 ms at p50 or 5 ms at p99 (with c=1 a run has about 20 "
                   "samples per second, so its p99 is its worst answer or close to it):\n")
        out.append("\n".join(notes) + "\n")
    c10 = next(r for r in runs if r["jitter"] == 0 and r["connections"] == 10)
    err = c10["p50_ms"] - 50.0
    verdict = "met" if abs(err) <= 1.0 else "NOT met"
    out.append(f"\n**Target** (wrk p50 of `/delay/50` at 10 connections within 1 ms of 50 ms): "
               f"measured {c10['p50_ms']:.3f} ms, error {err:+.3f} ms — {verdict}.\n")
    bad = [r for r in runs if r["status_errors"] or r["timeouts"] or r["connect_errors"]
           or r["read_errors"] or r["write_errors"]]
    if bad:
        out.append(f"Errors in {len(bad)} run(s): "
                   + "; ".join(f"c={r['connections']} {r['path']}: status {r['status_errors']}, "
                               f"timeouts {r['timeouts']}, read {r['read_errors']}" for r in bad)
                   + "\n")
    return "\n".join(out)


def section_server_view(samples, runs):
    out = ["## 2. The server's own view\n"]
    st = [(c, s) for c, s in samples if s is not None]
    if st:
        diffs = [c - s for c, s in st]
        out.append(f"`Server-Timing: total` of {len(st)} sequential `GET /delay/50` on one "
                   f"keep-alive connection (Python http.client): server total median "
                   f"{median([s for _, s in st]):.3f} ms (min {min(s for _, s in st):.3f}, max "
                   f"{max(s for _, s in st):.3f}); client-measured median "
                   f"{median([c for c, _ in st]):.3f} ms; difference (client − server: loopback, "
                   f"kernel, HTTP parsing in the client) median {median(diffs):.3f} ms, max "
                   f"{max(diffs):.3f} ms.\n")
    else:
        out.append("No `Server-Timing` header (a target without it, or `SERVER_TIMING=0`).\n")
    hist_runs = [r for r in runs if (r.get("histogram") or {}).get("count")]
    if not hist_runs:
        out.append("No metrics URL: the server's histogram was not read.\n")
        return "\n".join(out)
    out.append("`http_request_duration_seconds{path=\"/delay/:ms\"}`, delta over each wrk run "
               "(the server counts the requests still in flight when wrk stopped, so its count "
               "can exceed wrk's by up to c):\n")
    out.append("| route | c | wrk requests | server count | server mean ms | wrk mean ms | "
               "outside the server ms | share in (50, 100] ms | histogram_quantile p50 / p99 ms |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in hist_runs:
        jitter, c, h = r["jitter"], r["connections"], r["histogram"]
        route = "/delay/50" + (f"?jitter={jitter}" if jitter else "")
        # what Prometheus' histogram_quantile() would answer, in ms
        q50, q99 = (None if v is None else v * 1000 for v, _ in
                    (quantile.histogram_quantile(q, h["buckets"]) for q in (0.5, 0.99)))
        out.append(f"| `{route}` | {c} | {r['requests']} | {h['count']} | {h['mean_ms']:.3f} | "
                   f"{r['mean_ms']:.3f} | {r['mean_ms'] - h['mean_ms']:.3f} | "
                   f"{share_between(h, 0.05, 0.1) * 100:.1f}% | "
                   f"{fmt(q50, 1)} / {fmt(q99, 1)} |")
    out.append("\nThe mean (`_sum / _count`) is exact; percentiles are not: the buckets around "
               "50 ms are `0.03`, `0.05`, `0.1`, so every plain `/delay/50` answer lands in "
               "(50, 100] ms and `histogram_quantile()` interpolates inside that 50 ms wide bucket "
               "(last column). Read latency percentiles from the load tool, the mean and the "
               "counts from the server. With jitter, answers below 50 ms fall in (30, 50].\n")
    return "\n".join(out)


def section_saturation(sat):
    one, many, mixed_delay, mixed_primes = sat["c1"], sat["c50"], sat["delay"], sat["primes"]
    x = many["rps"]
    svc = 1000.0 / x if x else None
    little = 50 / x * 1000 if x else None
    row = lambda name, c, r, lag=True: (
        f"| {name} | {c} | {r['requests']} | {r['rps']:.1f} | {r['mean_ms']:.2f} | "
        f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['max_ms']:.2f} | "
        f"{fmt(r.get('lag_max_ms'), 1) if lag else ''} |")
    out = ["## 3. Saturation: the server as the bottleneck\n",
           f"`/primes?below={sat['below']}` counts primes by trial division, synchronously on the "
           f"server's only event loop. Runs: alone at 1 and 50 connections, then `/delay/50` at 10 "
           f"connections measured by a second wrk while the first keeps 50 `/primes` connections "
           f"busy.\n",
           "| run | c | requests | req/s | mean ms | p50 ms | p99 ms | max ms | server lag max ms |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
           row("`/primes` alone", 1, one),
           row("`/primes` alone", 50, many),
           row("`/primes` beside `/delay/50`", 50, mixed_primes, lag=False),
           row("`/delay/50` beside `/primes`", 10, mixed_delay),
           ""]
    out.append(
        f"At 50 connections the loop is the bottleneck: {x:.1f} req/s, i.e. {fmt(svc)} ms of "
        f"loop time per request (alone, one request took {one['mean_ms']:.2f} ms as seen by wrk; "
        f"a gap between the two means the server's CPU was shared with something else during one "
        f"of the runs). The latency is now queueing: Little's law gives mean latency = "
        f"connections / throughput = 50 / {x:.1f} = {fmt(little, 0)} ms; wrk measured a mean of "
        f"{many['mean_ms']:.0f} ms (p50 {many['p50_ms']:.0f}). Doubling the connections would "
        f"double it at the same req/s: under saturation a closed-model tool's latency describes "
        f"its own connection count, not the server's speed.\n")
    h = mixed_delay.get("histogram") or {}
    server_mean = h.get("mean_ms")
    turn = 50 * svc if svc else None
    out.append(
        f"`/delay/50` beside the saturating load: {mixed_delay['requests']} answers, mean "
        f"{mixed_delay['mean_ms']:.0f} ms, p50 {mixed_delay['p50_ms']:.0f} ms instead of 50. The "
        f"timer is exact, but one turn of the event loop runs the handler of every connection "
        f"that has a request ready — up to 50 `/primes` computations, about {fmt(turn, 0)} ms — "
        f"and a `/delay` request needs several turns: one to read it, one for the timer's "
        f"wake-up and the write. "
        + (f"The server's own histogram gives these requests a mean of {server_mean:.0f} ms "
           f"against wrk's {mixed_delay['mean_ms']:.0f} ms: its clock starts when the handler "
           f"gets the parsed request, so the time the request waited in the socket to be read is "
           f"invisible to it and only the client sees it. " if server_mean else "")
        + "A tool that reported about 50 ms here would be wrong; the excess is the server's "
        "queueing, and both wrk and the event-loop lag (last column) show it.\n")
    return "\n".join(out)


def open_p99_truth(stalls, seconds):
    """x with sum(max(0, s - x)) = 1% of the run: the p99 an open model must see
    when stalls of these lengths (seconds) are the only delay; ms, or None."""
    budget = 0.01 * seconds
    if sum(stalls) <= budget:
        return None
    lo, hi = 0.0, max(stalls)
    for _ in range(60):
        mid = (lo + hi) / 2
        if sum(max(0.0, s - mid) for s in stalls) > budget:
            lo = mid
        else:
            hi = mid
    return lo * 1000


def section_co(co, args):
    by_run = co["stalls"]
    stalls = [x for run in by_run.values() for x in run]
    s_ms = (sum(stalls) / len(stalls) * 1000) if stalls else 0.0
    every_ms = args.stall_every * 1000
    frac = s_ms / every_ms if every_ms else 0
    truths = {name: open_p99_truth(run, args.seconds) for name, run in by_run.items()}
    expected_open_p99 = truths.get("open")
    wrk_c, raw_c, open_ = co["wrk"], co["closed"], co["open"]
    out = ["## 4. Coordinated omission\n",
           f"Route `/delay/0` (answers at once) while a separate client sends "
           f"`/primes?below={args.stall_below}` every {args.stall_every:g} s"
           + (f" (sized to take about {args.stall_ms:g} ms just before)" if args.stall_sized
              else "") + ": each blocks the "
           f"server's loop for {s_ms:.0f} ms on average (client-measured; "
           + "; ".join(f"{name} run: {', '.join(f'{x * 1000:.0f}' for x in run)} ms"
                       for name, run in by_run.items())
           + f"). So for about {frac * 100:.0f}% of the time nothing is answered.\n",
           f"Truth for an open model: a request arriving during a stall waits for the rest of it "
           f"(uniform 0..{s_ms:.0f} ms), so P(latency > x) ≈ {frac:.2f} · (1 − x / {s_ms:.0f}) "
           f"and p99 ≈ S − 0.01 · period; with the open run's own stalls "
           f"(Σ max(0, sᵢ − x) = 0.01 · {args.seconds} s) that is "
           + (f"{expected_open_p99:.0f} ms." if expected_open_p99 else
              "below the stall-free latency (stalls too rare to reach p99).")
           + (" The stalls took more than half of the time, so the backlog of one stall is still "
              "being served when the next begins; the formula then understates the open model's "
              "p99 (the machine was busier than the stall was sized for)." if frac > 0.5 else "")
           + "\n",
           "| model | tool | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | answers ≥ "
           f"{args.slow_ms:g} ms | open-model p99 for this run's stalls |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
           f"| closed, c={args.co_connections} | wrk (with its `stats_correct`) | "
           f"{wrk_c['requests']} | {wrk_c['rps']:.0f} | {wrk_c['p50_ms']:.3f} | "
           f"{wrk_c['p90_ms']:.3f} | {wrk_c['p99_ms']:.3f} | {wrk_c['max_ms']:.1f} | n/a | "
           f"{fmt(truths['wrk'], 0)} |",
           f"| closed, c={args.co_connections} | openload.py `--closed` (raw samples) | "
           f"{raw_c['ok']} | {raw_c['achieved_rps']:.0f} | {raw_c['p50_ms']:.3f} | "
           f"{raw_c['p90_ms']:.3f} | {raw_c['p99_ms']:.3f} | {raw_c['max_ms']:.1f} | "
           f"{raw_c['slow']} ({raw_c['slow'] / max(raw_c['ok'], 1) * 100:.2f}%) | "
           f"{fmt(truths['closed'], 0)} |",
           f"| open, {args.open_rate:g}/s | openload.py `--rate`, from the intended send | "
           f"{open_['ok']} | {open_['achieved_rps']:.0f} | {open_['p50_ms']:.3f} | "
           f"{open_['p90_ms']:.3f} | {open_['p99_ms']:.3f} | {open_['max_ms']:.1f} | "
           f"{open_['slow']} ({open_['slow'] / max(open_['ok'], 1) * 100:.2f}%) | "
           f"{fmt(truths['open'], 0)} |",
           f"| open, {args.open_rate:g}/s | the same requests, from the actual send | "
           f"{open_['ok']} | | {open_['service_p50_ms']:.3f} | | {open_['service_p99_ms']:.3f} "
           f"| | | |",
           "",
           "Stall lengths vary from run to run (the server's CPU is shared with the rest of the "
           "machine), so each run is compared with the p99 an open model would see for its own "
           "stalls (last column).\n"]
    closed_p99 = raw_c["p99_ms"]
    interval = 1000 * args.co_connections / max(wrk_c["rps"], 1)
    out.append(f"**coordinated omission: closed-model p99 {closed_p99:.1f} ms vs open-model p99 "
               f"{open_['p99_ms']:.1f} ms** (wrk's closed-model p99 after its own correction: "
               f"{wrk_c['p99_ms']:.1f} ms"
               + (f"; expected open-model p99 ≈ {expected_open_p99:.0f} ms" if expected_open_p99
                  else "") + ").\n")
    slow_share = raw_c["slow"] / max(raw_c["ok"], 1)
    out.append(
        f"The closed model sends a request only after the previous answer: during a stall each "
        f"of its {args.co_connections} connections records one slow sample and then sends "
        f"nothing, while between stalls it records fast ones as quickly as it can — "
        f"{raw_c['slow']} of its {raw_c['ok']} samples "
        f"({slow_share * 100:.2f}%) show a stall, so its p99 "
        f"{'hides them' if slow_share < 0.01 else 'catches only the tail of them'}. "
        f"The open model keeps sending at {args.open_rate:g}/s; every request due "
        f"during a stall waits, and {open_['slow'] / max(open_['ok'], 1) * 100:.1f}% of its "
        f"samples are ≥ {args.slow_ms:g} ms, as a population of users arriving at that rate "
        f"would see. Measured from the actual send instead of the intended one, the open "
        f"model's p99 is {open_['service_p99_ms']:.1f} ms. "
        + (f"The generator kept its schedule (start lag p99 {open_['send_lag_p99_ms']:.1f} ms, "
           f"max {open_['send_lag_max_ms']:.1f} ms) by opening connections "
           f"({open_['connections']} at most): requests went out on time and waited in the "
           f"server's socket queues.\n"
           if open_["send_lag_max_ms"] < 0.2 * max(s_ms, 1) else
           f"The generator itself fell behind its schedule (start lag p99 "
           f"{open_['send_lag_p99_ms']:.1f} ms, max {open_['send_lag_max_ms']:.1f} ms, "
           f"{open_['connections']} connections at most): that lag is counted in its latencies "
           f"(they are measured from the intended time), so its figures are if anything "
           f"pessimistic; a lower --open-rate or a less busy CPU 0 tightens them.\n"))
    out.append(
        f"wrk 4 corrects after the fact: every sample longer than twice the mean interval "
        f"between a connection's requests is replayed at that interval below itself (the "
        f"requests the connection would have sent). With a mean interval of "
        f"{interval:.2f} ms here, each stall sample of {s_ms:.0f} ms stands for about "
        f"{s_ms / max(interval, 1e-9):.0f}, which is why wrk's p99 ({wrk_c['p99_ms']:.1f} ms) is "
        + ("close to what an open model would see for the stalls of its run "
           f"({fmt(truths.get('wrk'), 0)} ms)"
           if truths.get("wrk") and abs(wrk_c["p99_ms"] - truths["wrk"]) < 0.25 * truths["wrk"]
           else "not the raw closed model's: it moved towards an open model's, here to "
           f"{wrk_c['p99_ms']:.0f} ms against {fmt(truths.get('wrk'), 0)} ms expected for its "
           "stalls") +
        ". The correction assumes the mean rate is the intended rate; it is an estimate, not a "
        "measurement, and wrk's req/s still counts only what it sent. For latency at a given "
        "load, use an open-model tool that measures from the intended send time (wrk2 `-R`, "
        "k6 `constant-arrival-rate` as in `loadtests/k6/notes-open.js`, or openload.py).\n")
    h = open_.get("histogram") or {}
    if h.get("count"):
        out.append(f"The server's own histogram over the open-model run: {h['count']} requests, "
                   f"mean {h['mean_ms']:.2f} ms, {share_between(h, 0.1, math.inf) * 100:.1f}% over "
                   f"100 ms, against the client's mean {open_['mean_ms']:.2f} ms. Requests that "
                   f"arrived during a stall were read only after it, so the server timed them as "
                   f"fast: a server-side histogram is blind to its own accept queue, like a closed "
                   f"model (event-loop lag max over the run: "
                   f"{fmt(open_.get('lag_max_ms'), 0)} ms, which does show the stalls).\n")
    return "\n".join(out)

