"""verify: does a target implement the notes API as specified, and did it do the work?

    loadtests/verify --base-url http://127.0.0.1:8080 \\
                     --db-url postgresql://postgres@127.0.0.1:54329/notes \\
                     [--metrics-url http://127.0.0.1:9091/metrics] \\
                     [--load-seconds 5] [--connections 16] [--max-id 200000] [--json OUT]

Checks, one line each (name, PASS/FAIL/SKIP, detail); exit status 0 when every
check passes, 1 when any fails, 2 when the target or the database cannot be
reached or the arguments are wrong:

  routes.*      status and Content-Type of every request kind the load sends
  bytes.*       byte-exact bodies for known rows, built here from the database
  json.*        GET /json: shape, id and tag rule, a created_at that is "now"
  notes.*       404 for a missing id, POST and PUT really written to the database
  bad_input.*   malformed ids and bodies: any 4xx or 5xx, and nothing written
  work.*        a short wrk load (loadtests/wrk/notes.lua, MODE=mixed) against
                pg_stat_statements calls and, with --metrics-url, the target's
                own http_requests_total

Every expected body is built here from rows read with psycopg2, following
JSON.stringify and node-postgres: keys id,title,body,tag,created_at, no spaces,
id a string, created_at = Date.toISOString() of the value truncated to ms.

Side effects on the database: the checks insert two rows and update them, the
load inserts and updates rows as the benchmark's mixed mode does, and
pg_stat_statements is reset. Reseed (`sql/localdb.sh reset`) before a
benchmark run. Needs Debian's python3 with python3-psycopg2, and wrk. The load
only runs against loopback addresses.
"""
import argparse
import json
import socket
import sys
import time
import urllib.parse

from loadlib.commands.verify import api
from loadlib.commands.verify.verify_target import SEED_ROWS, Api, Db, Report, psycopg2
from loadlib.commands.verify.work import check_work
from loadlib.netcheck import is_loopback

# The command's parts (imported by it alone): js.py renders rows as the reference
# app sends them, verify_target.py is the API, the database and the report, api.py
# the checks of the API, work.py the checks of the load's queries.

# the checks in the order they run (check_post leaves a row for check_put and
# check_bad_input; the load runs last, after the checks' own writes)
CHECKS = (api.check_routes, api.check_note_bytes, api.check_list_bytes, api.check_json,
          api.check_get_missing, api.check_post, api.check_put, api.check_put_missing,
          api.check_bad_input, check_work)


def main(argv=None):
    """The command: argv without the program's name (default: this process's)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--base-url", default="http://127.0.0.1:8080")
    p.add_argument("--db-url", required=True, help="the database the target uses")
    p.add_argument("--metrics-url", help="the target's /metrics (optional)")
    p.add_argument("--load-seconds", type=int, default=5)
    p.add_argument("--connections", type=int, default=16, help="wrk -c (default 16)")
    p.add_argument("--max-id", type=int, default=SEED_ROWS,
                   help="ids the load draws from (wrk MAX_ID, default 200000)")
    p.add_argument("--wrk", help="path of wrk (default: from PATH)")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    args = p.parse_args(argv)
    if args.load_seconds < 1 or args.connections < 1 or args.max_id < 1:
        p.error("--load-seconds, --connections and --max-id must be positive")
    if args.metrics_url and not urllib.parse.urlsplit(args.metrics_url).path:
        args.metrics_url = args.metrics_url.rstrip("/") + "/metrics"

    try:
        target = Api(args.base_url)
    except ValueError as e:
        p.error(str(e))
    if not is_loopback(target.host):
        p.error(f"{target.host} is not a loopback address; verify loads only local targets")
    if args.metrics_url and not is_loopback(urllib.parse.urlsplit(args.metrics_url).hostname or ""):
        p.error("--metrics-url must be on a loopback address")
    try:
        db = Db(args.db_url)
    except psycopg2.Error as e:
        print(f"verify: cannot connect to the database: {str(e).strip()}", file=sys.stderr)
        return 2
    try:
        socket.create_connection((target.host, target.port), timeout=5).close()
    except OSError as e:
        print(f"verify: target {args.base_url} not reachable: {e}", file=sys.stderr)
        return 2

    report = Report()
    try:
        checks = api.Checks(args, target, db, report)
    except psycopg2.Error as e:
        print(f"verify: cannot read the notes table: {str(e).strip()}", file=sys.stderr)
        return 2
    print(f"verify {args.base_url}  (database {db.conn.get_dsn_parameters().get('host')}:"
          f"{db.conn.get_dsn_parameters().get('port')}/{db.conn.get_dsn_parameters().get('dbname')}"
          f", load {args.load_seconds} s at -c{args.connections})")
    print(f"{'check':<38} {'':<4}  detail")
    t0 = time.monotonic()
    for check in CHECKS:
        check(checks)
    failed = report.failed()
    passed = sum(1 for c in report.checks if c["status"] == "PASS")
    print(f"{passed} passed, {len(failed)} failed"
          + (f" ({', '.join(c['name'] for c in failed)})" if failed else "")
          + f" in {time.monotonic() - t0:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.base_url, "passed": not failed, "checks": report.checks},
                      f, indent=2, ensure_ascii=False)
            f.write("\n")
    return 1 if failed else 0

