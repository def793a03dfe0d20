#include "model/weights.h"

#include <map>

#include "util/error.h"

namespace attngeom {

std::vector<WeightSlot> weight_slots(const ModelConfig& c) {
  using enum TensorRole;
  const ModelRecipe& r = c.recipe;
  const std::int64_t hidden = c.hidden;
  std::vector<WeightSlot> slots;
  const std::string model = r.weight_prefix + "model.";
  slots.push_back({model + "embed_tokens.weight", {c.vocab, hidden}, kEmbed});
  // QkNorm::kPerHead shares one [head_dim] weight across heads; kWholeProjection spans them all.
  const bool per_head = r.qk_norm == QkNorm::kPerHead;
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = model + "layers." + std::to_string(l) + ".";
    const auto add = [&](const std::string& name, std::vector<std::int64_t> shape, TensorRole role) {
      slots.push_back({p + name, std::move(shape), role, l});
    };
    const auto norm = [&](const char* name, TensorRole role) {
      if (*name != '\0') add(name, {hidden}, role);
    };
    norm(r.norms.attn_input, kAttnInputNorm);
    norm(r.norms.attn_output, kAttnOutputNorm);
    norm(r.norms.mlp_input, kMlpInputNorm);
    norm(r.norms.mlp_output, kMlpOutputNorm);
    if (r.qk_norm != QkNorm::kNone) {
      add("self_attn.q_norm.weight", {per_head ? c.head_dim : c.q_dim()}, kQNorm);
      add("self_attn.k_norm.weight", {per_head ? c.head_dim : c.kv_dim()}, kKNorm);
    }
    add("self_attn.q_proj.weight", {c.q_dim(), hidden}, kQProj);
    add("self_attn.k_proj.weight", {c.kv_dim(), hidden}, kKProj);
    add("self_attn.v_proj.weight", {c.kv_dim(), hidden}, kVProj);
    add("self_attn.o_proj.weight", {hidden, c.q_dim()}, kOProj);
    if (r.qkv_bias) {
      add("self_attn.q_proj.bias", {c.q_dim()}, kQBias);
      add("self_attn.k_proj.bias", {c.kv_dim()}, kKBias);
      add("self_attn.v_proj.bias", {c.kv_dim()}, kVBias);
    }
    if (r.o_bias) add("self_attn.o_proj.bias", {hidden}, kOBias);
    add("mlp.gate_proj.weight", {c.intermediate, hidden}, kGateProj);
    add("mlp.up_proj.weight", {c.intermediate, hidden}, kUpProj);
    add("mlp.down_proj.weight", {hidden, c.intermediate}, kDownProj);
  }
  slots.push_back({model + "norm.weight", {hidden}, kFinalNorm});
  if (!c.tie_embeddings) slots.push_back({r.weight_prefix + "lm_head.weight", {c.vocab, hidden}, kLmHead});
  return slots;
}

template <class Tensor>
Tensor& tensor_at(ModelTensors<Tensor>& t, const WeightSlot& slot) {
  using enum TensorRole;
  if (slot.layer < 0) {
    switch (slot.role) {
      case kEmbed:
        return t.embed;
      case kFinalNorm:
        return t.final_norm;
      case kLmHead:
        return t.lm_head;
      default:
        break;
    }
    ATTNGEOM_CHECK(false);
  }
  ATTNGEOM_CHECK(static_cast<std::size_t>(slot.layer) < t.layers.size());
  LayerTensors<Tensor>& l = t.layers[static_cast<std::size_t>(slot.layer)];
  switch (slot.role) {
    case kAttnInputNorm:
      return l.attn_input_norm;
    case kAttnOutputNorm:
      return l.attn_output_norm;
    case kMlpInputNorm:
      return l.mlp_input_norm;
    case kMlpOutputNorm:
      return l.mlp_output_norm;
    case kQNorm:
      return l.q_norm;
    case kKNorm:
      return l.k_norm;
    case kQProj:
      return l.q_proj;
    case kKProj:
      return l.k_proj;
    case kVProj:
      return l.v_proj;
    case kOProj:
      return l.o_proj;
    case kQBias:
      return l.q_bias;
    case kKBias:
      return l.k_bias;
    case kVBias:
      return l.v_bias;
    case kOBias:
      return l.o_bias;
    case kGateProj:
      return l.gate_proj;
    case kUpProj:
      return l.up_proj;
    case kDownProj:
      return l.down_proj;
    default:
      break;
  }
  ATTNGEOM_CHECK(false);
}

template TensorView& tensor_at(Weights&, const WeightSlot&);
template Weight& tensor_at(BackendWeights&, const WeightSlot&);

BackendWeights upload_weights(const ModelConfig& c, const Weights& stored, Backend& backend) {
  Weights source = stored;  // tensor_at reaches members through a non-const ModelTensors
  BackendWeights out;
  out.layers.resize(static_cast<std::size_t>(c.layers));
  for (const WeightSlot& slot : weight_slots(c)) tensor_at(out, slot) = backend.upload(tensor_at(source, slot));
  if (c.tie_embeddings) out.lm_head = out.embed;
  return out;
}

DType dominant_dtype(const Weights& weights) {
  std::map<DType, std::int64_t> bytes;
  const auto add = [&](const TensorView& v) {
    bytes[v.dtype] += v.numel() * static_cast<std::int64_t>(dtype_size(v.dtype));
  };
  add(weights.embed);
  for (const auto& l : weights.layers) {
    for (const TensorView* v : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj})
      add(*v);
  }
  DType best = DType::kF32;
  std::int64_t most = -1;
  for (const auto& [dtype, n] : bytes) {
    if (n > most) {
      best = dtype;
      most = n;
    }
  }
  return best;
}

}  // namespace attngeom
