#!/usr/bin/env bash
# lint.sh: lints docs/openapi.json with Redocly CLI, its recommended rules
# as tests/openapi/redocly.yaml adjusts them; warnings fail too.
#
#   tests/openapi/lint.sh
#
# Redocly is pinned in package.json and package-lock.json and installed by
# install.sh when missing; exit 77 (skip) when npm cannot install it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
status=0
bash "$here/install.sh" || status=$?
[ "$status" -eq 0 ] || exit "$status"
cd "$here"
echo "redocly $(node_modules/.bin/redocly --version 2>/dev/null | tail -1)"
# Telemetry off and no update check: the tests reach nothing but the loopback.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
exec node_modules/.bin/redocly lint --config redocly.yaml --max-problems 50 \
  --format stylish ../../docs/openapi.json
