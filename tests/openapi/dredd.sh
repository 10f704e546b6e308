#!/usr/bin/env bash
# dredd.sh: Dredd 14 reads docs/openapi.json and compiles its HTTP transactions
# without sending any (--dry-run). It needs an example (or a default) for every
# required parameter and says `error:` for each one it cannot fill; any error, or
# a failing exit, fails this check. Its warnings (OpenAPI 3.1 "not fully supported",
# keywords it does not know) are counted, not judged: Dredd 14 reads OpenAPI 3.0.
#
#   tests/openapi/dredd.sh
#
# Dredd is pinned in package.json and package-lock.json and installed by install.sh
# when missing; exit 77 (skip) when npm cannot install it. No request leaves: the
# server URL is required by Dredd's command line, and a dry run never connects.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
status=0
bash "$here/install.sh" || status=$?
[ "$status" -eq 0 ] || exit "$status"
cd "$here"
rc=0
out="$(node_modules/.bin/dredd ../../docs/openapi.json http://127.0.0.1:9 --dry-run --no-color \
  2>&1)" || rc=$?
errors="$(grep -c '^error:' <<<"$out" || true)"
warnings="$(grep -c '^warn:' <<<"$out" || true)"
grep '^error:' <<<"$out" || true
grep '^complete:' <<<"$out" | head -1
echo "$(node_modules/.bin/dredd --version 2>&1 | tail -1): exit $rc, $errors error(s)," \
  "$warnings warning(s)"
[ "$rc" -eq 0 ] && [ "$errors" -eq 0 ]
