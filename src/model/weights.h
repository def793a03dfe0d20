#pragma once
// A model's tensors: the checkpoint's views into memory-mapped files (owned by
// io::Checkpoint), or a backend's copies of them. One tensor list (weight_slots) drives
// binding, validation, reporting and the upload to a backend, so no tensor name is spelled
// in two places. Which optional tensors exist (norm slots, q/k norms, biases) is the recipe's
// choice; an absent one is empty. A fused checkpoint tensor (GPT-NeoX's query_key_value) is
// split on the host at bind time into the separate tensors the forward pass reads
// (arrange_weights, which also reorders rows where the forward pass needs another layout), held
// by ModelTensors::derived.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "ops/backend.h"
#include "ops/tensor_view.h"

namespace attngeom {

// One expert of a mixture: a gated MLP down(act(gate(h)) * up(h)) (Mixtral's w1, w3, w2), of
// the experts' width MoeRecipe::intermediate.
template <class Tensor>
struct ExpertTensors {
  Tensor gate_proj;  // [intermediate, hidden]
  Tensor up_proj;    // [intermediate, hidden]
  Tensor down_proj;  // [hidden, intermediate]
};

template <class Tensor>
struct LayerTensors {
  Tensor attn_input_norm;       // [hidden] stored as [1, hidden]; the four norm slots: NormNames
  Tensor attn_input_norm_bias;  // [1, hidden] LayerNorm families
  Tensor attn_output_norm;      // [1, hidden]
  Tensor mlp_input_norm;        // [1, hidden]
  Tensor mlp_input_norm_bias;   // [1, hidden] LayerNorm families
  Tensor mlp_output_norm;       // [1, hidden]
  Tensor q_norm;                // [1, head_dim] per head, or [1, heads*head_dim] over the projection
  Tensor k_norm;                // [1, head_dim] per head, or [1, kv_heads*head_dim]
  Tensor q_proj;                // [heads*head_dim, hidden]
  Tensor k_proj;                // [kv_heads*head_dim, hidden]
  Tensor v_proj;                // [kv_heads*head_dim, hidden]
  Tensor o_proj;                // [hidden, heads*head_dim]
  Tensor q_bias;                // [1, heads*head_dim]
  Tensor k_bias;                // [1, kv_heads*head_dim]
  Tensor v_bias;                // [1, kv_heads*head_dim]
  Tensor o_bias;                // [1, hidden]
  Tensor qkv_proj;              // [q_dim + 2*kv_dim, hidden] fused as stored (TensorNames::qkv_per_group, qkv_concat)
  Tensor qkv_bias;              // [1, q_dim + 2*kv_dim]
  Tensor gate_up_proj;          // [2*intermediate, hidden] fused as stored (TensorNames::gate_up)
  Tensor gate_proj;             // [intermediate, hidden]; absent for a non-gated MLP
  Tensor up_proj;               // [intermediate, hidden]
  Tensor down_proj;             // [hidden, intermediate]
  Tensor up_bias;               // [1, intermediate] (Family::mlp_bias)
  Tensor down_bias;             // [1, hidden]
  Tensor router;                // [experts, hidden] of a sparse layer (LayerRecipe::sparse_mlp)
  std::vector<ExpertTensors<Tensor>> experts;  // [experts] of a sparse layer; else empty
  // Every expert's [gate | up] and down fused as stored (ModelRecipe::fused_experts), viewed as
  // [experts * 2 * intermediate, hidden] and [experts * hidden, intermediate].
  Tensor experts_gate_up;
  Tensor experts_down;
  // Qwen2-MoE's shared expert of a sparse layer (MoeRecipe::shared_intermediate), of that width,
  // and its gate [1, hidden], whose sigmoid scales the expert's output per token.
  ExpertTensors<Tensor> shared_expert;
  Tensor shared_expert_gate;
};

template <class Tensor>
struct ModelTensors {
  Tensor embed;            // [vocab, hidden]
  Tensor position_embed;   // [max_positions, hidden] learned absolute positions (GPT-2's wpe)
  Tensor embed_norm;       // [1, hidden] a LayerNorm on the embeddings (BLOOM), with its bias
  Tensor embed_norm_bias;  // [1, hidden]
  std::vector<LayerTensors<Tensor>> layers;
  Tensor final_norm;       // [1, hidden]
  Tensor final_norm_bias;  // [1, hidden] LayerNorm families
  Tensor lm_head;          // [vocab, hidden]; the embedding when tied
  Tensor lm_head_bias;     // [1, vocab] (Phi)
  // Host memory of tensors rearranged at bind time (split fused projections), which views
  // above may point into; shared by copies.
  std::vector<std::shared_ptr<const std::vector<std::byte>>> derived;
};

using Weights = ModelTensors<TensorView>;     // as stored in the checkpoint
using BackendWeights = ModelTensors<Weight>;  // as a backend reads them

inline bool present(const TensorView& v) { return v.data != nullptr; }

// The members of ModelTensors, then those of LayerTensors, in declaration order.
enum class TensorRole {
  kEmbed,
  kPositionEmbed,
  kEmbedNorm,
  kEmbedNormBias,
  kFinalNorm,
  kFinalNormBias,
  kLmHead,
  kLmHeadBias,
  kAttnInputNorm,
  kAttnInputNormBias,
  kAttnOutputNorm,
  kMlpInputNorm,
  kMlpInputNormBias,
  kMlpOutputNorm,
  kQNorm,
  kKNorm,
  kQProj,
  kKProj,
  kVProj,
  kOProj,
  kQBias,
  kKBias,
  kVBias,
  kOBias,
  kQkvProj,
  kQkvBias,
  kGateUpProj,
  kGateProj,
  kUpProj,
  kDownProj,
  kUpBias,
  kDownBias,
  kRouter,
  kExpertGate,  // ExpertTensors, with WeightSlot::expert
  kExpertUp,
  kExpertDown,
  kExpertsGateUp,  // 3-D: [experts, 2 * intermediate, hidden]
  kExpertsDown,    // 3-D: [experts, hidden, intermediate]
  kSharedExpertGateProj,
  kSharedExpertUpProj,
  kSharedExpertDownProj,
  kSharedExpertGate,
};

// One expected checkpoint tensor: its HF name, expected shape and where it lives in a
// ModelTensors.
struct WeightSlot {
  std::string name;
  std::vector<std::int64_t> shape;  // 1-D for norms and biases, 2-D for matrices, 3-D for fused experts
  TensorRole role = TensorRole::kEmbed;
  int layer = -1;   // -1 for the model-level roles
  int expert = -1;  // the expert of kExpert* roles
  // Not in the checkpoint: a weight of ones made at load (unit_weight), the weight of a norm
  // without one (Family::norm_affine).
  bool unit = false;
};

// Every tensor a checkpoint of `config` must contain. Tied embeddings have no lm_head slot.
std::vector<WeightSlot> weight_slots(const ModelConfig& config);

// A unit slot's weight: F32 ones of its shape, in memory appended to `derived`.
TensorView unit_weight(const WeightSlot& slot, std::vector<std::shared_ptr<const std::vector<std::byte>>>& derived);

// The tensor of `tensors` that `slot` names; tensors.layers must be sized to the config's.
template <class Tensor>
Tensor& tensor_at(ModelTensors<Tensor>& tensors, const WeightSlot& slot);

// Rearranges `weights` (bound from the checkpoint) into the layout the forward pass reads,
// on the host into weights.derived: Conv1D matrices [in, out] transposed to [out, in] (GPT-2),
// then each fused q/k/v projection split into q_proj, k_proj, v_proj (and its bias into
// q/k/v_bias): GPT-NeoX's per-head [q, k, v] blocks, GPT-2's and Phi-3's consecutive [q | k | v];
// Phi-3's gate_up_proj into gate_proj and up_proj; fused experts (transformers 5.x's
// gate_up_proj and down_proj) into each expert's gate_proj, up_proj and down_proj, as views into
// the stored tensors (each expert's rows are contiguous there; nothing is copied); GPT-J's q_proj
// and k_proj rows reordered from interleaved RoPE pairs to halves (ModelRecipe::interleaved_rope).
// The stored tensors it copies are not read again: their pages of the file mapping are dropped
// from the resident set (release_mapped_pages), so they are not held twice.
void arrange_weights(const ModelConfig& config, Weights& weights);

// The checkpoint's tensors as `backend` reads them, uploaded slot by slot (tied: one copy);
// a fused tensor is uploaded as its split parts, not whole.
BackendWeights upload_weights(const ModelConfig& config, const Weights& stored, Backend& backend);

// The dtype holding most bytes of the linear weights and the embedding.
DType dominant_dtype(const Weights& weights);

}  // namespace attngeom
