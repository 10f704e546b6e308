#!/usr/bin/env bash
# check-types.sh: type-checks every k6 script and module against k6's own API
# declarations (@types/k6), options blocks included, with TypeScript's checkJs.
#
#   loadtests/k6/check-types.sh
#
# typescript and @types/k6 are pinned in package.json and package-lock.json;
# `npm ci` installs them into loadtests/k6/node_modules when they are missing.
# tsconfig.json says what is checked: *.js and lib/*.js, strict apart from
# implicit `any` (the scripts are plain JavaScript; JSDoc types where k6's API
# meets ours: options, request parameters, responses, run tags).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -x node_modules/typescript/bin/tsc ] || [ ! -f node_modules/@types/k6/index.d.ts ]; then
  command -v npm >/dev/null || { echo "check-types.sh: npm not found" >&2; exit 1; }
  npm ci --ignore-scripts --no-audit --no-fund >&2
fi
echo "tsc $(node node_modules/typescript/bin/tsc --version | sed 's/^Version //'), @types/k6 $(node -p "require('./node_modules/@types/k6/package.json').version")"
node node_modules/typescript/bin/tsc -p tsconfig.json
echo "ok: $(node node_modules/typescript/bin/tsc -p tsconfig.json --listFilesOnly | grep -vc /node_modules/) files type-check against k6's API"
