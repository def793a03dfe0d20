#pragma once
// The shape of one layer's attention and the query blocks the attention core works in.

namespace attngeom {

struct AttentionShape {
  int seq = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int window = 0;  // 0: full causal; else query i sees keys j with 0 <= i - j < window
  float scale = 1;
  float softcap = 0;  // 0: none; else scores = softcap * tanh(scale q.k / softcap) before the mask
};

// Keys visible to query row i: [first_key(i), i].
inline int first_visible_key(const AttentionShape& s, int i) {
  return s.window > 0 && i - s.window + 1 > 0 ? i - s.window + 1 : 0;
}

// The kv head that query head `head` reads (GQA: consecutive heads share one).
inline int kv_head_of(const AttentionShape& s, int head) { return head / (s.heads / s.kv_heads); }

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

inline AttentionBlock attention_block(const AttentionShape& s, int head, int r0) {
  const int r1 = r0 + kAttentionBlockRows < s.seq ? r0 + kAttentionBlockRows : s.seq;
  const int key0 = first_visible_key(s, r0);    // keys before this are masked for every row
  return {head, r0, r1 - r0, key0, r1 - key0};  // keys after r1 - 1 are masked for every row
}

}  // namespace attngeom
