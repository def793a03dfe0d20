#pragma once
// Weights are non-owning views into memory-mapped checkpoint files (owned by
// io::Checkpoint). One tensor list (weight_slots) drives binding, validation and
// reporting, so no tensor name is spelled in two places. Which optional tensors exist
// (norm slots, q/k norms, biases) is the recipe's choice; an absent one has null data.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "ops/tensor_view.h"

namespace attngeom {

struct LayerWeights {
  TensorView attn_input_norm;   // [hidden] stored as [1, hidden]; the four norm slots: NormNames
  TensorView attn_output_norm;  // [1, hidden]
  TensorView mlp_input_norm;    // [1, hidden]
  TensorView mlp_output_norm;   // [1, hidden]
  TensorView q_norm;            // [1, head_dim] per head, or [1, heads*head_dim] over the projection
  TensorView k_norm;            // [1, head_dim] per head, or [1, kv_heads*head_dim]
  TensorView q_proj;            // [heads*head_dim, hidden]
  TensorView k_proj;            // [kv_heads*head_dim, hidden]
  TensorView v_proj;            // [kv_heads*head_dim, hidden]
  TensorView o_proj;            // [hidden, heads*head_dim]
  TensorView q_bias;            // [1, heads*head_dim]
  TensorView k_bias;            // [1, kv_heads*head_dim]
  TensorView v_bias;            // [1, kv_heads*head_dim]
  TensorView o_bias;            // [1, hidden]
  TensorView gate_proj;         // [intermediate, hidden]
  TensorView up_proj;           // [intermediate, hidden]
  TensorView down_proj;         // [hidden, intermediate]
};

struct Weights {
  TensorView embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  TensorView final_norm;  // [1, hidden]
  TensorView lm_head;     // [vocab, hidden]; the embedding when tied
};

inline bool present(const TensorView& v) { return v.data != nullptr; }

// One expected checkpoint tensor: its HF name, expected shape and where it binds.
struct WeightSlot {
  std::string name;
  std::vector<std::int64_t> shape;  // 1-D for norms and biases, 2-D for matrices
  TensorView* target;
};

// Every tensor a checkpoint of `config` must contain, bound into `weights`
// (whose layers vector is sized here). Tied embeddings have no lm_head slot.
std::vector<WeightSlot> weight_slots(const ModelConfig& config, Weights& weights);

}  // namespace attngeom
