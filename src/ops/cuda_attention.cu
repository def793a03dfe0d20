// The CUDA backend's attention softmax (ops/cuda_kernels.h attention_softmax): one thread block
// per query row of one head, the same steps as ops/attention.cc attend_one_head.
#include <cmath>

#include "ops/attention_tiles.h"
#include "ops/cuda_block_reduce.cuh"
#include "ops/cuda_kernels.h"

namespace attngeom::cuda {
namespace {

constexpr int kThreads = 256;

// How many of row[0, count) have bits >= threshold (probabilities are >= 0, so their bit
// patterns order as the values do).
__device__ int count_at_least(const float* row, int count, std::uint32_t threshold, int* shared) {
  int n = 0;
  for (int j = threadIdx.x; j < count; j += blockDim.x) n += __float_as_uint(row[j]) >= threshold ? 1 : 0;
  return block_reduce(n, Sum{}, shared);
}

// ops/attention.h keep_top_n on row[0, count): keeps the n largest (ties to the lower index),
// zeroes the rest and renormalises the kept ones (sum in double).
__device__ void keep_top_n(float* row, int count, int n, int* shared_int, double* shared_double) {
  // The n-th largest value: the largest bit pattern t with at least n values >= t.
  std::uint32_t low = 0, high = 0x7f800000u;
  while (low < high) {
    const std::uint32_t mid = low + (high - low + 1) / 2;
    if (count_at_least(row, count, mid, shared_int) >= n) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  const std::uint32_t last_bits = low;
  const int ties_kept = n - count_at_least(row, count, last_bits + 1, shared_int);
  // The index of the ties_kept-th value equal to the n-th, in index order: each thread counts
  // the ties in its own contiguous chunk, then the chunk holding it finds it.
  __shared__ int chunk_ties[kThreads];
  __shared__ int last_index;
  const int chunk = (count + blockDim.x - 1) / blockDim.x;
  const int begin = threadIdx.x * chunk;
  const int end = begin + chunk < count ? begin + chunk : count;
  int ties = 0;
  for (int j = begin; j < end; ++j) ties += __float_as_uint(row[j]) == last_bits ? 1 : 0;
  chunk_ties[threadIdx.x] = ties;
  __syncthreads();
  int before = 0;
  for (int t = 0; t < static_cast<int>(threadIdx.x); ++t) before += chunk_ties[t];
  if (before < ties_kept && ties_kept <= before + ties) {
    int seen = before;
    for (int j = begin; j < end; ++j) {
      if (__float_as_uint(row[j]) == last_bits && ++seen == ties_kept) {
        last_index = j;
        break;
      }
    }
  }
  __syncthreads();
  const int last = last_index;
  double kept_sum = 0;
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    const std::uint32_t bits = __float_as_uint(row[j]);
    if (bits > last_bits || (bits == last_bits && j <= last)) kept_sum += row[j];
  }
  kept_sum = block_reduce(kept_sum, Sum{}, shared_double);
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    const std::uint32_t bits = __float_as_uint(row[j]);
    const bool kept = bits > last_bits || (bits == last_bits && j <= last);
    row[j] = kept ? static_cast<float>(row[j] / kept_sum) : 0.0f;
  }
  __syncthreads();
}

__global__ void softmax_kernel(SoftmaxBlock b) {
  __shared__ float shared_float[kMaxWarps];
  __shared__ double shared_double[kMaxWarps];
  __shared__ int shared_int[kMaxWarps];
  const int i = blockIdx.x;
  const int local_head = blockIdx.y;
  const int query = b.queries != nullptr ? b.queries[i] : b.r0 + i;
  float* row = b.scores + (static_cast<std::int64_t>(local_head) * b.rows + i) * b.keys;
  const int lo = first_visible_key(query, b.window) - b.key0;
  const int hi = query - b.key0 + 1;  // exclusive

  const float slope = b.alibi_slopes != nullptr ? b.alibi_slopes[b.head_begin + local_head] : 0.0f;
  float max_value = -INFINITY;
  for (int j = lo + threadIdx.x; j < hi; j += blockDim.x) {
    float s = row[j] + alibi_bias(slope, b.alibi_before_scale, b.scale, query, b.key0 + j);
    if (b.softcap > 0) s = b.softcap * tanhf(s / b.softcap);
    row[j] = s;
    max_value = s > max_value ? s : max_value;
  }
  max_value = block_reduce(max_value, Max{}, shared_float);
  double sum = 0;
  for (int j = lo + threadIdx.x; j < hi; j += blockDim.x) {
    const float e = expf(row[j] - max_value);
    row[j] = e;
    sum += e;
  }
  sum = block_reduce(sum, Sum{}, shared_double);
  const float inv = static_cast<float>(1.0 / sum);
  for (int j = lo + threadIdx.x; j < hi; j += blockDim.x) row[j] *= inv;
  const int topn = b.topn != nullptr ? b.topn[b.head_begin + local_head] : 0;
  if (topn > 0 && topn < hi - lo) {
    __syncthreads();
    keep_top_n(row + lo, hi - lo, topn, shared_int, shared_double);
  }
  for (int j = threadIdx.x; j < b.keys; j += blockDim.x) {
    if (j < lo || j >= hi) row[j] = 0.0f;
  }
  __syncthreads();

  const int captured = b.capture_index != nullptr ? b.capture_index[query] : -1;
  if (captured >= 0) {
    float* dst = b.captured + (static_cast<std::int64_t>(local_head) * b.captured_rows + captured) * b.seq;
    for (int k = threadIdx.x; k < b.seq; k += blockDim.x) {
      dst[k] = k >= b.key0 && k < b.key0 + b.keys ? row[k - b.key0] : 0.0f;
    }
  }
  if (b.probs_bf16 != nullptr) {
    std::uint16_t* dst = b.probs_bf16 + (static_cast<std::int64_t>(local_head) * b.rows + i) * b.keys;
    for (int j = threadIdx.x; j < b.keys; j += blockDim.x) dst[j] = bf16_bits(row[j]);
  }
}

}  // namespace

cudaError_t attention_softmax(const SoftmaxBlock& block, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(block.rows), static_cast<unsigned>(block.heads));
  softmax_kernel<<<grid, kThreads, 0, stream>>>(block);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
