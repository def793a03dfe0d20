#!/usr/bin/env bash
# Fails when a C++ file of the project differs from what clang-format makes of it
# (.clang-format at the root); prints the files to reformat with `make format`.
set -euo pipefail
root="${1:?usage: check_format.sh SOURCE_DIR [CLANG_FORMAT]}"
clang_format="${2:-clang-format}"
cd "$root"
files=$(git ls-files -- '*.cc' '*.h')
bad=0
for f in $files; do
  if ! "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=1
  fi
done
[ "$bad" -eq 0 ] && echo "clang-format: every C++ file is formatted"
exit "$bad"
