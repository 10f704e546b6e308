#!/usr/bin/env bash
# Installs the load generators the loadlib adapters drive.
#
#   loadtests/tools/install.sh --all         every tool Debian 12 and npm have, in one step:
#                                            the Debian packages (apt-get, as root or through
#                                            sudo; only the missing ones), then the npm tools;
#                                            it ends by saying where k6 stands
#   loadtests/tools/install.sh --all --dry-run   what --all would install, nothing done
#   loadtests/tools/install.sh               the npm tools alone: npm ci (a clean install from
#                                            package-lock.json, replacing the cached one)
#   loadtests/tools/install.sh --if-missing  the npm tools, only when a binary is missing:
#                                            linked to the cached install when it is complete
#
# The npm tools (autocannon, artillery, loadtest) are pinned in package-lock.json and
# installed once per lockfile on this machine (loadtests/npm_cache.sh: 600 MB, in
# ~/.cache/notesd/npm) and hard-linked into loadtests/tools/node_modules, where the
# adapters look first. Install scripts
# are not run: none of the three needs one (the native WebSocket helpers fall back to
# JavaScript), and artillery's dependencies would otherwise try to download a browser.
#
# k6 is in neither Debian nor npm: put its binary on PATH or set K6=/path/to/k6
# (loadtests/loadlib/tools/k6.py says which version the tests run).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools=(autocannon artillery loadtest)
# One package per tool: wrk, h2load, ab, hey, siege, httperf, locust (and its distributed
# mode), curl. The adapters' INSTALL_HINTs name these; loadtests/tests/tools/test_install.py
# keeps the two in step.
debian_packages=(wrk nghttp2-client apache2-utils hey siege httperf python3-locust curl tsung)

all=0 dry=0 if_missing=0
for arg in "$@"; do
  case "$arg" in
    --all) all=1 ;;
    --dry-run) dry=1 ;;
    --if-missing) if_missing=1 ;;
    *) echo "install.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done
if ((dry && !all)); then echo "install.sh: --dry-run goes with --all" >&2; exit 2; fi

# shellcheck source=loadtests/npm_cache.sh
. "$here/../npm_cache.sh"

npm_tools_present() {
  for tool in "${tools[@]}"; do [ -x "$here/node_modules/.bin/$tool" ] || return 1; done
}

install_npm() {
  npm_ci_cached "$here" "$1" --ignore-scripts --no-audit --no-fund --prefer-offline
  for tool in "${tools[@]}"; do
    printf '%-10s %s\n' "$tool" "$here/node_modules/.bin/$tool"
  done
}

if ((!all)); then
  if ((if_missing)) && npm_tools_present; then
    echo "install.sh: ${tools[*]} already installed"
    exit 0
  fi
  install_npm "$((!if_missing))"
  exit 0
fi

# --all: the Debian packages first (only the missing ones), then the npm tools.
missing=()
for pkg in "${debian_packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" = "install ok installed" ]; then
    echo "debian  $pkg: installed"
  else
    echo "debian  $pkg: to install"
    missing+=("$pkg")
  fi
done
if npm_tools_present; then
  echo "npm     ${tools[*]}: installed (loadtests/tools/node_modules)"
else
  echo "npm     ${tools[*]}: to install (npm ci in loadtests/tools, once per lockfile: npm_cache.sh)"
fi
if ((dry)); then
  echo "dry run: nothing installed"
else
  if ((${#missing[@]})); then
    sudo=()
    if [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null || {
        echo "install.sh: not root and no sudo; as root run: apt-get install -y ${missing[*]}" >&2
        exit 1
      }
      sudo=(sudo)
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "${missing[@]}"
  fi
  npm_tools_present || install_npm 0
fi

# k6: not installable from here; say where it stands.
k6="${K6:-$(command -v k6 || true)}"
if [ -n "$k6" ] && [ -x "$k6" ]; then
  echo "k6      $("$k6" version 2>/dev/null | head -1) at $k6"
else
  echo "k6      not found: it is in neither Debian nor npm; put the k6 binary on PATH or set" \
    "K6=/path/to/k6 (Grafana's release binaries and packages; the version the tests run is" \
    "PINNED in loadtests/loadlib/tools/k6.py)"
fi
