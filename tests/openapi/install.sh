#!/usr/bin/env bash
# install.sh: installs the pinned OpenAPI tools (Redocly CLI, Dredd, Prism) into
# tests/openapi/node_modules with `npm ci`, only when one is missing.
#
#   tests/openapi/install.sh
#
# As the load tools are, once per lockfile on this machine (loadtests/npm_cache.sh, in
# ~/.cache/notesd/npm) and hard-linked into node_modules here: a fresh clone of the same
# lockfile unpacks nothing.
#
# Exits 77 (CTest's skip) when npm is missing or cannot install them (no
# registry reachable), saying why; any other failure is an error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# shellcheck source=loadtests/npm_cache.sh
. "$here/../../loadtests/npm_cache.sh"
# One at a time: CTest runs the checks that need these tools side by side, and two
# installs into one directory would undo each other.
exec 7<package-lock.json
flock 7
installed() { [ -x "$1/.bin/redocly" ] && [ -x "$1/.bin/prism" ] && [ -x "$1/.bin/dredd" ]; }
if installed node_modules; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "install.sh: npm not found (apt-get install -y npm): skipping" >&2
  exit 77
fi
if ! npm_ci_cached "$here" 0 --ignore-scripts --no-audit --no-fund --prefer-offline >&2; then
  echo "install.sh: npm ci failed (is the npm registry reachable?): skipping" >&2
  exit 77
fi
