#pragma once
// Grouped-query attention: consecutive query heads share one key/value head.

namespace attngeom {

// The kv head that query head `head` reads, with `heads` query heads over `kv_heads`.
inline int kv_head_of(int head, int heads, int kv_heads) { return head / (heads / kv_heads); }

}  // namespace attngeom
