"""verify: does a target implement the notes API as specified, and did it do the work?

verify_command.py  the options and the checks in order
verify_target.py   the two ends and the report: the API over HTTP, the database through psycopg2
api.py             the checks of the API, one function each (routes, bytes, json, notes, bad_input)
work.py            work.*: a short wrk load against pg_stat_statements and http_requests_total
js.py              the bytes a row must become: JSON.stringify of what node-postgres hands the app
"""
