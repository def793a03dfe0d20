#pragma once
// Reductions over a thread block, shared by the CUDA kernels: every thread gets the result.
// blockDim.x must be a multiple of 32; `shared` holds one value per warp.
#include <cmath>
#include <cstdint>

#include "geometry/bitonic_network.h"

namespace attngeom::cuda {

constexpr int kMaxWarps = 32;

template <class T, class Combine>
__device__ T block_reduce(T value, Combine combine, T* shared) {
  for (int offset = 16; offset > 0; offset >>= 1) value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();  // a previous reduction's readers are done with `shared`
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = value;
  __syncthreads();
  value = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) value = combine(value, shared[w]);
  return value;
}

// How many threads before this one in the block have `flag` set, and in `total` how many in
// all. blockDim.x must be a multiple of 32; `shared` holds one count per warp.
__device__ inline int block_exclusive_count(bool flag, int* shared, int& total) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  __syncthreads();  // a previous count's readers are done with `shared`
  if (lane == 0) shared[threadIdx.x / 32] = __popc(ballot);
  __syncthreads();
  int before = __popc(ballot & ((1u << lane) - 1u));
  total = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) {
    if (w < static_cast<int>(threadIdx.x / 32)) before += shared[w];
    total += shared[w];
  }
  return before;
}

struct Sum {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};
struct MaxOf {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct MinOf {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};

// The block's share of one pass over [begin, end): index p to thread p mod blockDim.x, in
// ascending order within each thread, so that neighbouring threads read neighbouring words.
#define ATTNGEOM_FOR_EACH_IN_BLOCK(p, begin, end) \
  for (int p = (begin) + static_cast<int>(threadIdx.x); p < (end); p += static_cast<int>(blockDim.x))

__device__ inline std::uint16_t bf16_bits(float value) {  // round to nearest even; NaN stays NaN
  std::uint32_t bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

// values[0..count) sorted ascending in place by the block, through the bitonic network over the
// next power of two of them, the tail padded with +inf (values holds that many).
__device__ inline void block_sort_ascending(double* values, int count) {
  int width = 1;
  while (width < count) width <<= 1;
  ATTNGEOM_FOR_EACH_IN_BLOCK(i, count, width) values[i] = HUGE_VAL;
  __syncthreads();
  for (int k = 2; k <= width; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      ATTNGEOM_FOR_EACH_IN_BLOCK(i, 0, width) {
        geometry::bitonic_exchange(values, static_cast<std::size_t>(i), static_cast<std::size_t>(j),
                                   static_cast<std::size_t>(k));
      }
      __syncthreads();
    }
  }
}

}  // namespace attngeom::cuda
