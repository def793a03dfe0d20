#pragma once
// Capture is a first-class observer of the forward pass. The caller states which
// layers and query rows it wants; the engine delivers exactly those, on every path.
#include <span>
#include <vector>

namespace attngeom {

struct ForwardRequest {
  std::vector<int> capture_layers;  // ascending layer indices to capture
  std::vector<int> capture_rows;    // ascending query positions to capture
  std::vector<int> logit_rows;      // positions whose logits are computed (any order)
  std::vector<float> head_gates;    // [layers, heads] output gates; empty: all ones
  std::vector<int> topn_keys;       // [layers, heads] keys kept per query (top-N, renormalised); 0 or empty: all
};

class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  // Value states of a captured layer: values [kv_heads, seq, head_dim]. Called once per
  // captured layer, before any on_attention of that layer, from the calling thread. The
  // pointer stays valid, unchanged, until that layer's last on_attention has returned.
  virtual void on_values(int layer, const float* values) = 0;
  // Attention probabilities of one head: probs [rows, seq] for the requested rows, exact
  // zeros outside the causal/window range. Called concurrently for different heads.
  virtual void on_attention(int layer, int head, const float* probs) = 0;
};

}  // namespace attngeom
