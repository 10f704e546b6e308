# shellcheck shell=bash
# npm_cache.sh: `npm ci` of a lockfile once per machine, for loadtests/tools/install.sh and
# loadtests/peers/install.sh (sourced by both).
#
#   npm_ci_cached DIR FRESH [npm ci option...]
#
# Installs DIR's package.json and package-lock.json into a directory of the cache named by
# the digest of the lockfile and the options, and gives DIR a node_modules of hard links to
# it. A second checkout of the same lockfile links instead of unpacking it again (the tools'
# 600 MB: seconds instead of a minute); a changed lockfile gets an install of its own.
# FRESH=1 installs again even when the cache has it (a clean install, as `npm ci` means).
#
# The cache is NOTESD_NPM_CACHE, by default ~/.cache/notesd/npm. npm ci runs in a fresh
# directory beside the install it makes, renamed into place once complete (npm writes
# node_modules/.package-lock.json last), and a lock keeps two checkouts from installing at
# once. Hard links, not a link to the directory: an `npm ci` run by hand in DIR removes
# DIR's own entries and leaves the cache whole (through a directory link it empties the
# cache). Links inside node_modules are relative, so the copy runs as npm left it; on
# another file system than the cache's it is a copy.

npm_ci_cached() {
  local src="$1" fresh="$2" cache digest dir
  shift 2
  command -v npm >/dev/null || { echo "npm_cache.sh: npm not found (apt-get install -y npm)" >&2; return 1; }
  cache="${NOTESD_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/notesd/npm}"
  digest="$( (cat "$src/package-lock.json"; printf '%s\n' "$@") | sha256sum | cut -c1-16)"
  dir="$cache/$(basename "$src")-$digest"
  mkdir -p "$cache"
  (
    flock 9
    if ((fresh)) || [ ! -f "$dir/node_modules/.package-lock.json" ]; then
      tmp="$(mktemp -d "$cache/.installing-XXXXXX")"
      trap 'rm -rf "$tmp"' EXIT              # an install that failed leaves nothing behind
      cp "$src/package.json" "$src/package-lock.json" "$tmp/"
      (cd "$tmp" && npm ci "$@")
      rm -rf "$dir"
      mv "$tmp" "$dir"
    else
      echo "npm_cache.sh: $src's lockfile is installed in $dir"
    fi
    rm -rf "$src/node_modules" "$src/node_modules.partial"
    cp -al "$dir/node_modules" "$src/node_modules.partial" 2>/dev/null \
      || { rm -rf "$src/node_modules.partial" && cp -a "$dir/node_modules" "$src/node_modules.partial"; }
    mv "$src/node_modules.partial" "$src/node_modules"
  ) 9>"$cache/.lock"
}
