#!/usr/bin/env bash
# install.sh: installs the pinned OpenAPI tools (Redocly CLI, Dredd, Prism) into
# tests/openapi/node_modules with `npm ci`, only when one is missing.
#
#   tests/openapi/install.sh
#
# Exits 77 (CTest's skip) when npm is missing or cannot install them (no
# registry reachable), saying why; any other failure is an error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# One at a time: CTest runs the checks that need these tools side by side, and two
# `npm ci` in one directory would undo each other.
exec 9<package-lock.json
flock 9
if [ -x node_modules/.bin/redocly ] && [ -x node_modules/.bin/prism ] &&
  [ -x node_modules/.bin/dredd ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "install.sh: npm not found (apt-get install -y npm): skipping" >&2
  exit 77
fi
if ! npm ci --ignore-scripts --no-audit --no-fund --prefer-offline >&2; then
  echo "install.sh: npm ci failed (is the npm registry reachable?): skipping" >&2
  exit 77
fi
