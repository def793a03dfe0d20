#include "model/weights.h"

namespace attngeom {

std::vector<WeightSlot> weight_slots(const ModelConfig& c, Weights& w) {
  const ModelRecipe& r = c.recipe;
  const std::int64_t hidden = c.hidden;
  w.layers.assign(static_cast<std::size_t>(c.layers), LayerWeights{});
  std::vector<WeightSlot> slots;
  const std::string model = r.weight_prefix + "model.";
  slots.push_back({model + "embed_tokens.weight", {c.vocab, hidden}, &w.embed});
  // QkNorm::kPerHead shares one [head_dim] weight across heads; kWholeProjection spans them all.
  const bool per_head = r.qk_norm == QkNorm::kPerHead;
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = model + "layers." + std::to_string(l) + ".";
    LayerWeights& lw = w.layers[static_cast<std::size_t>(l)];
    const auto norm = [&](const char* name, TensorView* target) {
      if (*name != '\0') slots.push_back({p + name, {hidden}, target});
    };
    norm(r.norms.attn_input, &lw.attn_input_norm);
    norm(r.norms.attn_output, &lw.attn_output_norm);
    norm(r.norms.mlp_input, &lw.mlp_input_norm);
    norm(r.norms.mlp_output, &lw.mlp_output_norm);
    if (r.qk_norm != QkNorm::kNone) {
      slots.push_back({p + "self_attn.q_norm.weight", {per_head ? c.head_dim : c.q_dim()}, &lw.q_norm});
      slots.push_back({p + "self_attn.k_norm.weight", {per_head ? c.head_dim : c.kv_dim()}, &lw.k_norm});
    }
    slots.push_back({p + "self_attn.q_proj.weight", {c.q_dim(), hidden}, &lw.q_proj});
    slots.push_back({p + "self_attn.k_proj.weight", {c.kv_dim(), hidden}, &lw.k_proj});
    slots.push_back({p + "self_attn.v_proj.weight", {c.kv_dim(), hidden}, &lw.v_proj});
    slots.push_back({p + "self_attn.o_proj.weight", {hidden, c.q_dim()}, &lw.o_proj});
    if (r.qkv_bias) {
      slots.push_back({p + "self_attn.q_proj.bias", {c.q_dim()}, &lw.q_bias});
      slots.push_back({p + "self_attn.k_proj.bias", {c.kv_dim()}, &lw.k_bias});
      slots.push_back({p + "self_attn.v_proj.bias", {c.kv_dim()}, &lw.v_bias});
    }
    if (r.o_bias) slots.push_back({p + "self_attn.o_proj.bias", {hidden}, &lw.o_bias});
    slots.push_back({p + "mlp.gate_proj.weight", {c.intermediate, hidden}, &lw.gate_proj});
    slots.push_back({p + "mlp.up_proj.weight", {c.intermediate, hidden}, &lw.up_proj});
    slots.push_back({p + "mlp.down_proj.weight", {hidden, c.intermediate}, &lw.down_proj});
  }
  slots.push_back({model + "norm.weight", {hidden}, &w.final_norm});
  if (!c.tie_embeddings) slots.push_back({r.weight_prefix + "lm_head.weight", {c.vocab, hidden}, &w.lm_head});
  return slots;
}

}  // namespace attngeom
