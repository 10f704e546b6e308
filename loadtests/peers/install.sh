#!/usr/bin/env bash
# Installs the Express peer and the three pinned runtimes from their lockfiles
# and prints the paths of the runtime binaries.
#
#   loadtests/peers/install.sh
#
# Needs npm (any recent Node) and the npm registry. Each lockfile is installed
# once per machine (../npm_cache.sh, in ~/.cache/notesd/npm) and hard-linked
# into express/node_modules and runtimes/node_modules.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=loadtests/npm_cache.sh
. "$here/../npm_cache.sh"

echo "== express peer ($here/express)"
npm_ci_cached "$here/express" 0 --no-audit --no-fund

echo "== runtimes ($here/runtimes)"
npm_ci_cached "$here/runtimes" 0 --no-audit --no-fund

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
