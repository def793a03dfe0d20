#pragma once
// The CPU's attention: blocked causal (optionally sliding-window, ALiBi-biased, soft-capped)
// softmax attention, threaded over heads.
// Scores are computed a block of query rows at a time, skipping fully masked keys,
// so no T x T matrix ever exists; the requested rows are handed out a block of heads at a
// time (capture_block_heads).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ops/attention_bf16.h"
#include "ops/attention_shape.h"
#include "ops/backend.h"
#include "ops/gemm.h"

namespace attngeom {

// Per-thread buffers, sized once for (threads, seq, captured rows), and the bf16 products'
// state (rounded q, k, v and oneDNN primitives), kept across layers.
struct AttentionScratch {
  static constexpr int kBlockRows = kAttentionBlockRows;
  std::vector<float> scores;    // [threads, kBlockRows, seq]
  std::vector<float> captured;  // [block heads, rows, seq] one block of heads' captured rows
  std::vector<int> order;       // [threads, seq] key indices for top-N selection
  Bf16AttentionProducts bf16;
  void reserve(int threads, int seq, std::size_t captured_floats);
};

// Token-level top-N on one probability row [count]: keeps the n largest entries (ties
// to the lower index, as docs/method.md section 2's I_N), zeroes the rest and renormalises the
// kept ones to sum 1. n <= 0 or n >= count leaves the row untouched (bitwise).
// `order` is scratch of at least `count` ints.
void keep_top_n(float* probs, int count, int n, int* order);

// q [seq, heads*head_dim], k, v [seq, kv_heads*head_dim] (q, k already rotated)
// -> out [seq, heads*head_dim]. `capture_rows` are ascending query positions; when
// non-empty, `sink` receives every head's rows, one block of heads per call, in head order. `head_gate` (empty: all
// ones) scales each head's output, as HF's multiplicative head_mask did; a gate of 0 removes the head. `head_topn`
// (empty: all keys) keeps only each query's top-N keys of that head (keep_top_n after the softmax; 0: all keys);
// captured rows are the probabilities used. `products`: kFp32 multiplies in fp32 (sgemm); kBf16 rounds q, k, v and the
// probabilities to bf16 for the two products (attention_bf16.h), the softmax staying fp32.
void causal_attention(const AttentionShape& shape, const float* q, const float* k, const float* v, float* out,
                      std::span<const int> capture_rows, const AttentionRowSink& sink, std::span<const float> head_gate,
                      AttentionScratch& scratch, std::span<const int> head_topn = {},
                      Precision products = Precision::kFp32);

}  // namespace attngeom
