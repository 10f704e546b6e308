#!/usr/bin/env bash
# prism_front.sh: Prism's validation proxy for docs/openapi.json in front of
# notesd, as notes_testlib starts it (NOTESD_FRONT; its upstream is the relay of
# tests/integration/front_proxy.py, joined to the notesd of the moment): every
# request is forwarded unchanged, and each answer carries an `sl-violations`
# header listing where the request or the response departs from the
# description (also logged).
#
#   tests/openapi/prism_front.sh http://127.0.0.1:UPSTREAM_PORT PORT
#
# Without --errors: Prism answers with notesd's own response whatever it finds,
# so a test that sends a bad request on purpose still sees notesd's 400, and
# prism_suites.py decides which violations are failures.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/node_modules/.bin/prism" proxy "$here/../../docs/openapi.json" "$1" \
  --host 127.0.0.1 --port "$2"
