#pragma once
// The two products of attention by query blocks on the GPU (ops/cuda_backend.cc), each one
// cuBLAS strided batch per position in the kv group (heads h = g * group + j share kv head g):
// true fp32 products of the call's buffers, or bf16 ones with fp32 sums where bf16 operands
// (bits, laid out as the buffers) are given. A block is heads [block.head, block.head + heads),
// query rows block.r0 + [0, block.rows) and keys block.key0 + [0, block.keys).
#include <cublas_v2.h>

#include <cstdint>

#include "ops/backend.h"

namespace attngeom::cuda {

// scores[h - block.head, i, j] = scale * q[r0 + i, h] . k[key0 + j, kv(h)]: in bf16 (k_bf16
// given) with q's rows those of q_bf16 [*, heads * head_dim], else call.q and call.k in fp32.
void score_products(cublasHandle_t blas, const AttentionCall& call, const AttentionBlock& block, int heads,
                    const std::uint16_t* q_bf16, const std::uint16_t* k_bf16, float* scores);

// call.out[r0 + i, h] = sum_j p[h - block.head, i, j] v[key0 + j, kv(h)]: p from probs_bf16
// times v_bf16 when given, else probs times call.v in fp32.
void weighted_sums(cublasHandle_t blas, const AttentionCall& call, const AttentionBlock& block, int heads,
                   const float* probs, const std::uint16_t* probs_bf16, const std::uint16_t* v_bf16);

}  // namespace attngeom::cuda
