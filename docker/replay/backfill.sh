#!/usr/bin/env bash
# backfill.sh: a loadtests/run.sh results directory into Prometheus blocks, so the
# replay stack (compose.yaml here) shows the run in its dashboards.
#
#   docker/replay/backfill.sh RESULTS_DIR [TSDB_DIR]
#
# Every OpenMetrics file of the run (r<round>/<target>/<mode>/metrics.om, written
# by the harness at the end of each test) goes through
# `promtool tsdb create-blocks-from openmetrics FILE TSDB_DIR`. TSDB_DIR defaults
# to docker/replay/data, the directory the replay Prometheus opens as its
# storage. Blocks already there stay; a run backfilled twice is stored twice
# (same samples, so queries do not change, but start from an empty directory to
# keep it small). promtool comes with Debian's `prometheus` package.
#
# Exit status: 0 when every file was converted; 1 when one failed or the run
# has no .om file; 2 for bad arguments or no promtool.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage="usage: docker/replay/backfill.sh RESULTS_DIR [TSDB_DIR]"
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "${1#-}" != "$1" ]; then
  echo "$usage" >&2
  exit 2
fi
results="$1"
tsdb="${2:-$here/data}"
if [ ! -d "$results" ]; then
  echo "backfill.sh: $results is not a directory" >&2
  exit 2
fi
promtool="${PROMTOOL:-promtool}"
if ! command -v "$promtool" >/dev/null; then
  echo "backfill.sh: promtool not found (apt-get install -y prometheus)" >&2
  exit 2
fi

mapfile -d '' files < <(find "$results" -name '*.om' -type f -print0 | sort -z)
if [ ${#files[@]} -eq 0 ]; then
  echo "backfill.sh: no .om file under $results (runs before metrics.om existed have only metrics.prom.gz)" >&2
  exit 1
fi
mkdir -p "$tsdb"
failed=0
for f in "${files[@]}"; do
  # promtool prints a table of the blocks it made; one line per file is enough here
  if out="$("$promtool" tsdb create-blocks-from openmetrics "$f" "$tsdb" 2>&1)"; then
    blocks="$(grep -cE '^[0-9A-Z]{26} ' <<<"$out" || true)"
    echo "${f#"$results"/}: $blocks block(s)"
  else
    echo "${f#"$results"/}: FAILED" >&2
    echo "$out" >&2
    failed=1
  fi
done
echo "${#files[@]} file(s) into $tsdb"
exit $failed
