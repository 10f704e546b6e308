#!/usr/bin/env bash
# Runs every test of notesd:
#   1. installs the Debian packages the build and the tests need (only missing ones);
#   2. builds with warnings as errors and runs all CTest tests (style, unit, integration)
#      but the `behaviour` suites (answers alone: no figure the sanitizers would change);
#   3. builds with ASan+UBSan and runs the server's unit and integration tests, the
#      `behaviour` suites among them;
#   4. builds with ThreadSanitizer (clang) and runs the multi-loop tests: no data race;
#   5. builds the libFuzzer targets with clang and runs each for FUZZ_SECONDS (default 10).
# Steps 3 and 4, and step 5's build, run as one chain in the background while step 2's
# tests run, TEST_JOBS (default three per core; a suite whose verdict compares CPU shares
# takes more than one slot: PROCESSORS in tests/CMakeLists.txt) at a time; the sanitizers' CTest runs
# CHAIN_JOBS tests at a time (default 2). Then step 2's `serial` tests (timing verdicts:
# k6's open model, honest schedules judged, bench --compare), with the fuzzers beside them
# on idle CPU time only (SCHED_IDLE). Every build goes through ccache when installed. Every test has its own
# database (copied from a seeded template) and ports the kernel picks, which is what
# lets them share the machine; tests/README.md ("Running in parallel") says more.
# It ends with one line: "N passed, M failed, K skipped" over all suites (the
# ThreadSanitizer and fuzzing ones included); a test that skipped (exit 77:
# valgrind under ASan, a missing tool) is not a pass.
# Integration tests start their own PostgreSQL in a temporary directory (as the
# `postgres` user when run as root) and the real notesd binary on free ports.
#
#   tests/run.sh --quick   the loop for working on server/: step 2 only, without
#                          the docker/ and load-tool tests (loadtests/, and the
#                          integration suites verify, harness and harness_peers, which drive the
#                          load tools end to end): the style, unit and server
#                          integration tests of the strict build, once, TEST_JOBS at
#                          a time. About a minute and a half on an idle 2-core
#                          machine once the build is there; the full run
#                          above is what CI and the README run.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
QUICK=0
case "${1:-}" in
  --quick) QUICK=1 ;;
  "") ;;
  *) echo "usage: tests/run.sh [--quick]" >&2; exit 2 ;;
esac
"$REPO/server/build.sh" --test-deps --deps-only
# The four trees, the package's build and bench --compare's build the same sources: through
# ccache, each compiles what the cache has not seen (a second run, or another clone of the
# same sources: paths inside the checkout are hashed relative to it).
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$REPO" CCACHE_NOHASHDIR=1
fi

# Each suite's tally goes to a file, one line per CTest run, because the sanitizer,
# ThreadSanitizer and fuzzing suites run in a background chain (below).
TALLY="$(mktemp)"
trap 'rm -f "$TALLY"' EXIT
# CTest runs this many test slots at once in the strict build: most tests wait on sockets,
# timers, PostgreSQL and npm (each has a database and ports of its own), so three per
# core; the suites whose verdicts compare CPU shares take two or three slots each
# (PROCESSORS), so no more run beside them than at two per core. The sanitizers' chain
# beside it, CHAIN_JOBS.
JOBS="${TEST_JOBS:-$(( $(nproc) * 3 ))}"
CHAIN_JOBS="${CHAIN_JOBS:-2}"

# build NAME BUILD_DIR [cmake args...]
build() {
  local name="$1" dir="$2"
  shift 2
  echo "== $name: building in $dir"
  cmake -S "$REPO" -B "$dir" -DBUILD_TESTING=ON -DNOTESD_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)" >/dev/null
}

# run_tests NAME BUILD_DIR [ctest args...]: one CTest run, its tally appended to $TALLY
run_tests() {
  local name="$1" dir="$2"
  shift 2
  echo "== $name: testing"
  local log="$dir/ctest-$(tr -c 'a-zA-Z0-9\n' '-' <<<"$name" | head -c 40).log" rc=0
  (cd "$dir" && ctest --output-on-failure --timeout 600 "$@") 2>&1 | tee "$log" || rc=$?
  # "100% tests passed, 0 tests failed out of 12"
  local line passed=0 failed=0 skipped=0 bad=0
  line="$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1 || true)"
  if [[ -z "$line" || $rc -ne 0 ]]; then bad=1; fi
  if [[ -n "$line" ]]; then
    local out_of
    failed="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")"
    out_of="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")"
    # CTest counts a skipped test (exit 77, SKIP_RETURN_CODE) as not failed; its
    # closing list names each one: "	 40 - integration_valgrind (Skipped)".
    skipped="$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)"
    passed=$((out_of - failed - skipped))
  fi
  echo "$passed $failed $skipped $bad" >>"$TALLY"
}

summary() {
  local p=0 f=0 k=0 bad=0 a b c d
  while read -r a b c d; do
    p=$((p + a)); f=$((f + b)); k=$((k + c)); bad=$((bad | d))
  done <"$TALLY"
  echo "== all suites"
  echo "$p passed, $f failed, $k skipped"
  [[ $bad == 0 && $f == 0 ]]
}

if [[ $QUICK == 1 ]]; then
  build "strict build (quick: style, unit, integration)" "$REPO/build-test"
  run_tests "strict build (quick: style, unit, integration)" "$REPO/build-test" -j"$JOBS" \
    -L '^(style|unit|integration)$' -LE '^(docker|loadtests)$' \
    -E '^integration_(verify|harness|harness_peers)$'
  summary
  exit $?
fi

# The sanitizer, ThreadSanitizer and fuzzing builds and their tests, one after the other,
# while the strict build's tests run: they share no build directory, PostgreSQL or port.
# Their output is printed when they are done, each suite in one piece. (The fuzzers, or a
# second chain, beside the strict tests took the CPU that their timing verdicts need.)
sanitizer_chain() {
  # The server's own tests again under the sanitizers: unit and integration. The
  # load-tool, harness and database-script suites (verify, harness, localdb), the
  # Python and style checks and docker/ test what is not notesd's C, and run in the
  # strict build.
  build "sanitizers (ASan+UBSan)" "$REPO/build-asan" -DNOTESD_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
  run_tests "sanitizers (ASan+UBSan)" "$REPO/build-asan" -j"$CHAIN_JOBS" \
    -LE '^(style|loadtests|docker)$' -E '^integration_(verify|harness|localdb)$'
  if command -v clang >/dev/null; then
    # Several event loops under load with /metrics scraped from the first moment;
    # a race ends notesd with status 66 and fails the test.
    CC=clang build "ThreadSanitizer (multi-loop tests)" "$REPO/build-tsan" -DNOTESD_TSAN=ON \
      -DCMAKE_BUILD_TYPE=Debug
    run_tests "ThreadSanitizer (multi-loop tests)" "$REPO/build-tsan" -j"$CHAIN_JOBS" \
      -R '^(unit_stats|integration_threads|integration_api)$'
    # Built here, run after the chain (below).
    CC=clang build "fuzzing (${FUZZ_SECONDS}s per target)" "$REPO/build-fuzz" -DNOTESD_FUZZ=ON \
      -DNOTESD_FUZZ_SECONDS="$FUZZ_SECONDS"
  fi
}

build "strict build" "$REPO/build-test"
CHAIN_LOG="$REPO/build-test/sanitizer-chain.log"
sanitizer_chain >"$CHAIN_LOG" 2>&1 &
chain=$!
# Everything but the `serial` tests, and the `behaviour` suites the sanitizers' chain runs,
# $JOBS slots at a time.
run_tests "strict build" "$REPO/build-test" -j"$JOBS" -LE '^(serial|behaviour)$'
chain_rc=0
wait "$chain" || chain_rc=$?
cat "$CHAIN_LOG"
if [[ $chain_rc != 0 ]]; then          # a build in the chain failed: no tally of its own
  echo "== the sanitizer chain stopped with status $chain_rc"
  echo "0 1 0 1" >>"$TALLY"
fi
# Last, on a quiet machine: the tests whose verdicts are about timing (k6's open model
# keeping its rate, honest schedules judged kept, bench --compare finding no difference
# between HEAD and HEAD). The fuzz targets (no network, no PostgreSQL; each keeps a core
# busy) run beside them, one per core, under SCHED_IDLE: they get only the CPU time the
# timing tests leave idle, and yield the moment one of those wakes.
fuzz=""
if [[ -d "$REPO/build-fuzz" ]] && command -v clang >/dev/null; then
  FUZZ_LOG="$REPO/build-fuzz/fuzz-run.log"
  (
    chrt --idle -p 0 "$BASHPID" >/dev/null 2>&1 || renice -n 19 -p "$BASHPID" >/dev/null ||
      echo "== fuzzing at normal priority: neither SCHED_IDLE nor nice 19 could be set"
    run_tests "fuzzing (${FUZZ_SECONDS}s per target, on idle CPU time)" "$REPO/build-fuzz" \
      -L fuzz -j"$(nproc)"
  ) >"$FUZZ_LOG" 2>&1 &
  fuzz=$!
fi
run_tests "strict build (serial: timing verdicts)" "$REPO/build-test" -L '^serial$'
if [[ -n "$fuzz" ]]; then
  wait "$fuzz" || true                 # its tally says how it went
  cat "$FUZZ_LOG"
fi
summary
