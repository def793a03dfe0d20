#pragma once
// The attention core's two products in bf16 runs, one query block of one head at a time:
// scores = scale * Q K^T and out = P V, with Q, K, V and P rounded to bf16 and multiplied on
// AMX through oneDNN matmul, fp32 accumulation and fp32 results, as the linear layers are.
// The softmax between them, the captured probabilities and everything after stay fp32.
#include <cstdint>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <utility>
#include <vector>

#include "ops/attention_shape.h"

namespace attngeom {

class Bf16AttentionProducts {
 public:
  Bf16AttentionProducts();
  // Once per layer, before the heads: rounds q, k and v to bf16 (in parallel) and builds the
  // products of every block shape of s. Not thread-safe; the calls below are, one per thread.
  void prepare(const AttentionShape& shape, const float* q, const float* k, const float* v, int threads);
  // scores[rows, keys] = scale * Q[r0.., head] K[key0.., kv head]^T
  void scores(const AttentionBlock& b, float* scores, int thread);
  // out[r0.., head] = P[rows, keys] V[key0.., kv head] (out's row stride: heads * head_dim)
  void weighted_sum(const AttentionBlock& b, const float* probs, float* out, int thread);

 private:
  struct Products {
    dnnl::matmul scores, weighted_sum;
    dnnl::memory::desc q, k, s, p, v, o;
  };
  struct PerThread {
    dnnl::stream stream;
    dnnl::memory scratchpad;
    std::vector<std::uint16_t> p;  // [kAttentionBlockRows, seq] the block's probabilities in bf16
    std::vector<float> out;        // [kAttentionBlockRows, head_dim] the block's output
  };
  const Products& products(int rows, int keys);

  dnnl::engine engine_;
  AttentionShape shape_;
  std::map<std::pair<int, int>, Products> products_;  // by (rows, keys), for shape_
  std::size_t scratchpad_bytes_ = 0;                  // the most any of them needs
  // Head-major, so that every operand is dense: oneDNN runs strided bf16 operands on its
  // AVX-512 gemm, dense ones on AMX.
  std::vector<std::uint16_t> q_;      // [heads, seq, d]
  std::vector<std::uint16_t> k_, v_;  // [kv_heads, seq, d]
  std::vector<PerThread> threads_;
};

}  // namespace attngeom
