#include "model/weights.h"

namespace attngeom {

std::vector<WeightSlot> weight_slots(const ModelConfig& c, Weights& w) {
  const std::int64_t hidden = c.hidden;
  w.layers.assign(static_cast<std::size_t>(c.layers), LayerWeights{});
  std::vector<WeightSlot> slots;
  slots.push_back({"model.embed_tokens.weight", {c.vocab, hidden}, &w.embed});
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights& lw = w.layers[static_cast<std::size_t>(l)];
    slots.push_back({p + "input_layernorm.weight", {hidden}, &lw.attn_norm});
    slots.push_back({p + "self_attn.q_proj.weight", {c.q_dim(), hidden}, &lw.q_proj});
    slots.push_back({p + "self_attn.k_proj.weight", {c.kv_dim(), hidden}, &lw.k_proj});
    slots.push_back({p + "self_attn.v_proj.weight", {c.kv_dim(), hidden}, &lw.v_proj});
    slots.push_back({p + "self_attn.o_proj.weight", {hidden, c.q_dim()}, &lw.o_proj});
    slots.push_back({p + "post_attention_layernorm.weight", {hidden}, &lw.mlp_norm});
    slots.push_back({p + "mlp.gate_proj.weight", {c.intermediate, hidden}, &lw.gate_proj});
    slots.push_back({p + "mlp.up_proj.weight", {c.intermediate, hidden}, &lw.up_proj});
    slots.push_back({p + "mlp.down_proj.weight", {hidden, c.intermediate}, &lw.down_proj});
  }
  slots.push_back({"model.norm.weight", {hidden}, &w.final_norm});
  if (!c.tie_embeddings) slots.push_back({"lm_head.weight", {c.vocab, hidden}, &w.lm_head});
  return slots;
}

}  // namespace attngeom
