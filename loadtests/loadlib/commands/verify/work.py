"""verify's work.* checks: did the load really run the target's queries? A short
wrk load (loadtests/wrk/notes.lua, MODE=mixed, per-kind counts) against the calls
pg_stat_statements counts in the target's database, their shares against the
mixed mode's, and, with --metrics-url, the target's own http_requests_total. One
function per check, in the order check_work() runs them."""
import math
import os
import re
import time

from loadlib import mixes, prom
from loadlib.commands.verify.verify_target import KINDS, psycopg2
from loadlib.paths import LOADTESTS
from loadlib.tools import wrk as wrk_tool
from loadlib.tools.run import run_measured

NOTES_LUA = os.path.join(LOADTESTS, "wrk", "notes.lua")

# The reference's statements as pg_stat_statements shows them: constants
# become $n (`limit 20` -> `limit $2`), and a named prepared statement keeps
# the text of its PREPARE. Whitespace is collapsed and case folded first.
_COLS = r"id, title, body, tag, created_at"
STATEMENTS = {
    "get_note": rf"select {_COLS} from notes where id = \$1",
    "list_by_tag": rf"select {_COLS} from notes where tag = \$1 order by id desc limit (\$2|20)",
    "insert_note": rf"insert into notes \(title, body, tag, created_at\) values "
                   rf"\(\$1, \$2, \$3, now\(\)\) returning {_COLS}",
    "update_note": rf"update notes set title = \$1, body = \$2, tag = \$3 where id = \$4 "
                   rf"returning {_COLS}",
}
STATEMENT_RES = {k: re.compile(r"^(prepare \S+ as )?" + v + r"$") for k, v in STATEMENTS.items()}
# metrics route templates -> request kind
METRIC_KINDS = {("GET", "/notes/:id"): "get_note", ("GET", "/notes"): "list_by_tag",
                ("POST", "/notes"): "insert_note", ("PUT", "/notes/:id"): "update_note"}


# -------------------- what the database and the target counted

def stat_calls(c):
    """{kind: calls} from pg_stat_statements in this database, and the
    statements on `notes` that matched none of the four."""
    rows = c.db.all(
        "select query, sum(calls)::bigint from pg_stat_statements "
        "where dbid = (select oid from pg_database where datname = current_database()) "
        "group by query")
    calls = {k: 0 for k in KINDS}
    other = []
    for query, n in rows:
        norm = " ".join(query.split()).lower().rstrip(";")
        kind = next((k for k, rx in STATEMENT_RES.items() if rx.match(norm)), None)
        if kind:
            calls[kind] += n
        elif re.search(r"\bnotes\b", norm) and "pg_stat_statements" not in norm \
                and "application_name" not in norm:
            other.append((norm[:100], n))
    return calls, other

def scrape_counts(c):
    url = c.args.metrics_url
    status, text = prom.scrape_text(url, timeout=10)
    if status != 200:
        raise OSError(f"{url} answered {status}")
    counts = {k: 0 for k in KINDS}
    others = {}
    for name, labels, value in prom.parse_lenient(text):
        if name != "http_requests_total" or not labels:
            continue
        kind = METRIC_KINDS.get((labels.get("method"), labels.get("path")))
        if kind:
            counts[kind] += int(value)
        else:
            key = f'{labels.get("method")} {labels.get("path")} {labels.get("status_code")}'
            others[key] = others.get(key, 0) + int(value)
    return counts, others



# -------------------- the load

def load_shares(mode):
    """Shares of the four request kinds in a mode, from loadtests/mixes.json."""
    shares = mixes.kind_shares(mode)
    return {k: shares.get(k, 0.0) for k in KINDS}


WRK_NAMES = {"GET /notes/:id": "get_note", "GET /notes?tag=": "list_by_tag",
             "POST /notes": "insert_note", "PUT /notes/:id": "update_note"}


def wrk_by_kind(wrk):
    """(sent, answered) per kind when notes.lua printed per-name counts
    (BREAKDOWN=1: "sent":{"GET /notes/:id":N,..}, "responses":{"GET /notes/:id 200":N,..}),
    else None."""
    if not isinstance(wrk.get("sent"), dict) or not isinstance(wrk.get("responses"), dict):
        return None
    sent = {k: 0 for k in KINDS}
    answered = {k: 0 for k in KINDS}
    for name, n in wrk["sent"].items():
        if name in WRK_NAMES:
            sent[WRK_NAMES[name]] += n
    for key, n in wrk["responses"].items():
        name = key.rsplit(" ", 1)[0]
        if name in WRK_NAMES:
            answered[WRK_NAMES[name]] += n
    return sent, answered


def run_wrk(args, base_url):
    wrk = args.wrk or wrk_tool.path()
    if not wrk:
        raise SystemExit(f"verify: wrk not found ({wrk_tool.INSTALL_HINT}, or --wrk PATH)")
    env = dict(os.environ, MODE="mixed", MAX_ID=str(args.max_id), BREAKDOWN="1")
    cmd = [wrk, "-t1", f"-c{args.connections}", f"-d{args.load_seconds}s", "--timeout", "5s",
           "-s", NOTES_LUA, base_url]
    res = run_measured(cmd, env=env, timeout=args.load_seconds + 60, split_stderr=True)
    data = wrk_tool.json_line(res["output"])
    if data is not None:
        data["timeouts"] = wrk_tool.timeouts(res["output"])
        return data, ""
    tail = (res["stderr"].strip() or res["output"].strip()).splitlines()[-3:]
    return None, f"wrk exited with {res['rc']}: {' | '.join(tail) or 'no output'}"


# -------------------- the checks

def check_work(c):
    """work.*: pg_stat_statements reset, the load, then the database's calls against
    the client's requests (work.db_calls), their mix (work.db_mix) and the target's
    own counts (work.metrics)."""
    if not start_counting(c):
        return
    metrics_before = scrape_before(c)
    wrk = check_load(c)
    if wrk is None:
        return
    calls, slack = check_db_calls(c, wrk)
    check_db_mix(c, calls, wrk["requests"], slack)
    check_metrics(c, metrics_before, calls, wrk["requests"], slack)


def start_counting(c):
    """Resets pg_stat_statements, so the count starts from zero; False (and a FAIL)
    when the extension cannot be read."""
    try:
        ext = c.db.one("select extversion from pg_extension "
                       "where extname = 'pg_stat_statements'")
        if not ext:
            raise psycopg2.Error("pg_stat_statements is not installed in this database")
        c.db.all("select pg_stat_statements_reset()")
        stat_calls(c)
    except psycopg2.Error as e:
        msg = str(e).strip().splitlines()[0]
        c.r.add("work.db_calls", "FAIL",
                f"cannot read pg_stat_statements ({msg}); it needs "
                f"shared_preload_libraries = 'pg_stat_statements' and "
                f"`create extension pg_stat_statements` (sql/pg_stat_statements.sql)")
        return False
    # a target may answer before its statement is accounted for: let the
    # checks' last statements settle, then start the count from zero
    time.sleep(0.2)
    c.db.all("select pg_stat_statements_reset()")
    return True


def scrape_before(c):
    """The target's counts before the load (None without --metrics-url; a scrape that
    fails is a FAIL, and the metrics are left out from then on)."""
    a = c.args
    if not a.metrics_url:
        return None
    try:
        return scrape_counts(c)
    except OSError as e:
        c.r.add("work.metrics", "FAIL", f"cannot scrape {a.metrics_url}: {e}")
        a.metrics_url = None
        return None


def check_load(c):
    """work.load: the wrk run itself, every answer 2xx; its WRK_JSON figures, or None."""
    a = c.args
    wrk, why = run_wrk(a, c.t.base_url)
    if wrk is None:
        c.r.add("work.load", "FAIL", f"wrk printed no WRK_JSON line ({why})")
        return None
    load_ok = wrk["requests"] > 0 and wrk["non2xx"] == 0 and wrk["socket_errors"] == 0
    c.r.ok("work.load", load_ok,
           f"wrk -t1 -c{a.connections} -d{a.load_seconds}s MODE=mixed MAX_ID={a.max_id}: "
           f"{wrk['requests']} requests, {wrk['rps']} req/s, p50 {wrk['p50_ms']} ms, "
           f"p99 {wrk['p99_ms']} ms, non-2xx {wrk['non2xx']}, "
           f"socket errors {wrk['socket_errors']}", wrk=wrk)
    return wrk


def settled_calls(c):
    """stat_calls() once it stops changing: in-flight requests finish after wrk stops."""
    calls, other = stat_calls(c)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.3)
        again, other = stat_calls(c)
        if again == calls:
            break
        calls = again
    return calls, other


def check_db_calls(c, wrk):
    """work.db_calls: the database ran as many of the four statements as the client got
    answers, up to the requests in flight at the stop, and per kind between what
    was answered and what was sent. Returns (calls per kind, the allowed slack)."""
    calls, other = settled_calls(c)
    client = wrk["requests"]
    db_total = sum(calls.values())
    slack = c.args.connections + wrk.get("timeouts", 0)
    diff = db_total - client
    parts = " + ".join(f"{k} {calls[k]}" for k in KINDS)
    detail = (f"client {client} requests; database {db_total} calls = {parts}; "
              f"difference {diff:+d} (allowed 0..{slack}: requests in flight at stop)")
    ok = 0 <= diff <= slack and client > 0
    by_kind = wrk_by_kind(wrk)
    if by_kind:
        # per kind: answered <= executed <= sent
        sent, answered = by_kind
        rows = []
        for k in KINDS:
            inside = answered[k] <= calls[k] <= sent[k]
            ok = ok and inside
            rows.append(f"{k} {answered[k]}..{sent[k]} {'ok' if inside else 'OUTSIDE'} "
                        f"({calls[k]})")
        detail += ("; per kind, client answered..sent (database): " + ", ".join(rows))
    else:
        detail += "; WRK_JSON has no per-kind counts, totals compared"
    if other:
        detail += f"; other statements on notes: {other[:3]}"
    c.r.ok("work.db_calls", ok, detail, client=client, db_calls=calls,
           client_by_kind=by_kind)
    return calls, slack


def check_db_mix(c, calls, client, slack):
    """work.db_mix: each kind's calls within 5 standard deviations (plus what was in
    flight) of the mixed mode's share."""
    shares = load_shares("mixed")
    worst, lines = 0.0, []
    for k in KINDS:
        expect = shares[k] * client
        sigma = math.sqrt(max(client * shares[k] * (1 - shares[k]), 1.0))
        z = (calls[k] - expect) / sigma
        worst = max(worst, abs(z) - slack / sigma)
        lines.append(f"{k} {calls[k]} (mix {shares[k] * 100:.0f}% -> {expect:.0f}, "
                     f"{z:+.1f} sd)")
    c.r.ok("work.db_mix", worst <= 5.0,
           "per-kind database calls against the mixed mode's shares: " + "; ".join(lines)
           + " (allowed: 5 sd + in-flight)")


def check_metrics(c, metrics_before, calls, client, slack):
    """work.metrics: the target's own http_requests_total delta against the client's
    requests and, per kind, the database's calls (SKIP without --metrics-url)."""
    a = c.args
    if not a.metrics_url:
        c.r.add("work.metrics", "SKIP", "no --metrics-url: the target's own "
                "http_requests_total not compared")
        return
    try:
        metrics_after = scrape_counts(c)
    except OSError as e:
        return c.r.add("work.metrics", "FAIL", f"cannot scrape {a.metrics_url}: {e}")
    db_total = sum(calls.values())
    delta = {k: metrics_after[0][k] - metrics_before[0][k] for k in KINDS}
    m_total = sum(delta.values())
    other_delta = {k: n - metrics_before[1].get(k, 0) for k, n in metrics_after[1].items()
                   if n != metrics_before[1].get(k, 0)}
    problems = []
    if not 0 <= m_total - client <= slack:
        problems.append(f"metrics count {m_total} vs client {client}")
    note = ""
    if other_delta:
        # not the load's: someone else used the target meanwhile (or a
        # request of the checks was counted late); shown, not judged
        note = f"; note: requests on other routes meanwhile: {other_delta}"
    for k in KINDS:
        if abs(delta[k] - calls[k]) > slack:
            problems.append(f"{k}: metrics {delta[k]} vs database {calls[k]}")
    detail = (f"http_requests_total delta {m_total} = " +
              " + ".join(f"{k} {delta[k]}" for k in KINDS) +
              f"; client {client} ({m_total - client:+d}); database {db_total} "
              f"({db_total - m_total:+d})")
    if problems:
        detail += "; " + "; ".join(problems)
    detail += note
    c.r.ok("work.metrics", not problems, detail, metrics_delta=delta)
