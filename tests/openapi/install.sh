#!/usr/bin/env bash
# install.sh: installs the pinned OpenAPI tools (Redocly CLI, Dredd, Prism) into
# tests/openapi/node_modules with `npm ci`, only when one is missing.
#
#   tests/openapi/install.sh
#
# The installed tree is kept in the test cache (NOTESD_DOCKER_CACHE, else
# /var/cache/notesd-test, as the container tests keep theirs), one per lockfile,
# and node_modules here links to it: a fresh clone of the same lockfile installs
# nothing. Where the cache is not writable, `npm ci` installs here as before.
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
installed() { [ -x "$1/.bin/redocly" ] && [ -x "$1/.bin/prism" ] && [ -x "$1/.bin/dredd" ]; }
if installed node_modules; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "install.sh: npm not found (apt-get install -y npm): skipping" >&2
  exit 77
fi
npm_ci() { npm ci --ignore-scripts --no-audit --no-fund --prefer-offline >&2; }
npm_failed() {
  echo "install.sh: npm ci failed (is the npm registry reachable?): skipping" >&2
  exit 77
}

cache="${NOTESD_DOCKER_CACHE:-/var/cache/notesd-test}/openapi-tools"
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
  rm -rf node_modules
  npm_ci || npm_failed
  exit 0
fi
digest="$(cat package.json package-lock.json | sha256sum | cut -c1-16)"
kept="$cache/$digest"
# Other clones install into the same cache.
exec 8>"$cache/lock"
flock 8
if ! installed "$kept/node_modules"; then
  work="$(mktemp -d "$cache/install-XXXXXX")"
  cp package.json package-lock.json "$work/"
  if ! (cd "$work" && npm_ci); then
    rm -rf "$work"
    npm_failed
  fi
  rm -rf "$kept"
  mv "$work" "$kept"
  echo "install.sh: installed into $kept" >&2
fi
rm -rf node_modules
ln -s "$kept/node_modules" node_modules
