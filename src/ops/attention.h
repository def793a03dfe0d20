#pragma once
// Blocked causal (optionally sliding-window) softmax attention, threaded over heads.
// Scores are computed a block of query rows at a time, skipping fully masked keys,
// so no T x T matrix ever exists; the requested rows are handed out per head.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace attngeom {

struct AttentionShape {
  int seq = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int window = 0;  // 0: full causal; else query i sees keys j with 0 <= i - j < window
  float scale = 1;
};

// Keys visible to query row i: [first_key(i), i].
inline int first_visible_key(const AttentionShape& s, int i) {
  return s.window > 0 && i - s.window + 1 > 0 ? i - s.window + 1 : 0;
}

// Receives the captured probability rows of one head: probs [rows, seq], exact zeros
// outside the visible range. Called from worker threads, concurrently for different heads.
using AttentionRowSink = std::function<void(int head, const float* probs)>;

// Per-thread buffers, sized once for (threads, seq, captured rows).
struct AttentionScratch {
  static constexpr int kBlockRows = 64;
  std::vector<float> scores;    // [threads, kBlockRows, seq]
  std::vector<float> captured;  // [threads, rows, seq]
  void reserve(int threads, int seq, std::size_t rows);
};

// q [seq, heads*head_dim], k, v [seq, kv_heads*head_dim] (q, k already rotated)
// -> out [seq, heads*head_dim]. `capture_rows` are ascending query positions; when
// non-empty, `sink` receives each head's rows. `head_gate` (empty: all ones) scales each
// head's output, as HF's multiplicative head_mask did; a gate of 0 removes the head.
void causal_attention(const AttentionShape& shape, const float* q, const float* k, const float* v, float* out,
                      std::span<const int> capture_rows, const AttentionRowSink& sink,
                      std::span<const float> head_gate, AttentionScratch& scratch);

}  // namespace attngeom
