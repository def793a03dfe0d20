// The pair-deviation kernels (ops/cuda_deviation_kernels.h): a first pass in which each block
// takes either one row's pairs (i, l) of a strip of kStrip Gram rows i, or every row's terms at
// kLagsPerBlock lags, one walk per thread; and a second that combines a row's parts in order.
#include "geometry/lag_walk_step.h"
#include "ops/cuda_block_reduce.cuh"
#include "ops/cuda_deviation_kernels.h"

namespace attngeom::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kStrip = 16;         // Gram rows per block of the first pass
constexpr int kLagsPerBlock = 64;  // walks per block: short rows still fill the GPU with blocks
constexpr int kTotals = 3;         // max |delta|, sum delta^2, pairs

__host__ __device__ int strips_of(int size) { return (size + kStrip - 1) / kStrip; }
__host__ __device__ int lag_blocks_of(int size) { return (size + kLagsPerBlock - 1) / kLagsPerBlock; }

struct MaxOf {
  __device__ double operator()(double a, double b) const { return a > b ? a : b; }
};

__global__ void widen_double_kernel(const float* src, double* dst, std::int64_t count) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = static_cast<double>(src[i]);
}

__global__ void norms_kernel(DeviationRows b) {
  const std::int64_t count = static_cast<std::int64_t>(b.matrices) * b.size;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t k = i % b.size;
    b.norms[i] = sqrt(b.gram[i * b.size + k]);  // (i / size) * size^2 + k * size + k
  }
}

// Block (row r, strip s, matrix m): the pairs (i, l), i in strip s, i < l < keys[r].
__global__ void partial_kernel(DeviationRows b) {
  const int r = blockIdx.x;
  const int strip = blockIdx.y;
  const int m = blockIdx.z;
  const int keys = b.keys[r];
  const std::int64_t at = static_cast<std::int64_t>(m) * b.rows + r;
  const double beta = b.beta[at];
  const double rho_0 = b.rho_0[at];
  const double* gram = b.gram + static_cast<std::int64_t>(m) * b.size * b.size;
  const double* norms = b.norms + static_cast<std::int64_t>(m) * b.size;
  double max_abs = 0.0;
  double sum_sq = 0.0;
  double pairs = 0.0;  // exact up to 2^53
  const int end = min((strip + 1) * kStrip, keys);
  for (int i = strip * kStrip; i < end; ++i) {
    const double norm_i = norms[i];
    if (norm_i == 0.0) continue;  // a zero vector has no direction
    const double* column = gram + static_cast<std::int64_t>(i) * b.size;
    for (int l = i + 1 + static_cast<int>(threadIdx.x); l < keys; l += blockDim.x) {
      const double norm_l = norms[l];
      if (norm_l == 0.0) continue;
      const double model = i == 0 ? rho_0 : exp(-beta * static_cast<double>(l - i));
      const double delta = column[l] / (norm_i * norm_l) - model;
      max_abs = fmax(max_abs, fabs(delta));
      sum_sq += delta * delta;
      pairs += 1.0;
    }
  }
  __shared__ double shared[kMaxWarps];
  max_abs = block_reduce(max_abs, MaxOf{}, shared);
  sum_sq = block_reduce(sum_sq, Sum{}, shared);
  pairs = block_reduce(pairs, Sum{}, shared);
  if (threadIdx.x == 0) {
    double* out = b.partial + (at * gridDim.y + strip) * kTotals;
    out[0] = max_abs;
    out[1] = sum_sq;
    out[2] = pairs;
  }
}

// Block (lags [kLagsPerBlock x, kLagsPerBlock (x + 1)), matrix m), a lag per thread: each row's terms at
// these lags, the rows in order of their keys so that each walk only goes on. A block whose
// first lag has no pair in a row (tau > L) skips the row together.
__global__ void lag_walk_kernel(DeviationRows b) {
  const int m = blockIdx.y;
  const int first = static_cast<int>(blockIdx.x) * kLagsPerBlock;
  const int tau = first + static_cast<int>(threadIdx.x);
  const geometry::UpperGram gram{b.gram + static_cast<std::int64_t>(m) * b.size * b.size,
                                 b.norms + static_cast<std::int64_t>(m) * b.size, b.size};
  geometry::LagWalk walk = geometry::start_lag_walk(tau);
  __shared__ double shared[kMaxWarps];
  for (int r = 0; r < b.rows; ++r) {
    const std::int64_t at = static_cast<std::int64_t>(m) * b.rows + r;
    double* out = b.partial + (at * gridDim.x + blockIdx.x) * kTotals;
    const int last = b.keys[r] - 1;
    geometry::DeviationTerms terms;
    if (first <= last) {
      if (tau < b.size) {
        geometry::walk_to(walk, gram, last);
        terms = geometry::lag_terms(walk, geometry::lag_model_cosine(tau, b.beta[at], b.rho_0[at]));
      }
      terms.max_abs = block_reduce(terms.max_abs, MaxOf{}, shared);
      terms.sum_sq = block_reduce(terms.sum_sq, Sum{}, shared);
      terms.pairs = block_reduce(terms.pairs, Sum{}, shared);
    }
    if (threadIdx.x == 0) {
      out[0] = terms.max_abs;
      out[1] = terms.sum_sq;
      out[2] = terms.pairs;
    }
  }
}

// Block (row r, matrix m): its `parts` partial terms combined.
__global__ void totals_kernel(DeviationRows b, int parts, double* totals) {
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.y) * b.rows + blockIdx.x;
  const double* partial = b.partial + at * parts * kTotals;
  double max_abs = 0.0;
  double sum_sq = 0.0;
  double pairs = 0.0;
  for (int s = static_cast<int>(threadIdx.x); s < parts; s += blockDim.x) {
    max_abs = fmax(max_abs, partial[s * kTotals]);
    sum_sq += partial[s * kTotals + 1];
    pairs += partial[s * kTotals + 2];
  }
  __shared__ double shared[kMaxWarps];
  max_abs = block_reduce(max_abs, MaxOf{}, shared);
  sum_sq = block_reduce(sum_sq, Sum{}, shared);
  pairs = block_reduce(pairs, Sum{}, shared);
  if (threadIdx.x == 0) {
    totals[at * kTotals] = max_abs;
    totals[at * kTotals + 1] = sum_sq;
    totals[at * kTotals + 2] = pairs;
  }
}

}  // namespace

cudaError_t widen_to_double(const float* src, double* dst, std::int64_t count, cudaStream_t stream) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  widen_double_kernel<<<static_cast<int>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16), kThreads, 0,
                        stream>>>(src, dst, count);
  return cudaGetLastError();
}

std::int64_t deviation_partial_count(int size, int rows) {
  return static_cast<std::int64_t>(rows) * strips_of(size) * kTotals;
}

cudaError_t cosine_deviation_totals(const DeviationRows& batch, DeviationPass pass, double* totals,
                                    cudaStream_t stream) {
  const int strips = strips_of(batch.size);
  if (batch.rows < 1 || batch.matrices < 1 || batch.matrices > 65535 || strips > 65535) return cudaErrorInvalidValue;
  const std::int64_t count = static_cast<std::int64_t>(batch.matrices) * batch.size;
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  norms_kernel<<<static_cast<int>(blocks < 65535 ? blocks : 65535), kThreads, 0, stream>>>(batch);
  int parts = strips;
  if (pass == DeviationPass::kLagWalk) {
    parts = lag_blocks_of(batch.size);
    lag_walk_kernel<<<dim3(parts, batch.matrices), kLagsPerBlock, 0, stream>>>(batch);
  } else {
    partial_kernel<<<dim3(batch.rows, strips, batch.matrices), kThreads, 0, stream>>>(batch);
  }
  totals_kernel<<<dim3(batch.rows, batch.matrices), kThreads, 0, stream>>>(batch, parts, totals);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
