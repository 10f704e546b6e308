#!/usr/bin/env bash
# Fails if any C file differs from what clang-format (with the repo's .clang-format) writes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(find server tests packaging -name '*.[ch]' | sort)
clang-format --dry-run --Werror "${files[@]}"
echo "check_format: ${#files[@]} files formatted"
