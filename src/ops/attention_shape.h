#pragma once
// The shape of one layer's attention and the query blocks the attention core works in.

#include <cstddef>
#include <span>

#include "ops/attention_tiles.h"
#include "util/gqa.h"

namespace attngeom {

struct AttentionShape {
  int seq = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int window = 0;  // 0: full causal; else query i sees keys j with 0 <= i - j < window
  float scale = 1;
  float softcap = 0;  // 0: none; else scores = softcap * tanh(scale q.k / softcap) before the mask
  // [heads] ALiBi slopes: head h's score of key j for query i gains
  // alibi_bias(slope_h, alibi_before_scale, scale, i, j) before the soft-cap; empty: none.
  std::span<const float> alibi_slopes = {};
  bool alibi_before_scale = false;  // Falcon-RW's bf16 bias, added to q.k before the scale
  AlibiHead alibi(int head) const {
    return {alibi_slopes.empty() ? 0.0f : alibi_slopes[static_cast<std::size_t>(head)], alibi_before_scale};
  }
};

// Keys visible to query row i: [first_key(i), i].
inline int first_visible_key(const AttentionShape& shape, int i) { return first_visible_key(i, shape.window); }

inline int kv_head_of(const AttentionShape& shape, int head) { return kv_head_of(head, shape.heads, shape.kv_heads); }

// Captured rows are handed out a block of heads at a time: whole kv groups, as many as keep
// the block's fp32 probabilities [heads, rows, seq] within kCaptureBlockBytes, at least one.
inline constexpr std::size_t kCaptureBlockBytes = std::size_t{64} << 20;
inline int capture_block_heads(const AttentionShape& shape, std::size_t rows) {
  const int group = shape.heads / shape.kv_heads;
  const std::size_t group_bytes =
      static_cast<std::size_t>(group) * rows * static_cast<std::size_t>(shape.seq) * sizeof(float);
  const std::size_t groups = group_bytes == 0 ? shape.kv_heads : kCaptureBlockBytes / group_bytes;
  return group * static_cast<int>(groups < 1                                          ? 1
                                  : groups < static_cast<std::size_t>(shape.kv_heads) ? groups
                                                                                      : shape.kv_heads);
}

// A GPU's attention takes as many query rows at a time as keep the fp32 scores of `heads`
// heads [heads, rows, seq] within `score_bytes`, a multiple of 64 where more, at least one.
inline std::size_t score_block_rows(std::size_t score_bytes, std::size_t heads, std::size_t seq) {
  const std::size_t rows = score_bytes / (heads * seq * sizeof(float));
  const std::size_t rounded = rows > 64 ? rows / 64 * 64 : rows;
  return rounded < 1 ? 1 : rounded < seq ? rounded : seq;
}

// Query rows are taken kAttentionBlockRows at a time; a block's keys are those visible to
// any of its rows, so fully masked keys are never touched.
inline constexpr int kAttentionBlockRows = 128;

// One query block of one head: rows [r0, r0 + rows) against keys [key0, key0 + keys).
struct AttentionBlock {
  int head = 0;
  int r0 = 0;
  int rows = 0;
  int key0 = 0;
  int keys = 0;
};

inline AttentionBlock attention_block(const AttentionShape& shape, int head, int r0) {
  const int r1 = r0 + kAttentionBlockRows < shape.seq ? r0 + kAttentionBlockRows : shape.seq;
  const int key0 = first_visible_key(shape, r0);  // keys before this are masked for every row
  return {head, r0, r1 - r0, key0, r1 - key0};    // keys after r1 - 1 are masked for every row
}

}  // namespace attngeom
