#!/usr/bin/env bash
# make test-cuda: builds attngeom with its CUDA backend (ATTNGEOM_CUDA=ON) in build-cuda/ and
# runs the GPU tests (ctest label cuda; docs/gpu.md). On Debian the packages come from
# scripts/bootstrap.sh; on a GPU machine without Debian's registry, from .gpu/ (made by
# scripts/gpu-bundle.sh), unpacked into a prefix, with the tests that need tools absent there
# (clang-format, node) configured but not run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build-cuda}
JOBS=${JOBS:-$(nproc)}
command -v nvcc >/dev/null 2>&1 || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH=$PATH:/usr/local/cuda/bin
options=(-DATTNGEOM_TESTS=ON -DATTNGEOM_BENCH=OFF -DATTNGEOM_CUDA=ON)
distribution=$(. /etc/os-release 2>/dev/null && echo "${ID:-}")
if [ -d .gpu/debs ] && { [ "$distribution" != debian ] || [ -n "${ATTNGEOM_USE_BUNDLE:-}" ]; }; then
  R=/opt/debroot
  rm -rf $R && mkdir -p $R /tmp/attngeom-bin
  for f in .gpu/debs/*.deb; do dpkg -x "$f" $R; done
  [ -e $R/usr/bin/pkg-config ] || ln -s pkgconf $R/usr/bin/pkg-config
  ln -s mpirun.openmpi $R/usr/bin/mpirun
  # zlib1g-dev's libz.so points at Debian's absolute /lib path, absent on another distribution
  # (CMake then picks the non-PIC libz.a, which the Python module cannot link): use the host's zlib.
  [ -e $R/usr/lib/x86_64-linux-gnu/libz.so ] || ln -sf /lib/x86_64-linux-gnu/libz.so.1 $R/usr/lib/x86_64-linux-gnu/libz.so
  printf '#!/bin/sh\ntar xf %s\n' "$PWD/.gpu/node_modules.tar" > /tmp/attngeom-bin/npm && chmod +x /tmp/attngeom-bin/npm
  # The prefix's libraries serve attngeom and the prefix's own programs alone: on the loader's
  # path for every program, they would shadow the host's newer ones (a host cmake linked with a
  # newer libssl then fails). So attngeom's binaries name them in DT_RPATH, which their
  # libraries' dependencies follow too, and each program of the prefix becomes a wrapper that
  # sets the loader's path for it and what it starts (mpirun's ranks among them).
  libs=$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu
  mkdir $R/usr/bin/.real && mv $R/usr/bin/* $R/usr/bin/.real/
  for program in $R/usr/bin/.real/*; do
    printf '#!/bin/sh\nexport LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\nexec %s "$@"\n' \
      "$libs" "$program" > "$R/usr/bin/${program##*/}"
    chmod +x "$R/usr/bin/${program##*/}"
  done
  export PATH=/tmp/attngeom-bin:$R/usr/bin:$PATH PKG_CONFIG_SYSROOT_DIR=$R
  # Open MPI's libraries and plugins name Debian's folders in their DT_RUNPATH, which hides the
  # binary's DT_RPATH from their own dependencies: they name the prefix's folders instead.
  find $R/usr/lib -type f -name '*.so*' | while read -r lib; do
    runpath=$(patchelf --print-rpath "$lib" 2>/dev/null) || continue
    [ -n "$runpath" ] || continue
    moved=$(tr : '\n' <<<"$runpath" | grep '^/usr/' | sed "s|^|$R|" | paste -sd:)
    patchelf --set-rpath "${moved:+$moved:}$libs" "$lib"
  done
  export PKG_CONFIG_PATH=$R/usr/lib/x86_64-linux-gnu/pkgconfig:$R/usr/share/pkgconfig
  rpath="-Wl,--disable-new-dtags -Wl,-rpath,$libs"
  # Open MPI moved into the prefix: its wrappers and mpirun find their files under OPAL_PREFIX,
  # PMIx its plugins under the component path. A launch on this one machine needs no ssh, but
  # Open MPI checks that a remote agent exists.
  export OPAL_PREFIX=$R/usr PMIX_MCA_mca_base_component_path=$R/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
  command -v ssh >/dev/null 2>&1 || command -v rsh >/dev/null 2>&1 || export OMPI_MCA_plm_rsh_agent=false
  # Debian keeps some headers (openssl/opensslconf.h) in the multiarch folder, which the
  # compilers search only under /usr.
  export CPATH=$R/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}
  python=$(command -v python3)
  options+=(-DCMAKE_PREFIX_PATH=$R/usr -DOPENSSL_ROOT_DIR=$R/usr -DATTNGEOM_PYTHON="$python"
    -DMPI_C_COMPILER=$R/usr/bin/mpicc.openmpi
    -DCMAKE_EXE_LINKER_FLAGS="$rpath" -DCMAKE_SHARED_LINKER_FLAGS="$rpath" -DCMAKE_MODULE_LINKER_FLAGS="$rpath"
    -DATTNGEOM_CLANG_FORMAT=/bin/true -DATTNGEOM_NODE=/bin/true)
  # The Python package for that python3 (attngeom.hf's GPU test), where it has pybind11 and headers.
  if "$python" -c 'import os, sysconfig, pybind11; assert os.path.exists(sysconfig.get_paths()["include"] + "/Python.h")' \
      2>/dev/null; then
    options+=(-DATTNGEOM_PYTHON_MODULE=ON -DPython_EXECUTABLE="$python" -Dpybind11_DIR="$("$python" -m pybind11 --cmakedir)")
  else
    options+=(-DATTNGEOM_PYTHON_MODULE=OFF)
  fi
else
  # A machine without a package registry needs .gpu/ instead (scripts/gpu-bundle.sh, on Debian).
  [ "$distribution" = debian ] || echo "test-cuda: no .gpu/debs here: the packages come from this machine's registry" >&2
  bash scripts/bootstrap.sh test
fi
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${options[@]}"
[ -n "${CONFIGURE_ONLY:-}" ] && exit 0
# What the GPU tests run: the CLI, the GPU unit tests and, where configured, the Python module.
targets=(attngeom attngeom_cuda_tests)
if cmake --build "$BUILD" --target help | grep '^_attngeom:' >/dev/null; then targets+=(_attngeom); fi
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
cd "$BUILD" && ctest -L cuda --output-on-failure -j "${CTEST_JOBS:-4}"
