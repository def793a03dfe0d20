// The pair-deviation kernels (ops/cuda_deviation_kernels.h): for each strip of Gram columns, a
// pass in which each block takes either one row's pairs (i, l) of a chunk of kChunk columns l,
// or every row's terms at kLagsPerBlock lags, one walk per thread; then a pass that combines a
// row's parts in order.
#include "geometry/lag_walk_step.h"
#include "ops/cuda_block_reduce.cuh"
#include "ops/cuda_deviation_kernels.h"

namespace attngeom::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kChunk = 16;  // Gram columns per block of each row's own pass
static_assert(kDeviationStripAlign % kChunk == 0, "a chunk lies in one strip");
constexpr int kLagsPerBlock = 64;  // walks per block: short rows still fill the GPU with blocks
constexpr int kTotals = 3;         // max |delta|, sum delta^2, pairs

__host__ __device__ int chunks_of(int size) { return (size + kChunk - 1) / kChunk; }
__host__ __device__ int lag_blocks_of(int size) { return (size + kLagsPerBlock - 1) / kLagsPerBlock; }

__global__ void widen_double_kernel(const float* src, double* dst, std::int64_t count) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = static_cast<double>(src[i]);
}

__global__ void norms_kernel(const double* values, std::int64_t count, int dim, double* norms) {
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const double* v = values + k * dim;
    double sum = 0.0;  // products of floats are exact in double
    for (int t = 0; t < dim; ++t) sum += v[t] * v[t];
    norms[k] = sqrt(sum);
  }
}

// Block (row r, chunk c of the strip's columns, matrix m): the pairs (i, l), l in the chunk,
// i < l < keys[r], a thread per i so that a column is read in order.
__global__ void each_row_kernel(DeviationRows b) {
  const int r = blockIdx.x;
  const int m = blockIdx.z;
  const int keys = b.keys[r];
  const std::int64_t at = static_cast<std::int64_t>(m) * b.rows + r;
  const double beta = b.beta[at];
  const double rho_0 = b.rho_0[at];
  const double* gram = b.gram + m * b.gram_stride;
  const double* norms = b.norms + static_cast<std::int64_t>(m) * b.size;
  double max_abs = 0.0;
  double sum_sq = 0.0;
  double pairs = 0.0;  // exact up to 2^53
  const int from = b.first + static_cast<int>(blockIdx.y) * kChunk;
  const int to = min(min(from + kChunk, b.end), keys);
  for (int l = from; l < to; ++l) {
    const double norm_l = norms[l];
    if (norm_l == 0.0) continue;  // a zero vector has no direction
    const double* column = gram + static_cast<std::int64_t>(l - b.first) * b.end;
    for (int i = static_cast<int>(threadIdx.x); i < l; i += blockDim.x) {
      const double norm_i = norms[i];
      if (norm_i == 0.0) continue;
      const double model = i == 0 ? rho_0 : exp(-beta * static_cast<double>(l - i));
      const double delta = column[i] / (norm_i * norm_l) - model;
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
    double* out = b.partial + (at * chunks_of(b.size) + b.first / kChunk + blockIdx.y) * kTotals;
    out[0] = max_abs;
    out[1] = sum_sq;
    out[2] = pairs;
  }
}

// Block (lags [kLagsPerBlock x, kLagsPerBlock (x + 1)), matrix m), a lag per thread: its walk
// goes on through the strip, giving their terms at these lags to the rows whose last key lies
// in it, in order of their keys. A block whose first lag has no pair in a row (tau > L) skips
// the row together.
__global__ void lag_walk_kernel(DeviationRows b) {
  const int m = blockIdx.y;
  const int first_lag = static_cast<int>(blockIdx.x) * kLagsPerBlock;
  const int tau = first_lag + static_cast<int>(threadIdx.x);
  const geometry::UpperGram gram{b.gram + m * b.gram_stride, b.norms + static_cast<std::int64_t>(m) * b.size, b.end,
                                 b.first};
  geometry::LagWalk* stored = b.walks + static_cast<std::int64_t>(m) * b.size + tau;
  geometry::LagWalk walk = b.first == 0 || tau >= b.size ? geometry::start_lag_walk(tau) : *stored;
  __shared__ double shared[kMaxWarps];
  for (int r = 0; r < b.rows && b.keys[r] <= b.end; ++r) {
    const int last = b.keys[r] - 1;
    if (last < b.first) continue;  // its terms came with an earlier strip
    const std::int64_t at = static_cast<std::int64_t>(m) * b.rows + r;
    geometry::DeviationTerms terms;
    if (first_lag <= last) {
      if (tau < b.size) {
        geometry::walk_to(walk, gram, last);
        terms = geometry::lag_terms(walk, geometry::lag_model_cosine(tau, b.beta[at], b.rho_0[at]));
      }
      terms.max_abs = block_reduce(terms.max_abs, MaxOf{}, shared);
      terms.sum_sq = block_reduce(terms.sum_sq, Sum{}, shared);
      terms.pairs = block_reduce(terms.pairs, Sum{}, shared);
    }
    if (threadIdx.x == 0) {
      double* out = b.partial + (at * gridDim.x + blockIdx.x) * kTotals;
      out[0] = terms.max_abs;
      out[1] = terms.sum_sq;
      out[2] = terms.pairs;
    }
  }
  if (tau < b.size) {
    geometry::walk_to(walk, gram, b.end - 1);
    *stored = walk;
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

cudaError_t value_norms(const double* values, std::int64_t count, int dim, double* norms, cudaStream_t stream) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  norms_kernel<<<static_cast<int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535), kThreads, 0, stream>>>(
      values, count, dim, norms);
  return cudaGetLastError();
}

std::int64_t deviation_partial_count(int size, int rows) {
  return static_cast<std::int64_t>(rows) * chunks_of(size) * kTotals;  // lag blocks are fewer than chunks
}

cudaError_t add_strip_deviations(const DeviationRows& strip, DeviationPass pass, cudaStream_t stream) {
  if (strip.rows < 1 || strip.matrices < 1 || strip.matrices > 65535 || strip.first < 0 ||
      strip.first % kDeviationStripAlign != 0 || strip.end <= strip.first || strip.end > strip.size)
    return cudaErrorInvalidValue;
  if (pass == DeviationPass::kLagWalk) {
    lag_walk_kernel<<<dim3(lag_blocks_of(strip.size), strip.matrices), kLagsPerBlock, 0, stream>>>(strip);
  } else {
    const int chunks = chunks_of(strip.end - strip.first);
    if (chunks > 65535) return cudaErrorInvalidValue;
    each_row_kernel<<<dim3(strip.rows, chunks, strip.matrices), kThreads, 0, stream>>>(strip);
  }
  return cudaGetLastError();
}

cudaError_t deviation_totals(const DeviationRows& batch, DeviationPass pass, double* totals, cudaStream_t stream) {
  if (batch.rows < 1 || batch.matrices < 1 || batch.matrices > 65535) return cudaErrorInvalidValue;
  const int parts = pass == DeviationPass::kLagWalk ? lag_blocks_of(batch.size) : chunks_of(batch.size);
  totals_kernel<<<dim3(batch.rows, batch.matrices), kThreads, 0, stream>>>(batch, parts, totals);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
