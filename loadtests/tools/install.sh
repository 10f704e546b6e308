#!/usr/bin/env bash
# Installs the pinned npm load generators (autocannon, artillery, loadtest)
# from package-lock.json into loadtests/tools/node_modules, where the loadlib
# adapters look for their binaries.
#
#   loadtests/tools/install.sh
#
# Needs npm and the npm registry. Install scripts are not run: none of the
# three tools needs one (the native WebSocket helpers fall back to JavaScript),
# and artillery's dependencies would otherwise try to download a browser.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v npm >/dev/null || { echo "install.sh: npm not found" >&2; exit 1; }

cd "$here"
npm ci --ignore-scripts --no-audit --no-fund
for tool in autocannon artillery loadtest; do
  printf '%-10s %s\n' "$tool" "$here/node_modules/.bin/$tool"
done
