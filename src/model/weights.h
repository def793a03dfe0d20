#pragma once
// Weights are non-owning views into memory-mapped checkpoint files (owned by
// io::Checkpoint). One tensor list (weight_slots) drives binding, validation and
// reporting, so no tensor name is spelled in two places.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "ops/tensor_view.h"

namespace attngeom {

struct LayerWeights {
  TensorView attn_norm;  // [hidden] stored as [1, hidden]
  TensorView q_proj;     // [heads*head_dim, hidden]
  TensorView k_proj;     // [kv_heads*head_dim, hidden]
  TensorView v_proj;     // [kv_heads*head_dim, hidden]
  TensorView o_proj;     // [hidden, heads*head_dim]
  TensorView mlp_norm;   // [1, hidden]
  TensorView gate_proj;  // [intermediate, hidden]
  TensorView up_proj;    // [intermediate, hidden]
  TensorView down_proj;  // [hidden, intermediate]
};

struct Weights {
  TensorView embed;       // [vocab, hidden]
  std::vector<LayerWeights> layers;
  TensorView final_norm;  // [1, hidden]
  TensorView lm_head;     // [vocab, hidden]; the embedding when tied
};

// One expected checkpoint tensor: its HF name, expected shape and where it binds.
struct WeightSlot {
  std::string name;
  std::vector<std::int64_t> shape;  // 1-D for norms, 2-D for matrices
  TensorView* target;
};

// Every tensor a checkpoint of `config` must contain, bound into `weights`
// (whose layers vector is sized here). Tied embeddings have no lm_head slot.
std::vector<WeightSlot> weight_slots(const ModelConfig& config, Weights& weights);

}  // namespace attngeom
