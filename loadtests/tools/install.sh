#!/usr/bin/env bash
# Installs the pinned npm load generators (autocannon, artillery, loadtest)
# from package-lock.json into loadtests/tools/node_modules, where the loadlib
# adapters look for their binaries.
#
#   loadtests/tools/install.sh               npm ci (a clean install from the lockfile)
#   loadtests/tools/install.sh --if-missing  only when a tool's binary is missing
#
# Needs npm and the npm registry. Install scripts are not run: none of the
# three tools needs one (the native WebSocket helpers fall back to JavaScript),
# and artillery's dependencies would otherwise try to download a browser.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools=(autocannon artillery loadtest)

if [ "${1:-}" = "--if-missing" ]; then
  missing=0
  for tool in "${tools[@]}"; do [ -x "$here/node_modules/.bin/$tool" ] || missing=1; done
  ((missing)) || { echo "install.sh: ${tools[*]} already installed"; exit 0; }
elif [ $# -gt 0 ]; then
  echo "install.sh: unknown option '$1'" >&2; exit 2
fi

command -v npm >/dev/null || { echo "install.sh: npm not found" >&2; exit 1; }

cd "$here"
npm ci --ignore-scripts --no-audit --no-fund
for tool in "${tools[@]}"; do
  printf '%-10s %s\n' "$tool" "$here/node_modules/.bin/$tool"
done
