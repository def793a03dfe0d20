#pragma once
// Capture asks, then observes. The caller states which layers and query rows it wants and in
// which memory; the engine hands over exactly those, with their positions and shape, on every
// path.
#include <span>
#include <vector>

#include "ops/backend.h"

namespace attngeom {

struct ForwardRequest {
  std::vector<int> capture_layers;  // ascending layer indices to capture
  std::vector<int> capture_rows;    // ascending query positions to capture
  std::vector<int> logit_rows;      // positions whose logits are computed (any order)
  std::vector<float> head_gates;    // [layers, heads] output gates; empty: all ones
  std::vector<int> topn_keys;       // [layers, heads] keys kept per query (top-N, renormalised); 0 or empty: all
  // Where captured rows and values are handed over: host memory, or the backend's own (where
  // a consumer on the same device reads them without a copy; on the CPU the two are one).
  MemorySpace capture_space = MemorySpace::kHost;
};

// The value states of one captured layer: values [kv_heads, seq, head_dim].
struct ValueStates {
  int kv_heads = 0;
  int seq = 0;
  int head_dim = 0;
  const float* values = nullptr;
  MemorySpace space = MemorySpace::kHost;
  const float* kv_head(int g) const {  // [seq, head_dim]
    return values + static_cast<std::size_t>(g) * static_cast<std::size_t>(seq) * static_cast<std::size_t>(head_dim);
  }
};

// One layer's routing in a mixture of experts (model/moe_routing.h): each token's experts and
// their weights, the tokens each expert received, and on a fast path (bf16) which tokens the
// fp32 product of the same router input would have sent to another set of experts.
struct ExpertRouting {
  int seq = 0;
  int experts = 0;
  int top_k = 0;
  std::span<const int> choices;    // [seq, top_k] the largest weight first
  std::span<const float> weights;  // [seq, top_k]
  std::span<const int> load;       // [experts] tokens routed to each expert
  std::span<const int> flipped;    // [seq] 1 where fp32 routes otherwise; empty on the fp32 path
  int flips = -1;                  // how many tokens flipped; -1 on the fp32 path
};

class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  // Called once per captured layer, before any on_attention of that layer, from the thread
  // that runs the forward pass. The values stay valid, unchanged, until that layer's last
  // on_attention has returned.
  virtual void on_values(int layer, const ValueStates& values) = 0;
  // A block of heads' captured probabilities (ops/backend.h AttentionRows), from the thread
  // that runs the forward pass, blocks in head order; valid until the call returns. The
  // observer runs its own parallel work over the block's heads and rows.
  virtual void on_attention(int layer, const AttentionRows& rows) = 0;
  // Called once per captured layer with a mixture of experts, after its last on_attention, on
  // the host; valid until the call returns. Observers of attention alone ignore it.
  virtual void on_routing(int /*layer*/, const ExpertRouting& /*routing*/) {}
  // Whether the calls of different layers may run at the same time on different threads, each
  // layer's own calls still in order and one at a time (model/observer_queue.h then analyses
  // several layers at once).
  virtual bool layers_concurrent() const { return false; }
};

}  // namespace attngeom
