#!/usr/bin/env bash
# Both CMake generators build the report's assets (npm ci, then inlining) in a fresh build
# folder. Makefiles read only a rule's outputs, never its byproducts, so a rule that depends on
# a file npm installs breaks there alone; the assets are the part of the build that can.
# The two builds run side by side: each is mostly waiting on configure and npm.
# Usage: check_generators.sh SOURCE_DIR [CMAKE]
set -euo pipefail
source_dir="${1:?usage: check_generators.sh SOURCE_DIR [CMAKE]}"
cmake="${2:-cmake}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build_assets() {
  local generator="$1" build="$work/${1// /-}"
  if ! "$cmake" -S "$source_dir" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release >"$build.log" 2>&1 ||
    ! "$cmake" --build "$build" --target attngeom_report_assets -j2 >>"$build.log" 2>&1; then
    cat "$build.log"
    echo "$generator: the report's assets did not build"
    return 1
  fi
  if [ ! -s "$build/src/report/generated/report_assets.cc" ]; then
    echo "$generator: no report_assets.cc"
    return 1
  fi
  echo "$generator: the report's assets built"
}

build_assets Ninja &
ninja=$!
build_assets "Unix Makefiles" &
makefiles=$!
status=0
wait "$ninja" || status=1
wait "$makefiles" || status=1
exit "$status"
