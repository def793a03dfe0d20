#!/usr/bin/env bash
# Prepares .gpu/ for `make test-cuda` on a GPU machine that has CUDA but no Debian package
# registry (docs/gpu.md): the Debian 12 packages attngeom builds and tests with (Open MPI and
# the libraries it loads among them, for the GPU's mpirun test; patchelf, to move them), and
# the three Vega builds the report inlines (npm is absent there). Run here, on Debian, after a
# build in build/ (which ran npm ci). .gpu/ is ignored by git; carry it to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu/debs
(cd .gpu/debs && apt-get download libdnnl-dev libdnnl2 ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers \
  opencl-clhpp-headers libsentencepiece-dev libsentencepiece0 sentencepiece nlohmann-json3-dev libcli11-dev \
  libfmt-dev libfmt9 libzstd-dev libzstd1 libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 \
  libutf8proc-dev libutf8proc2 libssl-dev libssl3 zlib1g-dev pkgconf pkgconf-bin libpkgconf3 libeigen3-dev \
  libgtest-dev libgmock-dev openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libevent-core-2.1-7 \
  libevent-pthreads-2.1-7 libevent-2.1-7 libfabric1 libhwloc15 libibverbs1 librdmacm1 libpmix2 libucx0 libpsm2-2 \
  libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libnuma1 libmunge2 libxnvctrl0 libpciaccess0 libltdl7 patchelf \
  >/dev/null)
(cd build/src/report/npm && tar cf "$OLDPWD/.gpu/node_modules.tar" node_modules/vega/build/vega.min.js \
  node_modules/vega-lite/build/vega-lite.min.js node_modules/vega-embed/build/vega-embed.min.js)
du -sh .gpu
