#!/usr/bin/env bash
# Installs the Express peer and the three pinned runtimes from their lockfiles
# and prints the paths of the runtime binaries.
#
#   loadtests/peers/install.sh
#
# Needs npm (any recent Node) and the npm registry. Nothing is installed
# outside loadtests/peers/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

command -v npm >/dev/null || { echo "install.sh: npm not found" >&2; exit 1; }

echo "== express peer ($here/express)"
(cd "$here/express" && npm ci --no-audit --no-fund)

echo "== runtimes ($here/runtimes)"
(cd "$here/runtimes" && npm ci --no-audit --no-fund)

bin="$here/runtimes/node_modules/.bin"
status=0
echo "== runtimes"
for rt in node bun deno; do
  if [ -x "$bin/$rt" ] && version="$("$bin/$rt" --version 2>/dev/null | head -n1)"; then
    printf '%-5s %s  (%s)\n' "$rt" "$bin/$rt" "$version"
  else
    printf '%-5s %s  (NOT USABLE)\n' "$rt" "$bin/$rt"
    status=1
  fi
done
echo
echo "start the peer from $here/express with one of:"
echo "  $bin/node server.js"
echo "  $bin/bun server.js"
echo "  $bin/deno run -A server.js"
exit "$status"
