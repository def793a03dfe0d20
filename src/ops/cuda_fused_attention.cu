// The CUDA backend's fused bf16 attention (ops/cuda_kernels.h fused_attention): one thread block
// per 64 query rows of one head, four warps of 16 rows each. Per tile of 64 keys the warps take
// the scores with tensor-core products (bf16 in, fp32 sums), the lanes update each row's
// running softmax (ops/attention_tiles.h), and the warps add the tile's weights times its
// values, so no score leaves the chip.
#include <cuda_bf16.h>
#include <mma.h>

#include <cstdint>

#include "ops/attention_tiles.h"
#include "ops/cuda_kernels.h"

namespace attngeom::cuda {
namespace {

using Bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

constexpr int kThreads = kFusedWarps * 32;
constexpr int kKeys = kFusedTileKeys;
constexpr int kKeyBlocks = kKeys / 16;
constexpr int kScoreLd = kKeys + kFusedPadFloat;
constexpr int kWeightLd = kKeys + kFusedPadBf16;
constexpr int kProductLd = 16 + kFusedPadFloat;
constexpr int kMaxDimBlocks = kFusedMaxHeadDim / 16;
static_assert(kFusedTileRows == kFusedTileKeys, "the Q tile passes through the K tile");

using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
using RowsA = wmma::fragment<wmma::matrix_a, 16, 16, 16, Bf16, wmma::row_major>;

// dst[r, :] = src row first + r for r < rows (zero from row `limit` on); rows of d bf16, 16
// bytes at a time.
__device__ void load_rows(Bf16* dst, int ld, const Bf16* src, long long stride, int first, int rows, int limit, int d) {
  const int chunks = d / 8;
  for (int i = threadIdx.x; i < rows * chunks; i += blockDim.x) {
    const int r = i / chunks, c = i % chunks;
    uint4 value = make_uint4(0u, 0u, 0u, 0u);
    if (first + r < limit) value = *reinterpret_cast<const uint4*>(src + (first + r) * stride + c * 8);
    *reinterpret_cast<uint4*>(dst + r * ld + c * 8) = value;
  }
}

__global__ void __launch_bounds__(kThreads) fused_attention_kernel(FusedAttention a) {
  extern __shared__ __align__(128) unsigned char shared[];
  const int d = a.head_dim;
  const int ld = d + kFusedPadBf16, sums_ld = d + kFusedPadFloat;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // The regions of fused_attention_shared_bytes(d), each a multiple of 128 bytes long.
  unsigned char* at = shared;
  Bf16* k_tile = reinterpret_cast<Bf16*>(at);  // [64, ld]
  at += kKeys * ld * sizeof(Bf16);
  Bf16* v_tile = reinterpret_cast<Bf16*>(at);  // [64, ld]
  at += kKeys * ld * sizeof(Bf16);
  float* scores = reinterpret_cast<float*>(at) + warp * 16 * kScoreLd;  // [16, kScoreLd] per warp
  at += kFusedWarps * 16 * kScoreLd * sizeof(float);
  Bf16* weights = reinterpret_cast<Bf16*>(at) + warp * 16 * kWeightLd;  // [16, kWeightLd] per warp
  at += kFusedWarps * 16 * kWeightLd * sizeof(Bf16);
  float* sums = reinterpret_cast<float*>(at) + warp * 16 * sums_ld;  // [16, sums_ld] per warp
  at += kFusedWarps * 16 * sums_ld * sizeof(float);
  float* product = reinterpret_cast<float*>(at) + warp * 16 * kProductLd;  // [16, kProductLd] per warp

  // The longest rows first, so that the last blocks to start are short.
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kFusedTileRows;
  const int head = blockIdx.y;
  const int kv = head / (a.heads / a.kv_heads);
  const AlibiHead alibi{a.alibi_slopes != nullptr ? a.alibi_slopes[head] : 0.0f, a.alibi_before_scale};
  const long long q_stride = static_cast<long long>(a.heads) * d;
  const long long kv_stride = static_cast<long long>(a.kv_heads) * d;
  const Bf16* q = reinterpret_cast<const Bf16*>(a.q) + static_cast<long long>(head) * d;
  const Bf16* k = reinterpret_cast<const Bf16*>(a.k) + static_cast<long long>(kv) * d;
  const Bf16* v = reinterpret_cast<const Bf16*>(a.v) + static_cast<long long>(kv) * d;

  // The warp's 16 query rows stay in registers, d / 16 fragments, staged through the K tile.
  load_rows(k_tile, ld, q, q_stride, q0, kFusedTileRows, a.seq, d);
  for (int i = lane; i < 16 * sums_ld; i += 32) sums[i] = 0.0f;
  __syncthreads();
  RowsA qa[kMaxDimBlocks];
#pragma unroll
  for (int c = 0; c < kMaxDimBlocks; ++c) {
    if (c < d / 16) wmma::load_matrix_sync(qa[c], k_tile + warp * 16 * ld + c * 16, ld);
  }

  // Each lane keeps half of one row: row `row` of the warp's 16, keys half * 32 + [0, 32) of a tile.
  const int row = lane / 2, half = lane % 2;
  const int query = q0 + warp * 16 + row;
  RunningSoftmax softmax;
  const int end = q0 + kFusedTileRows < a.seq ? q0 + kFusedTileRows : a.seq;  // keys after end - 1 are masked for all
  for (int k0 = first_visible_key(q0, a.window); k0 < end; k0 += kKeys) {
    __syncthreads();  // every warp is done with the previous tile (and with Q in the K tile)
    load_rows(k_tile, ld, k, kv_stride, k0, kKeys, end, d);
    load_rows(v_tile, ld, v, kv_stride, k0, kKeys, end, d);
    __syncthreads();

    // scores[16, 64] = Q[warp's rows] K[tile]^T
    Accumulator blocks[kKeyBlocks];
#pragma unroll
    for (int n = 0; n < kKeyBlocks; ++n) wmma::fill_fragment(blocks[n], 0.0f);
#pragma unroll
    for (int c = 0; c < kMaxDimBlocks; ++c) {
      if (c >= d / 16) break;
#pragma unroll
      for (int n = 0; n < kKeyBlocks; ++n) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, Bf16, wmma::col_major> kb;
        wmma::load_matrix_sync(kb, k_tile + n * 16 * ld + c * 16, ld);
        wmma::mma_sync(blocks[n], qa[c], kb, blocks[n]);
      }
    }
#pragma unroll
    for (int n = 0; n < kKeyBlocks; ++n)
      wmma::store_matrix_sync(scores + n * 16, blocks[n], kScoreLd, wmma::mem_row_major);
    __syncwarp();

    float* mine = scores + row * kScoreLd + half * 32;
    float tile_max = -HUGE_VALF;
    for (int j = 0; j < 32; ++j) {
      mine[j] = visible_score(mine[j], query, k0 + half * 32 + j, a.seq, a.window, a.scale, a.softcap, alibi);
      tile_max = fmaxf(tile_max, mine[j]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float factor = softmax.raise_max(tile_max);
    Bf16* my_weights = weights + row * kWeightLd + half * 32;
    for (int j = 0; j < 32; ++j) my_weights[j] = __float2bfloat16_rn(softmax.weight(mine[j]));
    __syncwarp();

    // sums[16, d] = factor * sums + weights[16, 64] V[tile], 16 columns at a time
    RowsA wa[kKeyBlocks];
#pragma unroll
    for (int n = 0; n < kKeyBlocks; ++n) wmma::load_matrix_sync(wa[n], weights + n * 16, kWeightLd);
    for (int c = 0; c < d / 16; ++c) {
      Accumulator acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int n = 0; n < kKeyBlocks; ++n) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, Bf16, wmma::row_major> vb;
        wmma::load_matrix_sync(vb, v_tile + n * 16 * ld + c * 16, ld);
        wmma::mma_sync(acc, wa[n], vb, acc);
      }
      wmma::store_matrix_sync(product, acc, kProductLd, wmma::mem_row_major);
      __syncwarp();
      for (int j = half * 8; j < half * 8 + 8; ++j) {
        float& s = sums[row * sums_ld + c * 16 + j];
        s = s * factor + product[row * kProductLd + j];
      }
      __syncwarp();
    }
  }

  const double total = softmax.sum + __shfl_xor_sync(0xffffffffu, softmax.sum, 1);
  const float inverse = query < a.seq ? static_cast<float>(1.0 / total) : 0.0f;
  // The warp writes its rows one at a time, its lanes along the row.
  for (int r = 0; r < 16; ++r) {
    const float row_inverse = __shfl_sync(0xffffffffu, inverse, 2 * r);
    const int i = q0 + warp * 16 + r;
    if (i >= a.seq) break;
    float* out = a.out + i * q_stride + static_cast<long long>(head) * d;
    for (int j = lane; j < d; j += 32) out[j] = sums[r * sums_ld + j] * row_inverse;
  }
}

}  // namespace

cudaError_t allow_fused_attention(std::size_t shared_limit) {
  return cudaFuncSetAttribute(fused_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(shared_limit));
}

cudaError_t fused_attention(const FusedAttention& a, cudaStream_t stream) {
  const std::size_t bytes = fused_attention_shared_bytes(a.head_dim);
  const dim3 grid(static_cast<unsigned>((a.seq + kFusedTileRows - 1) / kFusedTileRows), static_cast<unsigned>(a.heads));
  fused_attention_kernel<<<grid, kThreads, bytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
