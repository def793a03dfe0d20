#!/usr/bin/env bash
# Installs the Debian packages attngeom needs, only those that are missing.
# Usage: scripts/bootstrap.sh [build|test|demo|fuzz|python]   (test adds the test-only packages;
# fuzz adds clang and its libFuzzer/sanitizer runtimes for the opt-in fuzz build)
set -euo pipefail
purpose="${1:-build}"

packages=(cmake ninja-build g++ pkg-config
  libdnnl-dev libsentencepiece-dev sentencepiece nlohmann-json3-dev libcli11-dev
  libfmt-dev libzstd-dev zlib1g-dev libssl-dev libeigen3-dev
  # Hugging Face tokenizer.json: Unicode regexes and normalisation.
  libpcre2-dev libutf8proc-dev
  # oneDNN's CMake config looks for OpenCL; libdnnl-dev only recommends it.
  ocl-icd-opencl-dev
  # The Python package (docs/python.md), for Debian's python3 with numpy.
  pybind11-dev python3-dev python3-numpy)
# The report inlines Vega-Lite installed with `npm ci` at build time: any npm will do;
# where there is none, install Debian's (it brings nodejs).
command -v npm >/dev/null 2>&1 || packages+=(npm)
if [ "$purpose" = test ]; then
  # python3-torch: the Python package's example (examples/selection_from_torch.py) and the check of
  # the benchmark's eager peer (bench/torch_eager.py, ctest python.torch_eager).
  # Open MPI: analyze under mpirun (docs/cluster.md), built and tested on loopback.
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev python3-numpy python3-torch chromium zstd clang-format
    libopenmpi-dev openmpi-bin)
fi
if [ "$purpose" = fuzz ]; then
  packages+=(clang-14 libclang-rt-14-dev zstd)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "bootstrap: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
