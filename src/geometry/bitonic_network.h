#pragma once
// The compare-exchange of a bitonic sorting network, a plain function that a GPU thread block
// runs step by step (ops/cuda_block_reduce.cuh) and the CPU runs in tests. C++17.
#include <cstddef>

#include "util/host_device.h"

namespace attngeom::geometry {

// One compare-exchange of a bitonic network that sorts a power of two of values ascending:
// stage k (2, 4, ..., width), step j (k / 2, ..., 1), element i paired with i ^ j. The pairs of
// one step are disjoint, so the GPU runs each step's at once (the tail padded with +inf).
ATTNGEOM_HD inline void bitonic_exchange(double* v, std::size_t i, std::size_t j, std::size_t k) {
  const std::size_t partner = i ^ j;
  if (partner <= i) return;
  const double x = v[i];
  const double y = v[partner];
  if ((i & k) == 0 ? y < x : x < y) {
    v[i] = y;
    v[partner] = x;
  }
}

}  // namespace attngeom::geometry
