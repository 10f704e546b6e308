#!/usr/bin/env bash
# check-syntax.sh: parses every k6 script and module with Node, as an ES module.
#
#   loadtests/k6/check-syntax.sh
#
# k6 is not needed: `node --check` only parses, so imports such as k6/http are
# not resolved. Also parses loadtests/wrk/notes.lua when luajit is installed,
# and the Express peer's server.js.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
command -v node >/dev/null || { echo "check-syntax.sh: node not found" >&2; exit 1; }

fail=0
n=0
check_module() {
  n=$((n + 1))
  if node --input-type=module --check < "$1" 2> >(sed "s|^\[stdin\]|$1|" >&2); then
    echo "ok   ${1#"$root"/}"
  else
    echo "FAIL ${1#"$root"/}"
    fail=1
  fi
}

for f in "$here"/*.js "$here"/lib/*.js "$here"/*.mjs "$root"/peers/express/server.js; do
  [ -e "$f" ] && check_module "$f"
done

if command -v luajit >/dev/null; then
  n=$((n + 1))
  if luajit -bl "$root/wrk/notes.lua" >/dev/null; then
    echo "ok   wrk/notes.lua"
  else
    echo "FAIL wrk/notes.lua"; fail=1
  fi
else
  echo "skip wrk/notes.lua (no luajit; test_mix.mjs still reads its numbers)"
fi

echo "$n files checked"
exit "$fail"
