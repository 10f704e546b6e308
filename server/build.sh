#!/usr/bin/env bash
# Installs the Debian packages notesd needs (only those missing) and builds it.
#
#   server/build.sh                    build into build/ (optimised, with debug info)
#   server/build.sh --test-deps        also install what the tests need
#   server/build.sh --deps-only [...]  install packages, do not build
#
# BUILD_DIR overrides the build directory; CMAKE_ARGS adds cmake options.
# The Docker image's build stage runs this same script.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"

# What building and running need (zlib and Brotli's decoder inflate request bodies; wslay
# frames the WebSocket routes; file lets `cpack -G DEB` find the binary it hands to
# dpkg-shlibdeps, which build-essential's dpkg-dev brings).
PACKAGES=(build-essential cmake pkg-config libh2o-evloop-dev libpq-dev libcjson-dev libssl-dev
          zlib1g-dev libbrotli-dev libwslay-dev postgresql postgresql-contrib curl ca-certificates
          openssl file)
# What the tests add: Debian's python3 with psycopg2 (and brotli, to compress test
# bodies; numpy, which loadlib's journal figures and judge compute with; prometheus-client
# and scipy, the references loadlib's own Prometheus parser and bench --compare's
# statistics are held to), promtool, clang for sanitizers and
# libFuzzer, clang-format for the style check, wrk for load smoke tests, graphviz for the
# check that server/diagrams are current, the load generators the loadlib adapters drive
# (h2load, ab, hey, siege, httperf, locust, and tsung for calibrate's WebSocket column;
# curl and openssl, which calibrate's HTTP/2 checks also use, are among the packages
# above), iproute2 for the benchmark's namespaces; python3-h2 and slowhttptest for the
# hostile-client tests; chromium for the status page's test (headless, driven over its
# DevTools Protocol); for packaging/: lintian, man-db for `man`, systemd for
# systemd-analyze, systemd-container for systemd-nspawn; for docker/: the engine
# (docker.io), mmdebstrap for the Debian base image, Compose v1, and kubectl for rendering
# docker/kubernetes/ (Debian's kubernetes-client only where no kubectl is on PATH: a newer
# one is not replaced). hypothesis and jsonschema: the contract test draws its requests from
# docs/openapi.json and judges the answers with them. ccache: tests/run.sh's builds of the
# same sources compile once.
TEST_PACKAGES=(python3 python3-psycopg2 python3-yaml python3-brotli python3-prometheus-client
               python3-numpy python3-scipy prometheus clang libclang-rt-14-dev clang-format wrk valgrind
               docker-compose graphviz docker.io mmdebstrap nghttp2-client apache2-utils hey siege
               httperf python3-locust tsung iproute2 python3-h2 slowhttptest chromium lintian
               man-db systemd systemd-container python3-hypothesis python3-jsonschema ccache)
command -v kubectl >/dev/null || TEST_PACKAGES+=(kubernetes-client)
# npm installs the peer runtimes the image test wraps into stand-ins of the peer
# images' bases (a Node.js from outside Debian ships its own npm, and conflicts
# with Debian's package).
command -v npm >/dev/null || TEST_PACKAGES+=(npm)

build=1
for arg in "$@"; do
  case "$arg" in
    --test-deps) PACKAGES+=("${TEST_PACKAGES[@]}") ;;
    --deps-only) build=0 ;;
    *) echo "build.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "build.sh: installing ${missing[*]}" >&2
  SUDO=()
  [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # A dockerd the package starts must not create Docker's default bridge (a
  # 172.17.0.0/16 network): the tests run every container on the host network.
  if [[ " ${missing[*]} " == *" docker.io "* && ! -e /etc/docker/daemon.json ]]; then
    "${SUDO[@]}" mkdir -p /etc/docker
    echo '{"bridge": "none", "iptables": false, "ip6tables": false, "ip-forward": false, "ip-masq": false}' |
      "${SUDO[@]}" tee /etc/docker/daemon.json >/dev/null
  fi
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

((build)) || exit 0
# shellcheck disable=SC2086
cmake -S "$REPO" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
  ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" >/dev/null
echo "build.sh: built $BUILD_DIR/notesd" >&2
