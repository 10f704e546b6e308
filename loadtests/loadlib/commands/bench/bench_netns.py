"""loadtests/bench --netns: the read mix across three "hosts" on one machine. wrk in
the namespace nb-load, the server in nb-srv, a private PostgreSQL in nb-db, with a
one-way delay on both links (--delays, default 0.25, 1 and 5 ms): what the network
round trip does to notesd (default, --prepared, --pipeline) and to the peers.

Owns the runs inside the namespaces, their figures and their part of the report;
the namespaces, links and delays are loadlib/netns.py's, the database
loadlib/database.py's, the server commands and wrk's command line
subjects.py's; bench_command.py calls run_netns() after its rounds.
"""
import os
import subprocess
import time

from loadlib import netcheck, netns, paths, procs, server
from loadlib.commands.bench.bench_figures import PEERS, check, ratio
from loadlib.commands.bench.bench_runs import wrk_invalid
from loadlib.commands.bench.subjects import log, subject_command, wrk_cmd
from loadlib.database import LocalDatabase
from loadlib.report import fmt, fmt_ratio, table
from loadlib.tools import run as toolrun, wrk

NETNS_SUBJECTS = ["notesd", "notesd-prepared", "notesd-pipeline", "notesd-prepared-pipeline",
                  "node", "bun", "deno"]
TEST = "read"
DB_PORT = "5432"  # inside nb-db, which has nothing else
# the plan's targets: at this one-way delay, notesd --pipeline's req/s over the best peer's
TARGETS = {1.0: 2.0, 5.0: 5.0}


class NetnsDatabase(LocalDatabase):
    """A private PostgreSQL (sql/localdb.sh, its own data directory) run inside nb-db,
    listening on nb-db's address as well as its loopback; reseeded through that
    loopback. Its data directory outlives one delay's namespaces, not the run."""

    def __init__(self, datadir, cpus):
        super().__init__(pin_cpus=cpus)
        self.env = dict(os.environ, NOTESD_PGDATA=datadir, NOTESD_PGPORT=DB_PORT)
        self.addr = netns.address("db", "srv")
        self.datadir = datadir
        self.url = f"postgresql://postgres@{self.addr}:{DB_PORT}/notes"

    def localdb(self, verb, check=True):
        """sql/localdb.sh VERB inside nb-db; NetnsError when it fails."""
        argv = netns.in_ns("db", [paths.repo("sql", "localdb.sh"), verb])
        res = toolrun.run_measured(argv, env=self.env, timeout=300)
        if check and res["rc"] != 0:
            raise netns.NetnsError(f"sql/localdb.sh {verb} in nb-db: {res['output'].strip()}")
        return subprocess.CompletedProcess(argv, res["rc"], stdout=res["output"], stderr="")

    def open(self):
        """Starts it (set up to listen on nb-db's address the first time), finds the
        postmaster and pins it."""
        first = not os.path.exists(os.path.join(self.datadir, "PG_VERSION"))
        self.localdb("start")
        if first:
            # listen on nb-db's address too, and let the server's namespace in
            with open(os.path.join(self.datadir, "postgresql.conf"), "a") as f:
                f.write("\n# loadtests/bench --netns\n"
                        f"listen_addresses = '127.0.0.1,{self.addr}'\n")
            with open(os.path.join(self.datadir, "pg_hba.conf"), "a") as f:
                f.write(f"host all all {netcheck.BENCH_NET} trust\n")
            self.localdb("stop")
            self.localdb("start")
        self.attach()
        return self

    def stop(self):
        """Stops it (at the end of each delay: its namespaces go)."""
        if self.postmaster:
            self.localdb("stop")
            self.postmaster = None


def server_command(bench, subject, db_url, port, metrics_port):
    """(argv, env, cwd) of a subject inside nb-srv, listening on nb-srv's address on
    the link to nb-load."""
    cmd, env, cwd = subject_command(bench, subject, 1, db_url, port, metrics_port)
    env["HOST"] = netns.address("srv", "load")
    return netns.in_ns("srv", cmd), env, cwd


def run_netns(bench, server_cpus, load_cpus):
    """Every delay of --delays: build the layout, start PostgreSQL in nb-db, run the
    read mix against each subject, take it all down again (also on an error or an
    interruption: the caller's finally runs teardown())."""
    a = bench.args
    ok, why = netns.permitted()
    if not ok:
        bench.netns_setup = {"skipped": why}
        bench.notes.append(f"--netns: SKIP — {why}")
        log(f"--netns: SKIP ({why})")
        return
    method = a.netns_link
    if method == "auto":
        method = "netem" if netns.netem_available() else "delayline"
    bench.netns_setup = {"link": method, "delays_ms": a.delays, "addresses": netns.addresses(),
                         "namespaces": netns.NAMES, "pool": a.pool,
                         "skipped_subjects": {s: why for s, why in bench.skipped.items()
                                              if s in NETNS_SUBJECTS},
                         "connections": a.netns_connections,
                         "note": ("veth pairs with tc netem on both ends" if method == "netem"
                                  else "TUN devices and the user-space delay line "
                                  "(loadtests/bench.d/delayline.c): this kernel has no netem")}
    subjects = [s for s in NETNS_SUBJECTS if s in bench.subjects]
    log(f"--netns: {method} links, delays {', '.join(f'{d:g}' for d in a.delays)} ms one way; "
        f"{', '.join(subjects)}")
    db = NetnsDatabase(os.path.join(bench.tmp, "netns-pg", "pgdata"), load_cpus)
    for delay in a.delays:
        layout = netns.Layout(method, delay, bench.tmp, cpus=None,
                              log_path=os.path.join(bench.logdir, f"netns-wire-{delay:g}ms.log"))
        bench.netns_active = (layout, db)
        try:
            layout.up()
            db.open()
            for i, subject in enumerate(subjects):
                rec = run_subject(bench, layout, db, subject, delay, 18400 + i, 19400 + i,
                                  server_cpus, load_cpus)
                bench.netns_runs.append(rec)
                log(f"  netns {delay:g} ms {subject:<24} " + (
                    f"{fmt(rec['rps']):>9} req/s  p50 {fmt(rec['p50_ms'])} ms  "
                    f"p99 {fmt(rec['p99_ms'])} ms" if rec["valid"]
                    else f"INVALID: {rec['invalid_reason']}"))
                bench.save()
        except netns.NetnsError as e:
            bench.notes.append(f"--netns at {delay:g} ms: {e}")
            log(f"--netns at {delay:g} ms failed: {e}")
            break
        finally:
            teardown(bench)


def teardown(bench):
    """Stops what the layout runs (the server, PostgreSQL) and removes the layout."""
    active = getattr(bench, "netns_active", None)
    if not active:
        return
    layout, db = active
    bench.netns_active = None
    if bench.current is not None:
        bench.current.stop()
        bench.current = None
    try:
        db.stop()
    except netns.NetnsError:
        pass
    layout.down()


def run_subject(bench, layout, db, subject, delay, port, metrics_port, server_cpus, load_cpus):
    a = bench.args
    rec = {"delay_ms": delay, "subject": subject, "test": TEST, "link": layout.method}
    cmd, env, cwd = server_command(bench, subject, db.url, port, metrics_port)
    host = netns.address("srv", "load")
    url = f"http://{host}:{port}"
    netcheck.require_loopback_url(url, "the load's URL", from_ns=netns.NAMES["load"])
    rec["command"] = " ".join(cmd)
    proc = server.ProcessUnderTest(cmd, env, cwd, os.path.join(bench.logdir, f"netns-{delay:g}ms-"
                                                               f"{subject}.log"),
                                   port=port, ready_path="/notes?tag=js", host=host, cpus=server_cpus,
                                   name=subject)
    proc.start()
    bench.current = proc
    try:
        with netns.entered("load"):
            rec["startup_ms"] = 1e3 * proc.wait_ready()
    except (RuntimeError, OSError) as e:
        bench.current.stop()
        bench.current = None
        rec.update(valid=False, invalid_reason=f"did not start: {e}")
        return rec
    try:
        wrk_env = dict(os.environ, MODE=TEST)
        prefix = netns.in_ns("load", [])
        if not a.no_reset:
            db.reset()
        conns = a.netns_connections
        toolrun.run_measured(wrk_cmd(bench, TEST, port, a.warmup, conns, host, prefix),
                             env=wrk_env, timeout=a.warmup + 30)
        load_cmd = wrk_cmd(bench, TEST, port, a.duration, conns, host, prefix)
        db.settle()
        before = (time.monotonic(), procs.cpu_seconds(proc.pid), db.cpu(),
                  layout.wire_cpu_seconds(), procs.cpu_times())
        res = toolrun.run_measured(load_cmd, env=wrk_env, timeout=a.duration + 30,
                                   log_path=os.path.join(bench.logdir, f"netns-{delay:g}ms-"
                                                         f"{subject}.wrk.txt"))
        srv_cpu, wire_cpu, cpus = (procs.cpu_seconds(proc.pid), layout.wire_cpu_seconds(),
                                   procs.cpu_times())
        db.settle()
        db_cpu, t1 = db.cpu(), time.monotonic()
        w = wrk.json_line(res["output"])
        reason = wrk_invalid(res, w, proc, together=True)
        n = w["requests"] if w else 0

        def per(x0, x1):
            return 1e6 * (x1 - x0) / n if n and x0 is not None and x1 is not None else None
        rec.update(valid=reason is None, invalid_reason=reason, requests=n,
                   rps=w and w["rps"], p50_ms=w and w["p50_ms"], p99_ms=w and w["p99_ms"],
                   cpu_us_per_req=per(before[1], srv_cpu), db_cpu_us_per_req=per(before[2], db_cpu),
                   wire_cpu_us_per_req=per(before[3], wire_cpu),
                   loadgen_cpu_us_per_req=per(0, res["cpu_s"]),
                   cpu_busy=procs.cpu_busy_delta(before[4], cpus, t1 - before[0]),
                   wrk_command="MODE=read " + " ".join(load_cmd))
        return rec
    finally:
        bench.current.stop()
        bench.current = None


# ---------------------------------------------------------------- figures

def best_peer_at(records, delay):
    """(peer, req/s) of the peer with the most req/s at this delay, or (None, None)."""
    found = [(r["subject"], r["rps"]) for r in records
             if r.get("valid") and r["delay_ms"] == delay and r["subject"] in PEERS]
    return max(found, key=lambda pv: pv[1]) if found else (None, None)


def netns_rows(records):
    """Per delay and subject: req/s, p50, p99, CPU, and req/s over the best peer's."""
    out = []
    for r in records:
        peer, peer_rps = best_peer_at(records, r["delay_ms"])
        out.append(dict(r, best_peer=peer, vs_peer=ratio(r.get("rps") if r.get("valid")
                                                         else None, peer_rps)))
    return out


def netns_target_rows(records):
    """The plan's targets: notesd --pipeline (the better of unnamed and prepared) at
    1 ms one way ≥ 2× the best peer's req/s, at 5 ms ≥ 5×."""
    out = []
    for delay, need in TARGETS.items():
        if not any(r["delay_ms"] == delay for r in records):
            continue
        piped = [(r["subject"], r["rps"]) for r in records if r.get("valid") and
                 r["delay_ms"] == delay and r["subject"].endswith("-pipeline")]
        subject, mine = max(piped, key=lambda sv: sv[1]) if piped else ("notesd-pipeline", None)
        peer, peer_rps = best_peer_at(records, delay)
        value = ratio(mine, peer_rps)
        out.append({"delay_ms": delay, "subject": subject, "rps": mine, "best_peer": peer,
                    "peer_rps": peer_rps, "value": value, "threshold": need,
                    "result": check(value, ">=", need)})
    return out


def caps(delay_ms, pool, connections):
    """What the round trips alone allow, in req/s: (wrk's connections over the shortest
    a read request can take, one HTTP round trip plus one database round trip; the
    pool's connections over the database round trip when each carries one query at a
    time, as without pipelining; the first over the second, the largest ratio to a
    peer that the pool caps). Nones for no delay."""
    rtt_s = 2 * delay_ms / 1e3
    if rtt_s <= 0:
        return None, None, None
    http, pooled = connections / (2 * rtt_s), pool / rtt_s
    return http, pooled, http / pooled


def netns_section(records, setup):
    """The three-host part of the report (empty when --netns was not given)."""
    if not setup:
        return ""
    out = ["## Three hosts on one machine (`--netns`)", ""]
    if setup.get("skipped"):
        out.append(f"SKIP — {setup['skipped']}")
        return "\n".join(out)
    addrs = setup["addresses"]
    out.append(f"wrk in `nb-load` ({', '.join(addrs['load'])}), the server in `nb-srv` "
               f"({', '.join(addrs['srv'])}), PostgreSQL in `nb-db` ({', '.join(addrs['db'])}), "
               f"every address from 198.18.0.0/15 and only inside those namespaces; links: "
               f"{setup['note']}. Each delay is one way, on both links, so a round trip "
               "between two hosts is twice it. CPU pinning as in the main runs (server on "
               "CPU 1; wrk and PostgreSQL on CPU 0; the delay line unpinned, where the "
               "scheduler finds room).")
    out.append("")
    trows = []
    for r in netns_rows(records):
        trows.append([f"{r['delay_ms']:g}", r["subject"],
                      fmt(r.get("rps")) if r.get("valid") else
                      f"INVALID: {r.get('invalid_reason')}",
                      fmt(r.get("p50_ms")), fmt(r.get("p99_ms")),
                      fmt(r.get("cpu_us_per_req")), fmt(r.get("db_cpu_us_per_req")),
                      fmt(r.get("wire_cpu_us_per_req")),
                      f"{r['best_peer'] or '–'}", fmt_ratio(r.get("vs_peer"))])
    out.append(table(["one-way delay ms", "subject", "req/s", "p50 ms", "p99 ms",
                      "server CPU µs/req", "DB CPU µs/req", "delay line CPU µs/req",
                      "best peer", "req/s / best peer's"], trows))
    out.append("")
    crows = []
    for d in setup["delays_ms"]:
        http_cap, pool_cap, most = caps(d, setup["pool"], setup["connections"])
        crows.append([f"{d:g}", f"{2 * d:g}", fmt(http_cap), fmt(pool_cap),
                      fmt_ratio(most)])
    out.append(f"What the round trips allow on their own, with wrk `-c{setup['connections']}` "
               f"and a pool of {setup['pool']}: a read request takes at least an HTTP round "
               "trip and a database round trip, so wrk's connections carry at most "
               "connections / (2 × RTT) requests a second; and a query holds its pool "
               "connection for at least one round trip, so without pipelining the pool "
               "carries at most pool / RTT queries a second, whatever the CPUs could do: 20 "
               "connections at 2 ms per round trip, 10,000. A bigger pool raises that cap "
               "(at PostgreSQL's cost: a backend and its memory per connection, more "
               "contention); pipelining raises it by the depth without more connections. "
               "The last column is the first cap over the second: the largest ratio a "
               "pipelined server can reach against a pool-capped peer, connections / "
               "(2 × pool) at any delay.")
    out.append("")
    out.append(table(["one-way delay ms", "round trip ms",
                      "HTTP cap req/s (connections / 2 RTT)", "pool cap queries/s (pool / RTT)",
                      "largest ratio to a pool-capped peer"], crows))
    out.append("")
    for subject, why in (setup.get("skipped_subjects") or {}).items():
        out.append(f"- {subject}: SKIP — {why}")
    if setup.get("skipped_subjects"):
        out.append("")
    tr = netns_target_rows(records)
    if tr:
        out.append(table(["one-way delay ms", "target", "notesd pipelined req/s", "best peer",
                          "ratio", "result"],
                         [[f"{t['delay_ms']:g}",
                           f"{t['subject']} ≥ {t['threshold']:g}× best peer",
                           fmt(t["rps"]), f"{t['best_peer'] or '–'} "
                           f"{fmt(t['peer_rps'])}", fmt_ratio(t["value"]),
                           f"**{t['result']}**"] for t in tr]))
    return "\n".join(out)
