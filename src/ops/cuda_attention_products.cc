#include "ops/cuda_attention_products.h"

#include "ops/cublas_library.h"
#include "ops/cuda_memory.h"

namespace attngeom::cuda {

namespace {
constexpr MemorySpace kCuda = MemorySpace::kCuda;
}  // namespace

void score_products(cublasHandle_t blas, const AttentionCall& call, const AttentionBlock& b, int heads,
                    const std::uint16_t* q_bf16, const std::uint16_t* k_bf16, float* scores) {
  const AttentionShape& s = call.shape;
  const int group = s.heads / s.kv_heads;
  const int d = s.head_dim;
  const long long q_stride = static_cast<long long>(s.heads) * d, kv_stride = static_cast<long long>(s.kv_heads) * d;
  const long long head_scores = static_cast<long long>(b.rows) * b.keys;
  const float zero = 0.0f;
  for (int j = 0; j < group; ++j) {
    const long long q_offset = b.r0 * q_stride + static_cast<long long>(b.head + j) * d;
    const long long k_offset = b.key0 * kv_stride + static_cast<long long>(b.head / group) * d;
    float* c = scores + j * head_scores;
    if (k_bf16 != nullptr) {
      check(cublas_library().gemm_strided_batched_ex(
                blas, CUBLAS_OP_T, CUBLAS_OP_N, b.keys, b.rows, d, &s.scale, k_bf16 + k_offset, CUDA_R_16BF,
                static_cast<int>(kv_stride), d, q_bf16 + q_offset, CUDA_R_16BF, static_cast<int>(q_stride),
                static_cast<long long>(group) * d, &zero, c, CUDA_R_32F, b.keys, group * head_scores, heads / group,
                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx (attention scores, bf16)");
    } else {
      check(cublas_library().sgemm_strided_batched(
                blas, CUBLAS_OP_T, CUBLAS_OP_N, b.keys, b.rows, d, &s.scale, call.k->data(kCuda) + k_offset,
                static_cast<int>(kv_stride), d, call.q->data(kCuda) + q_offset, static_cast<int>(q_stride),
                static_cast<long long>(group) * d, &zero, c, b.keys, group * head_scores, heads / group),
            "cublasSgemmStridedBatched (attention scores)");
    }
  }
}

void weighted_sums(cublasHandle_t blas, const AttentionCall& call, const AttentionBlock& b, int heads,
                   const float* probs, const std::uint16_t* probs_bf16, const std::uint16_t* v_bf16) {
  const AttentionShape& s = call.shape;
  const int group = s.heads / s.kv_heads;
  const int d = s.head_dim;
  const long long q_stride = static_cast<long long>(s.heads) * d, kv_stride = static_cast<long long>(s.kv_heads) * d;
  const long long head_scores = static_cast<long long>(b.rows) * b.keys;
  const float one = 1.0f, zero = 0.0f;
  for (int j = 0; j < group; ++j) {
    const long long v_offset = b.key0 * kv_stride + static_cast<long long>(b.head / group) * d;
    float* out = call.out->data(kCuda) + b.r0 * q_stride + static_cast<long long>(b.head + j) * d;
    if (probs_bf16 != nullptr) {
      check(cublas_library().gemm_strided_batched_ex(
                blas, CUBLAS_OP_N, CUBLAS_OP_N, d, b.rows, b.keys, &one, v_bf16 + v_offset, CUDA_R_16BF,
                static_cast<int>(kv_stride), d, probs_bf16 + j * head_scores, CUDA_R_16BF, b.keys, group * head_scores,
                &zero, out, CUDA_R_32F, static_cast<int>(q_stride), static_cast<long long>(group) * d, heads / group,
                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx (attention outputs, bf16)");
    } else {
      check(cublas_library().sgemm_strided_batched(
                blas, CUBLAS_OP_N, CUBLAS_OP_N, d, b.rows, b.keys, &one, call.v->data(kCuda) + v_offset,
                static_cast<int>(kv_stride), d, probs + j * head_scores, b.keys, group * head_scores, &zero, out,
                static_cast<int>(q_stride), static_cast<long long>(group) * d, heads / group),
            "cublasSgemmStridedBatched (attention outputs)");
    }
  }
}

}  // namespace attngeom::cuda
