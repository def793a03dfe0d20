#include "model/weights.h"

#include <array>
#include <cstring>
#include <map>
#include <string_view>

#include "util/error.h"
#include "util/mapped_file.h"

namespace attngeom {

namespace {

// "input_layernorm.weight" -> "input_layernorm.bias"
std::string bias_of(const std::string& weight_name) {
  return weight_name.substr(0, weight_name.size() - std::string_view(".weight").size()) + ".bias";
}

}  // namespace

std::vector<WeightSlot> weight_slots(const ModelConfig& c) {
  using enum TensorRole;
  const ModelRecipe& r = c.recipe;
  const TensorNames& n = r.names;
  const std::int64_t hidden = c.hidden;
  const bool norm_bias = r.norm_kind == NormKind::kLayer && r.norm_bias;
  std::vector<WeightSlot> slots;
  const std::string root = r.weight_prefix + r.body_prefix;
  slots.push_back({root + n.embed, {c.vocab, hidden}, kEmbed});
  if (*n.position_embed != '\0') {
    slots.push_back(
        {root + n.position_embed, {std::int64_t{c.max_positions} + r.position_offset, hidden}, kPositionEmbed});
  }
  if (*n.embed_norm != '\0') {
    slots.push_back({root + n.embed_norm + ".weight", {hidden}, kEmbedNorm});
    slots.push_back({root + n.embed_norm + ".bias", {hidden}, kEmbedNormBias});
  }
  // QkNorm::kPerHead shares one [head_dim] weight across heads; kWholeProjection spans them all.
  const bool per_head = r.qk_norm == QkNorm::kPerHead;
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = root + n.layers + std::to_string(l) + ".";
    const auto add = [&](const std::string& name, std::vector<std::int64_t> shape, TensorRole role) {
      slots.push_back({p + name, std::move(shape), role, l});
    };
    // A LayerNorm has a bias beside its weight unless the family's have none (input norms only:
    // post-norms are RMS families').
    const auto norm = [&](const char* name, TensorRole role, TensorRole bias_role) {
      if (*name == '\0') return;
      add(name, {hidden}, role);
      slots.back().unit = !r.norm_affine;
      if (norm_bias && bias_role != role) add(bias_of(name), {hidden}, bias_role);
    };
    // A projection [rows, cols] ([cols, rows] as a Conv1D stores it), with its bias when `bias`.
    const auto linear = [&](const char* name, std::int64_t rows, std::int64_t cols, TensorRole role, bool bias,
                            TensorRole bias_role) {
      add(std::string(name) + ".weight", r.conv1d ? std::vector{cols, rows} : std::vector{rows, cols}, role);
      if (bias) add(std::string(name) + ".bias", {rows}, bias_role);
    };
    norm(r.norms.attn_input, kAttnInputNorm, kAttnInputNormBias);
    norm(r.norms.attn_output, kAttnOutputNorm, kAttnOutputNorm);
    norm(r.norms.mlp_input, kMlpInputNorm, kMlpInputNormBias);
    norm(r.norms.mlp_output, kMlpOutputNorm, kMlpOutputNorm);
    if (r.qk_norm != QkNorm::kNone) {
      add("self_attn.q_norm.weight", {per_head ? c.head_dim : c.q_dim()}, kQNorm);
      add("self_attn.k_norm.weight", {per_head ? c.head_dim : c.kv_dim()}, kKNorm);
    }
    const char* fused = *n.qkv_per_group != '\0' ? n.qkv_per_group : n.qkv_concat;
    if (*fused != '\0') {
      linear(fused, c.q_dim() + 2 * static_cast<std::int64_t>(c.kv_dim()), hidden, kQkvProj, r.qkv_bias, kQkvBias);
    } else {
      linear(n.q, c.q_dim(), hidden, kQProj, r.qkv_bias, kQBias);
      linear(n.k, c.kv_dim(), hidden, kKProj, r.qkv_bias, kKBias);
      linear(n.v, c.kv_dim(), hidden, kVProj, r.qkv_bias, kVBias);
    }
    linear(n.o, hidden, c.q_dim(), kOProj, r.o_bias, kOBias);
    if (r.layers[static_cast<std::size_t>(l)].sparse_mlp) {
      const std::int64_t experts = r.moe.experts, inter = r.moe.intermediate, shared = r.moe.shared_intermediate;
      if (shared > 0) {
        const std::string expert = n.shared_expert;
        add(expert + n.expert_gate + ".weight", {shared, hidden}, kSharedExpertGateProj);
        add(expert + n.expert_up + ".weight", {shared, hidden}, kSharedExpertUpProj);
        add(expert + n.expert_down + ".weight", {hidden, shared}, kSharedExpertDownProj);
        add(std::string(n.shared_expert_gate) + ".weight", {1, hidden}, kSharedExpertGate);
      }
      if (r.fused_experts) {
        // transformers 5.x MixtralExperts / Qwen2MoeExperts: gate_up_proj [experts, 2 * inter, hidden]
        // (gate, up = linear(h, gate_up_proj[e]).chunk(2)), down_proj [experts, hidden, inter].
        add(std::string(n.fused_router) + ".weight", {experts, hidden}, kRouter);
        add(std::string(n.fused_experts) + "gate_up_proj", {experts, 2 * inter, hidden}, kExpertsGateUp);
        add(std::string(n.fused_experts) + "down_proj", {experts, hidden, inter}, kExpertsDown);
        continue;
      }
      add(std::string(n.router) + ".weight", {experts, hidden}, kRouter);
      for (int e = 0; e < experts; ++e) {
        const std::string expert = std::string(n.experts) + std::to_string(e) + ".";
        slots.push_back({p + expert + n.expert_gate + ".weight", {inter, hidden}, kExpertGate, l, e});
        slots.push_back({p + expert + n.expert_up + ".weight", {inter, hidden}, kExpertUp, l, e});
        slots.push_back({p + expert + n.expert_down + ".weight", {hidden, inter}, kExpertDown, l, e});
      }
      continue;
    }
    if (*n.gate_up != '\0') {
      linear(n.gate_up, 2 * static_cast<std::int64_t>(c.intermediate), hidden, kGateUpProj, false, kGateUpProj);
    } else {
      if (*n.gate != '\0') linear(n.gate, c.intermediate, hidden, kGateProj, false, kGateProj);
      linear(n.up, c.intermediate, hidden, kUpProj, r.mlp_bias, kUpBias);
    }
    linear(n.down, hidden, c.intermediate, kDownProj, r.mlp_bias, kDownBias);
  }
  slots.push_back({root + n.final_norm + ".weight", {hidden}, kFinalNorm});
  slots.back().unit = !r.norm_affine;
  if (norm_bias) slots.push_back({root + n.final_norm + ".bias", {hidden}, kFinalNormBias});
  if (!c.tie_embeddings) slots.push_back({r.weight_prefix + n.lm_head, {c.vocab, hidden}, kLmHead});
  if (r.lm_head_bias) slots.push_back({r.weight_prefix + bias_of(n.lm_head), {c.vocab}, kLmHeadBias});
  return slots;
}

TensorView unit_weight(const WeightSlot& slot, std::vector<std::shared_ptr<const std::vector<std::byte>>>& derived) {
  ATTNGEOM_CHECK(slot.unit && slot.shape.size() == 1);
  const std::vector<float> ones(static_cast<std::size_t>(slot.shape[0]), 1.0f);
  auto memory = std::make_shared<std::vector<std::byte>>(ones.size() * sizeof(float));
  std::memcpy(memory->data(), ones.data(), memory->size());
  TensorView view{slot.name + " [ones]", DType::kF32, 1, slot.shape[0], memory->data()};
  derived.push_back(std::move(memory));
  return view;
}

template <class Tensor>
Tensor& tensor_at(ModelTensors<Tensor>& t, const WeightSlot& slot) {
  using enum TensorRole;
  if (slot.layer < 0) {
    switch (slot.role) {
      case kEmbed:
        return t.embed;
      case kPositionEmbed:
        return t.position_embed;
      case kEmbedNorm:
        return t.embed_norm;
      case kEmbedNormBias:
        return t.embed_norm_bias;
      case kFinalNorm:
        return t.final_norm;
      case kFinalNormBias:
        return t.final_norm_bias;
      case kLmHead:
        return t.lm_head;
      case kLmHeadBias:
        return t.lm_head_bias;
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
    case kAttnInputNormBias:
      return l.attn_input_norm_bias;
    case kAttnOutputNorm:
      return l.attn_output_norm;
    case kMlpInputNorm:
      return l.mlp_input_norm;
    case kMlpInputNormBias:
      return l.mlp_input_norm_bias;
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
    case kQkvProj:
      return l.qkv_proj;
    case kQkvBias:
      return l.qkv_bias;
    case kGateUpProj:
      return l.gate_up_proj;
    case kGateProj:
      return l.gate_proj;
    case kUpProj:
      return l.up_proj;
    case kDownProj:
      return l.down_proj;
    case kUpBias:
      return l.up_bias;
    case kDownBias:
      return l.down_bias;
    case kRouter:
      return l.router;
    case kExpertsGateUp:
      return l.experts_gate_up;
    case kExpertsDown:
      return l.experts_down;
    case kSharedExpertGateProj:
      return l.shared_expert.gate_proj;
    case kSharedExpertUpProj:
      return l.shared_expert.up_proj;
    case kSharedExpertDownProj:
      return l.shared_expert.down_proj;
    case kSharedExpertGate:
      return l.shared_expert_gate;
    default:
      break;
  }
  if (slot.role == kExpertGate || slot.role == kExpertUp || slot.role == kExpertDown) {
    ATTNGEOM_CHECK(slot.expert >= 0);
    const auto e = static_cast<std::size_t>(slot.expert);
    if (e >= l.experts.size()) l.experts.resize(e + 1);  // sized by the slots as they come
    ExpertTensors<Tensor>& x = l.experts[e];
    return slot.role == kExpertGate ? x.gate_proj : slot.role == kExpertUp ? x.up_proj : x.down_proj;
  }
  ATTNGEOM_CHECK(false);
}

template TensorView& tensor_at(Weights&, const WeightSlot&);
template Weight& tensor_at(BackendWeights&, const WeightSlot&);

namespace {

// Rows {block * stride + offset + i : block < blocks, i < count} of `fused`, copied into memory
// appended to `derived`: [blocks * count, fused.cols].
TensorView strided_rows(const TensorView& fused, std::int64_t blocks, std::int64_t stride, std::int64_t offset,
                        std::int64_t count, const std::string& name,
                        std::vector<std::shared_ptr<const std::vector<std::byte>>>& derived) {
  const std::size_t row_bytes = static_cast<std::size_t>(fused.cols) * dtype_size(fused.dtype);
  auto memory = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(blocks * count) * row_bytes);
  const auto* source = static_cast<const std::byte*>(fused.data);
  for (std::int64_t b = 0; b < blocks; ++b) {
    std::memcpy(memory->data() + static_cast<std::size_t>(b * count) * row_bytes,
                source + static_cast<std::size_t>(b * stride + offset) * row_bytes,
                static_cast<std::size_t>(count) * row_bytes);
  }
  TensorView view = fused;
  view.name = name;
  view.rows = blocks * count;
  view.data = memory->data();
  derived.push_back(std::move(memory));
  return view;
}

// Rows [first, first + count) of `stored`, viewed in place (no copy).
TensorView row_block(const TensorView& stored, std::int64_t first, std::int64_t count, const std::string& name) {
  ATTNGEOM_CHECK(first >= 0 && count >= 0 && first + count <= stored.rows);
  TensorView view = stored;
  view.name = name;
  view.rows = count;
  view.data = stored.row(first);
  return view;
}

// A bias [1, n] viewed as n rows of one element, for strided_rows.
TensorView as_column(const TensorView& bias) {
  TensorView column = bias;
  column.rows = bias.cols;
  column.cols = 1;
  return column;
}

TensorView as_row(TensorView column) {
  column.cols = column.rows;
  column.rows = 1;
  return column;
}

// `stored` [rows, cols] transposed into memory appended to `derived`: [cols, rows].
TensorView transposed(const TensorView& stored, std::vector<std::shared_ptr<const std::vector<std::byte>>>& derived) {
  const std::size_t size = dtype_size(stored.dtype);
  auto memory = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(stored.numel()) * size);
  const auto* source = static_cast<const std::byte*>(stored.data);
  for (std::int64_t r = 0; r < stored.rows; ++r) {
    for (std::int64_t c = 0; c < stored.cols; ++c) {
      std::memcpy(memory->data() + static_cast<std::size_t>(c * stored.rows + r) * size,
                  source + static_cast<std::size_t>(r * stored.cols + c) * size, size);
    }
  }
  TensorView view = stored;
  view.rows = stored.cols;
  view.cols = stored.rows;
  view.data = memory->data();
  derived.push_back(std::move(memory));
  return view;
}

// q_proj or k_proj [heads * head_dim, hidden] with each head's first `rotary` rows, RoPE pairs
// (2i, 2i + 1), moved to rows i and i + rotary / 2 (rotate_half's pairs), copied into memory
// appended to `derived`.
TensorView rope_pairs_as_halves(const TensorView& stored, std::int64_t heads, std::int64_t head_dim,
                                std::int64_t rotary,
                                std::vector<std::shared_ptr<const std::vector<std::byte>>>& derived) {
  ATTNGEOM_CHECK(stored.rows == heads * head_dim && rotary % 2 == 0 && rotary <= head_dim);
  const std::size_t row_bytes = static_cast<std::size_t>(stored.cols) * dtype_size(stored.dtype);
  auto memory = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(stored.rows) * row_bytes);
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t i = 0; i < head_dim; ++i) {
      // Row i of the head takes the stored row holding that channel of a pair, or itself.
      const std::int64_t from = i >= rotary ? i : i < rotary / 2 ? 2 * i : 2 * (i - rotary / 2) + 1;
      std::memcpy(memory->data() + static_cast<std::size_t>(h * head_dim + i) * row_bytes,
                  stored.row(h * head_dim + from), row_bytes);
    }
  }
  TensorView view = stored;
  view.name = stored.name + " [RoPE pairs as halves]";
  view.data = memory->data();
  derived.push_back(std::move(memory));
  return view;
}

// The checkpoint's bytes of `stored`, copied by arrange_weights and never read again, dropped
// from the resident set: a fused projection and its split copies are not both held.
void release(const TensorView& stored) {
  release_mapped_pages(stored.data, static_cast<std::size_t>(stored.numel()) * dtype_size(stored.dtype));
}

}  // namespace

void arrange_weights(const ModelConfig& c, Weights& weights) {
  const TensorNames& n = c.recipe.names;
  for (LayerTensors<TensorView>& l : weights.layers) {
    // HF Conv1D: y = x @ W + b with W [in, out]; nn.Linear's layout is W^T.
    if (c.recipe.conv1d) {
      for (TensorView* m : {&l.qkv_proj, &l.o_proj, &l.up_proj, &l.down_proj}) {
        if (!present(*m)) continue;
        const TensorView stored = *m;
        *m = transposed(stored, weights.derived);
        release(stored);
      }
    }
    if (present(l.gate_up_proj)) {
      // HF Phi-3 (4.57): gate, up_states = gate_up_proj(x).chunk(2, dim=-1)
      const std::int64_t inter = c.intermediate;
      l.gate_proj = strided_rows(l.gate_up_proj, 1, 0, 0, inter, l.gate_up_proj.name + " [gate]", weights.derived);
      l.up_proj = strided_rows(l.gate_up_proj, 1, 0, inter, inter, l.gate_up_proj.name + " [up]", weights.derived);
      release(l.gate_up_proj);
    }
    if (present(l.experts_gate_up)) {
      // transformers 5.x MixtralExperts: gate, up = linear(h, gate_up_proj[e]).chunk(2, dim=-1);
      // linear(., down_proj[e]). Expert e's rows: [2 e inter, 2 e inter + inter) gate, then up.
      const std::int64_t inter = c.recipe.moe.intermediate, hidden = c.hidden;
      l.experts.resize(static_cast<std::size_t>(c.recipe.moe.experts));
      for (std::size_t e = 0; e < l.experts.size(); ++e) {
        const auto first = static_cast<std::int64_t>(e) * 2 * inter;
        const std::string which = " [" + std::to_string(e) + "]";
        l.experts[e].gate_proj = row_block(l.experts_gate_up, first, inter, l.experts_gate_up.name + which + " [gate]");
        l.experts[e].up_proj =
            row_block(l.experts_gate_up, first + inter, inter, l.experts_gate_up.name + which + " [up]");
        l.experts[e].down_proj =
            row_block(l.experts_down, static_cast<std::int64_t>(e) * hidden, hidden, l.experts_down.name + which);
      }
    }
    if (c.recipe.interleaved_rope) {
      ATTNGEOM_CHECK(!present(l.qkv_proj) && !present(l.q_bias) && c.recipe.qk_norm == QkNorm::kNone);
      const std::int64_t rotary = c.recipe.rotary_dim;
      for (TensorView* m : {&l.q_proj, &l.k_proj}) {
        const TensorView stored = *m;
        *m = rope_pairs_as_halves(stored, m == &l.q_proj ? c.heads : c.kv_heads, c.head_dim, rotary, weights.derived);
        release(stored);
      }
    }
    if (!present(l.qkv_proj)) continue;
    const std::int64_t d = c.head_dim;
    const std::string& name = l.qkv_proj.name;
    TensorView* parts[] = {&l.q_proj, &l.k_proj, &l.v_proj};
    TensorView* biases[] = {&l.q_bias, &l.k_bias, &l.v_bias};
    for (int part = 0; part < 3; ++part) {
      // Rows {b * stride + offset + i : b < blocks, i < count} of the fused [q_dim + 2 kv_dim, hidden].
      std::int64_t blocks = 1, stride = 0, offset = 0, count = part == 0 ? c.q_dim() : c.kv_dim();
      if (*n.qkv_per_group != '\0') {
        // HF GPT-NeoX and Falcon (4.57): kv head g's block of (r + 2) D rows, r = heads / kv_heads,
        // holds its r query heads' rows, then k's D, then v's D.
        const std::int64_t r = c.heads / c.kv_heads;
        blocks = c.kv_heads, stride = (r + 2) * d, offset = part == 0 ? 0 : (r + part - 1) * d;
        count = part == 0 ? r * d : d;
      } else {
        // HF GPT-2 (4.57): query, key, value = c_attn(x).split(hidden, dim=2).
        offset = part == 0 ? 0 : c.q_dim() + (part - 1) * static_cast<std::int64_t>(c.kv_dim());
      }
      const std::string which = std::string(" [") + "qkv"[part] + "]";
      *parts[part] = strided_rows(l.qkv_proj, blocks, stride, offset, count, name + which, weights.derived);
      if (present(l.qkv_bias)) {
        *biases[part] = as_row(strided_rows(as_column(l.qkv_bias), blocks, stride, offset, count,
                                            l.qkv_bias.name + which, weights.derived));
      }
    }
    if (!c.recipe.conv1d) release(l.qkv_proj);  // a Conv1D's was transposed into memory of ours
  }
}

BackendWeights upload_weights(const ModelConfig& c, const Weights& stored, Backend& backend) {
  using enum TensorRole;
  Weights source = stored;  // tensor_at reaches members through a non-const ModelTensors
  BackendWeights out;
  out.layers.resize(static_cast<std::size_t>(c.layers));
  out.derived = stored.derived;  // a backend's weights may be views of them (the CPU's are)
  for (const WeightSlot& slot : weight_slots(c)) {
    // A fused tensor is uploaded as the parts arrange_weights made, not whole.
    std::vector<WeightSlot> parts;
    const auto part = [&](TensorRole role, int expert) {
      parts.push_back(slot);
      parts.back().role = role;
      parts.back().expert = expert;
    };
    if (slot.role == kQkvProj) {
      for (const TensorRole role : {kQProj, kKProj, kVProj}) part(role, -1);
    } else if (slot.role == kQkvBias) {
      for (const TensorRole role : {kQBias, kKBias, kVBias}) part(role, -1);
    } else if (slot.role == kGateUpProj) {
      for (const TensorRole role : {kGateProj, kUpProj}) part(role, -1);
    } else if (slot.role == kExpertsGateUp || slot.role == kExpertsDown) {
      for (int e = 0; e < c.recipe.moe.experts; ++e) {
        if (slot.role == kExpertsGateUp) part(kExpertGate, e);
        part(slot.role == kExpertsGateUp ? kExpertUp : kExpertDown, e);
      }
    } else {
      parts.push_back(slot);
    }
    for (const WeightSlot& split : parts) tensor_at(out, split) = backend.upload(tensor_at(source, split));
  }
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
    for (const auto& e : l.experts) {
      for (const TensorView* v : {&e.gate_proj, &e.up_proj, &e.down_proj}) add(*v);
    }
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
