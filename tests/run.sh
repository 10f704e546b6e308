#!/usr/bin/env bash
# Runs every test of notesd:
#   1. installs the Debian packages the build and the tests need (only missing ones);
#   2. builds with warnings as errors and runs all CTest tests (style, unit, integration);
#   3. builds with ASan+UBSan and runs the server's unit and integration tests again;
#   4. builds with ThreadSanitizer (clang) and runs the multi-loop tests: no data race;
#   5. builds the libFuzzer targets with clang and runs each for FUZZ_SECONDS (default 20).
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
#                          integration tests of the strict build, once. About two
#                          minutes on an idle 2-core machine once the build is
#                          there (three with other builds running); the full run
#                          above is what CI and the README run.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
QUICK=0
case "${1:-}" in
  --quick) QUICK=1 ;;
  "") ;;
  *) echo "usage: tests/run.sh [--quick]" >&2; exit 2 ;;
esac
"$REPO/server/build.sh" --test-deps --deps-only

total_passed=0
total_failed=0
total_skipped=0
status=0

# run_suite NAME BUILD_DIR [cmake args...]
run_suite() {
  local name="$1" dir="$2"
  shift 2
  echo "== $name: building in $dir"
  cmake -S "$REPO" -B "$dir" -DBUILD_TESTING=ON -DNOTESD_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)" >/dev/null
  echo "== $name: testing"
  local log="$dir/ctest.log" rc=0
  (cd "$dir" && ctest --output-on-failure --timeout 600 ${CTEST_ARGS:-}) 2>&1 | tee "$log" || rc=$?
  # "100% tests passed, 0 tests failed out of 12"
  local line
  line="$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1 || true)"
  if [[ -z "$line" || $rc -ne 0 ]]; then status=1; fi
  if [[ -n "$line" ]]; then
    local failed out_of skipped
    failed="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")"
    out_of="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")"
    # CTest counts a skipped test (exit 77, SKIP_RETURN_CODE) as not failed; its
    # closing list names each one: "	 40 - integration_valgrind (Skipped)".
    skipped="$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)"
    total_passed=$((total_passed + out_of - failed - skipped))
    total_failed=$((total_failed + failed))
    total_skipped=$((total_skipped + skipped))
  fi
}

if [[ $QUICK == 1 ]]; then
  CTEST_ARGS="-L ^(style|unit|integration)$ -LE ^(docker|loadtests)$ -E ^integration_(verify|harness|harness_peers)$" \
    run_suite "strict build (quick: style, unit, integration)" "$REPO/build-test"
  echo "== all suites"
  echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
  exit $status
fi

run_suite "strict build" "$REPO/build-test"
# The server's own tests again under the sanitizers: unit and integration. The
# load-tool, harness and database-script suites (verify, harness, localdb), the
# Python and style checks and docker/ test what is not notesd's C, and ran above.
CTEST_ARGS="-LE ^(style|loadtests|docker)$ -E ^integration_(verify|harness|localdb)$" \
  run_suite "sanitizers (ASan+UBSan)" "$REPO/build-asan" -DNOTESD_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
if command -v clang >/dev/null; then
  # Several event loops under load with /metrics scraped from the first moment;
  # a race ends notesd with status 66 and fails the test.
  CC=clang CTEST_ARGS="-R ^(unit_stats|integration_threads|integration_api)$" \
    run_suite "ThreadSanitizer (multi-loop tests)" "$REPO/build-tsan" -DNOTESD_TSAN=ON \
    -DCMAKE_BUILD_TYPE=Debug
  # The fuzz targets touch neither the network nor PostgreSQL: one per core at once.
  CC=clang CTEST_ARGS="-L fuzz -j$(nproc)" run_suite "fuzzing (${FUZZ_SECONDS}s per target)" "$REPO/build-fuzz" -DNOTESD_FUZZ=ON \
    -DNOTESD_FUZZ_SECONDS="$FUZZ_SECONDS"
fi

echo "== all suites"
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
exit $status
