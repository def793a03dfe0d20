#include "model/forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

#include "util/error.h"

namespace attngeom {
namespace {

std::string in_layer(int layer, const char* what) { return "model.layers." + std::to_string(layer) + ": " + what; }

// A layer whose captured rows take at most this many bytes reaches the observer once its output
// projection and MLP are launched, so that a GPU computes them while the observer copies or
// analyses the layer; larger captures reach it block by block as attention hands them over,
// so that no layer's rows are held whole. The test hook ATTNGEOM_TEST_CAPTURE_BLOCKS=1
// delivers every layer block by block (docs/tests.md).
std::size_t held_capture_bytes() {
  static const std::size_t bytes = std::getenv("ATTNGEOM_TEST_CAPTURE_BLOCKS") ? 0 : std::size_t{64} << 20;
  return bytes;
}

}  // namespace

Transformer::Transformer(const ModelConfig& config, const BackendWeights& weights, Backend& backend)
    : config_(config), weights_(weights), backend_(backend) {}

namespace {

// The activation buffers of one forward pass over `seq` tokens and their widths; a buffer the
// recipe does not use is absent. Transformer::allocate makes them, forward_activation_bytes
// counts them: one list, so the two agree.
struct BufferWidth {
  Buffer ForwardBuffers::*buffer;
  std::int64_t cols;
};
std::vector<BufferWidth> buffer_widths(const ModelConfig& c, Precision precision) {
  const ModelRecipe& r = c.recipe;
  const bool gated_mlp = *r.names.gate != '\0' || *r.names.gate_up != '\0';
  std::vector<BufferWidth> widths = {{&ForwardBuffers::x, c.hidden},         {&ForwardBuffers::q, c.q_dim()},
                                     {&ForwardBuffers::k, c.kv_dim()},       {&ForwardBuffers::v, c.kv_dim()},
                                     {&ForwardBuffers::attn_out, c.q_dim()}, {&ForwardBuffers::proj, c.hidden},
                                     {&ForwardBuffers::up, c.intermediate}};
  if (gated_mlp) widths.push_back({&ForwardBuffers::gate, c.intermediate});
  if (r.parallel_residual) widths.push_back({&ForwardBuffers::mlp_out, c.hidden});
  if (r.moe.experts > 0) {
    widths.insert(widths.end(), {{&ForwardBuffers::router_logits, r.moe.experts},
                                 {&ForwardBuffers::expert_x, c.hidden},
                                 {&ForwardBuffers::expert_gate, r.moe.intermediate},
                                 {&ForwardBuffers::expert_up, r.moe.intermediate},
                                 {&ForwardBuffers::expert_y, c.hidden}});
    if (precision != Precision::kFp32) widths.push_back({&ForwardBuffers::router_exact, r.moe.experts});
  }
  if (r.moe.shared_intermediate > 0) {
    widths.insert(widths.end(), {{&ForwardBuffers::shared_logit, 1},
                                 {&ForwardBuffers::shared_gate, r.moe.shared_intermediate},
                                 {&ForwardBuffers::shared_up, r.moe.shared_intermediate}});
  }
  return widths;
}

}  // namespace

std::uint64_t forward_activation_bytes(const ModelConfig& config, int seq, Precision precision) {
  std::uint64_t columns = 0;
  for (const BufferWidth& w : buffer_widths(config, precision)) columns += static_cast<std::uint64_t>(w.cols);
  columns += config.recipe.ropes.size() * static_cast<std::uint64_t>(config.recipe.rotary_dim);  // cos | sin tables
  return columns * static_cast<std::uint64_t>(seq) * sizeof(float);
}

void Transformer::allocate(int seq) {
  if (seq == buffers_.seq) return;
  const ModelConfig& c = config_;
  ForwardBuffers& b = buffers_;
  b.seq = seq;
  for (const BufferWidth& w : buffer_widths(c, backend_.precision())) b.*w.buffer = backend_.allocate(seq, w.cols);
  b.positions.resize(static_cast<std::size_t>(seq));
  for (int i = 0; i < seq; ++i) b.positions[static_cast<std::size_t>(i)] = i + c.recipe.position_offset;
  b.ropes.clear();
  for (const RopeSpec& rope : c.recipe.ropes)
    b.ropes.push_back(backend_.rope_table(seq, rope_inv_freq(rope, c.recipe.rotary_dim, seq), rope.attention_factor));
  b.values = backend_.host_floats(static_cast<std::size_t>(seq) * c.kv_dim());
  b.router_host.assign(static_cast<std::size_t>(seq) * c.recipe.moe.experts, 0.0f);
  if (c.recipe.moe.shared_intermediate > 0) {
    b.shared_weight.assign(static_cast<std::size_t>(seq), 0.0f);
    b.all_rows.resize(static_cast<std::size_t>(seq));
    for (int i = 0; i < seq; ++i) b.all_rows[static_cast<std::size_t>(i)] = i;
  }
}

// The recipe's norm with `weight` (and, for LayerNorm families, `bias`).
RmsNormSpec Transformer::norm(const Weight& weight, const Weight* bias) const {
  const ModelRecipe& r = config_.recipe;
  return {&weight, r.norm_weight_offset, config_.rms_norm_eps, r.norm_kind == NormKind::kLayer, bias};
}

// norm(x) with `norm_weight`, as a linear layer's input. Without a norm (OLMo-2), x as stored.
LinearSource Transformer::layer_input(const Weight& norm_weight, const Weight& norm_bias) {
  return norm_weight.present() ? normed(buffers_.x, norm(norm_weight, &norm_bias)) : stored(buffers_.x);
}

void Transformer::add_bias_if_present(Buffer& y, const Weight& bias) {
  if (bias.present()) backend_.add_bias(y, bias);
}

// Finite weights can still overflow float32 activations (e.g. a checkpoint scaled by 1e25);
// NaN would then flow silently into every metric, so each layer's attention output and
// residual stream are checked (two scans, negligible next to the products that made them).
void Transformer::check_finite(const Buffer& x, const std::string& what) {
  if (backend_.count_nonfinite(x) == 0) return;
  throw InputError(what +
                   " overflow float32 (non-finite values); the checkpoint's weights (or head gates) are finite "
                   "but out of range");
}

// ComputeQKV: q [seq, heads*head_dim], k [seq, kv_heads*head_dim] normed and rotated;
// v [seq, kv_heads*head_dim] (the values: nothing but its bias touches it).
void Transformer::attention_input(int l) {
  const ModelConfig& c = config_;
  const ModelRecipe& r = c.recipe;
  const LayerTensors<Weight>& w = weights_.layers[static_cast<std::size_t>(l)];
  ForwardBuffers& b = buffers_;
  // HF: h = input_layernorm(x) (OLMo-2: h = x); q, k, v = q_proj(h), k_proj(h), v_proj(h) (+ biases).
  // GPT-NeoX's fused query_key_value is three row blocks per head, split at load (weights.h).
  const LinearTarget qkv[] = {{&w.q_proj, &b.q}, {&w.k_proj, &b.k}, {&w.v_proj, &b.v}};
  backend_.linear(layer_input(w.attn_input_norm, w.attn_input_norm_bias), qkv);
  add_bias_if_present(b.q, w.q_bias);
  add_bias_if_present(b.k, w.k_bias);
  add_bias_if_present(b.v, w.v_bias);
  // HF Qwen3 / Gemma-3: q = q_norm(q.view(seq, heads, head_dim)), per head;
  // HF OLMo-2: q = q_norm(q_proj(h)) over all heads at once. Likewise k.
  if (r.qk_norm == QkNorm::kPerHead) {
    backend_.rms_norm(b.q, c.head_dim, norm(w.q_norm));
    backend_.rms_norm(b.k, c.head_dim, norm(w.k_norm));
  } else if (r.qk_norm == QkNorm::kWholeProjection) {
    backend_.rms_norm(b.q, c.q_dim(), norm(w.q_norm));
    backend_.rms_norm(b.k, c.kv_dim(), norm(w.k_norm));
  }
  // HF OLMo and MPT: q, k, v = (qkv projections).clamp(-clip_qkv, clip_qkv); OLMoE clamps after the q/k norms.
  if (r.clip_qkv > 0) {
    for (Buffer* x : {&b.q, &b.k, &b.v}) backend_.clamp_symmetric(*x, r.clip_qkv);
  }
  // HF: q, k = apply_rotary_pos_emb(q, k, cos, sin), with this layer's table; GPT-NeoX rotates the
  // first rotary_dim of each head only (the table's width)
  const int table = r.layers[static_cast<std::size_t>(l)].rope_table;
  if (table < 0) return;  // learned positions (GPT-2, OPT) came with the embeddings; SmolLM3's NoPE layers
  const Buffer& rope = b.ropes[static_cast<std::size_t>(table)];
  backend_.rope(b.q, c.heads, c.head_dim, rope);
  backend_.rope(b.k, c.kv_heads, c.head_dim, rope);
}

// OutputProjection. HF: out = o_proj(attn_output) (+ o_proj bias; GPT-NeoX: attention.dense)
void Transformer::output_projection(int l, Buffer& out) {
  const LayerTensors<Weight>& w = weights_.layers[static_cast<std::size_t>(l)];
  const LinearTarget o{&w.o_proj, &out};  // [seq, hidden]
  backend_.linear(stored(buffers_.attn_out), {&o, 1});
  add_bias_if_present(out, w.o_bias);
}

// Mlp, into out [seq, hidden]. HF gated: down_proj(act(gate_proj(h)) * up_proj(h)); HF GPT-NeoX:
// dense_4h_to_h(act(dense_h_to_4h(h))) with biases. h = the MLP's input norm of x (LLaMA:
// post_attention_layernorm; Gemma-2/3: pre_feedforward_layernorm; OLMo-2: h = x).
void Transformer::mlp(int l, Buffer& out) {
  if (config_.recipe.layers[static_cast<std::size_t>(l)].sparse_mlp) return sparse_mlp(l, out);
  const LayerTensors<Weight>& w = weights_.layers[static_cast<std::size_t>(l)];
  ForwardBuffers& b = buffers_;
  const LinearSource h = layer_input(w.mlp_input_norm, w.mlp_input_norm_bias);
  const LinearTarget down{&w.down_proj, &out};  // [seq, hidden]
  if (w.gate_proj.present()) {
    const LinearTarget gate_up[] = {{&w.gate_proj, &b.gate}, {&w.up_proj, &b.up}};  // [seq, intermediate]
    backend_.linear(h, gate_up);
    backend_.linear(gated(b.gate, b.up, config_.recipe.activation), {&down, 1});
  } else {
    const LinearTarget up{&w.up_proj, &b.up};  // [seq, intermediate]
    backend_.linear(h, {&up, 1});
    add_bias_if_present(b.up, w.up_bias);
    backend_.linear(activated(b.up, config_.recipe.activation), {&down, 1});
  }
  add_bias_if_present(out, w.down_bias);
}

// A mixture of experts' routing of layer l (HF MixtralSparseMoeBlock, transformers 4.57):
// router_logits = gate(h), h the MLP's input norm of x; each token's top_k experts and weights
// (model/moe_routing.h). On the exact path the logits are an fp32 product, so the choice of
// experts is fp32's; a fast path routes by its own logits, as HF in bf16 does, and counts the
// tokens that the fp32 product of the same h would route to another set of experts.
void Transformer::route(int l) {
  const LayerTensors<Weight>& w = weights_.layers[static_cast<std::size_t>(l)];
  ForwardBuffers& b = buffers_;
  const MoeRecipe& moe = config_.recipe.moe;
  const LinearSource h = normed(b.x, norm(w.mlp_input_norm, &w.mlp_input_norm_bias));
  const LinearTarget router{&w.router, &b.router_logits};  // [seq, experts]
  backend_.linear(h, {&router, 1});
  backend_.copy_to_host(b.router_logits, b.router_host);
  route_tokens(b.router_host, moe, b.routes);
  b.expert_load.resize(b.routes.rows.size());
  for (std::size_t e = 0; e < b.routes.rows.size(); ++e) b.expert_load[e] = static_cast<int>(b.routes.rows[e].size());
  b.flipped.clear();
  b.flips = -1;
  if (backend_.precision() == Precision::kFp32) return;
  const LinearTarget exact{&w.router, &b.router_exact};  // [seq, experts]
  backend_.linear_fp32(h, {&exact, 1});
  backend_.copy_to_host(b.router_exact, b.router_host);
  route_tokens(b.router_host, moe, b.exact_routes);
  b.flips = routing_flips(b.routes, b.exact_routes, moe.top_k, b.flipped);
}

ExpertRouting Transformer::routing() const {
  const ForwardBuffers& b = buffers_;
  const MoeRecipe& moe = config_.recipe.moe;
  return {b.seq, moe.experts, moe.top_k, b.routes.choices, b.routes.choice_weights, b.expert_load, b.flipped, b.flips};
}

// A mixture of experts, into out [seq, hidden]: out = sum over experts e, in index order, of
// weight * w2(act(w1(h_e)) * w3(h_e)) on the rows h_e routed to e (HF:
// final_hidden_states.index_add_(0, top_x, current_hidden_states)).
void Transformer::sparse_mlp(int l, Buffer& out) {
  const LayerTensors<Weight>& w = weights_.layers[static_cast<std::size_t>(l)];
  ForwardBuffers& b = buffers_;
  const ModelConfig& c = config_;
  route(l);
  const RmsNormSpec h = norm(w.mlp_input_norm, &w.mlp_input_norm_bias);
  backend_.fill_zero(out);  // the sum's start
  for (std::size_t e = 0; e < w.experts.size(); ++e) {
    const std::vector<int>& rows = b.routes.rows[e];
    if (rows.empty()) continue;
    const ExpertTensors<Weight>& expert = w.experts[e];
    const auto n = static_cast<std::int64_t>(rows.size());
    Buffer x_e = b.expert_x.leading_rows(n);  // [n, hidden] the routed rows of x, normed below
    Buffer gate = b.expert_gate.leading_rows(n);
    Buffer up = b.expert_up.leading_rows(n);
    Buffer y_e = b.expert_y.leading_rows(n);
    backend_.gather_rows(b.x, rows, x_e);
    const LinearTarget gate_up[] = {{&expert.gate_proj, &gate}, {&expert.up_proj, &up}};
    backend_.linear(normed(x_e, h), gate_up);
    const LinearTarget down{&expert.down_proj, &y_e};
    backend_.linear(gated(gate, up, c.recipe.activation), {&down, 1});
    backend_.scatter_add_rows(out, rows, y_e, b.routes.weights[e]);
  }
  if (w.shared_expert_gate.present()) shared_expert(l, out);
}

// Qwen2-MoE (HF Qwen2MoeSparseMoeBlock): out += sigmoid(shared_expert_gate(h)) * shared_expert(h)
// on every token, after the routed experts' sum; the gate's sigmoid is taken on the host.
void Transformer::shared_expert(int l, Buffer& out) {
  const LayerTensors<Weight>& w = weights_.layers[static_cast<std::size_t>(l)];
  ForwardBuffers& b = buffers_;
  const LinearSource h = normed(b.x, norm(w.mlp_input_norm, &w.mlp_input_norm_bias));
  const LinearTarget logit{&w.shared_expert_gate, &b.shared_logit};  // [seq, 1]
  backend_.linear(h, {&logit, 1});
  backend_.copy_to_host(b.shared_logit, b.shared_weight);
  for (float& g : b.shared_weight) g = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(g))));
  const LinearTarget gate_up[] = {{&w.shared_expert.gate_proj, &b.shared_gate},
                                  {&w.shared_expert.up_proj, &b.shared_up}};
  backend_.linear(h, gate_up);
  const LinearTarget down{&w.shared_expert.down_proj, &b.expert_y};  // [seq, hidden]
  backend_.linear(gated(b.shared_gate, b.shared_up, config_.recipe.activation), {&down, 1});
  backend_.scatter_add_rows(out, b.all_rows, b.expert_y, b.shared_weight);
}

// The residual updates. Sequential: x = x + attn_branch, then x = x + mlp(x) (Gemma-2/3 and
// OLMo-2 norm each branch's output first: post_attention_layernorm, post_feedforward_layernorm).
// HF GPT-NeoX use_parallel_residual: x = mlp(ln2(x)) + attn(ln1(x)) + x, both branches from the
// same x, summed in that order; HF Phi likewise, x = attn(ln(x)) + mlp(ln(x)) + x, the MLP reading
// the attention's input norm (mlp_input_norm names the same tensor). HF Granite: each branch
// times residual_multiplier before its add.
void Transformer::residual_update(int l) {
  const LayerTensors<Weight>& w = weights_.layers[static_cast<std::size_t>(l)];
  ForwardBuffers& b = buffers_;
  const float branch_scale = config_.recipe.residual_scale;
  output_projection(l, b.proj);
  if (config_.recipe.parallel_residual) {
    mlp(l, b.mlp_out);
    backend_.residual_add(b.mlp_out, b.proj, nullptr);
    backend_.residual_add(b.x, b.mlp_out, nullptr);
    return;
  }
  if (branch_scale != 1.0f) backend_.scale(b.proj, branch_scale);
  const RmsNormSpec attn_post_norm = norm(w.attn_output_norm, nullptr);
  backend_.residual_add(b.x, b.proj, w.attn_output_norm.present() ? &attn_post_norm : nullptr);
  mlp(l, b.proj);
  if (branch_scale != 1.0f) backend_.scale(b.proj, branch_scale);
  const RmsNormSpec mlp_post_norm = norm(w.mlp_output_norm, nullptr);
  backend_.residual_add(b.x, b.proj, w.mlp_output_norm.present() ? &mlp_post_norm : nullptr);
}

void Transformer::layer(int l, const ForwardRequest& request, ForwardObserver* observer, bool update_residual) {
  const ModelConfig& c = config_;
  const ModelRecipe& r = c.recipe;
  ForwardBuffers& b = buffers_;
  const bool captured =
      observer != nullptr && std::binary_search(request.capture_layers.begin(), request.capture_layers.end(), l);
  attention_input(l);
  const auto heads = static_cast<std::size_t>(c.heads);
  const std::size_t captured_floats = captured ? heads * request.capture_rows.size() * b.seq : 0;
  const bool held = captured_floats > 0 && captured_floats * sizeof(float) <= held_capture_bytes();
  if (captured) backend_.heads_to_host(b.v, c.kv_heads, c.head_dim, b.values.span());
  const ValueStates values{c.kv_heads, b.seq, c.head_dim, b.values.data(), MemorySpace::kHost};
  if (captured && !held) observer->on_values(l, values);

  // DotSoftmaxWeightedSum. HF eager: softmax(softcap(q k^T * scale (+ ALiBi)) + mask) v, per head, GQA via
  // repeat_kv; this layer's window. Optional edits (no HF counterpart; docs/method.md section 7):
  // per-head top-N keys, per-head output gates.
  AttentionCall call;
  call.shape = {
      b.seq,        c.heads,        c.kv_heads,     c.head_dim,          r.layers[static_cast<std::size_t>(l)].window,
      r.attn_scale, r.attn_softcap, r.alibi_slopes, r.alibi_before_scale};
  call.q = &b.q;
  call.k = &b.k;
  call.v = &b.v;
  call.out = &b.attn_out;
  if (!request.head_gates.empty()) call.head_gates = std::span(request.head_gates).subspan(l * heads, heads);
  if (!request.topn_keys.empty()) call.head_topn = std::span(request.topn_keys).subspan(l * heads, heads);
  if (captured) call.capture_rows = request.capture_rows;
  const auto attention_start = std::chrono::steady_clock::now();
  if (held) b.captured.resize(captured_floats);
  const std::size_t head_rows = request.capture_rows.size() * b.seq;  // [rows, seq] per head
  backend_.attention(call, [&](const AttentionRows& rows) {
    if (!held) return observer->on_attention(l, rows);
    std::copy_n(
        rows.probs, static_cast<std::size_t>(rows.heads()) * head_rows,
        b.captured.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rows.head_begin) * head_rows));
  });
  timings_.attention_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - attention_start).count();
  // Overflowing q, k or v projections or scores all end up here (NaN probabilities included).
  check_finite(b.attn_out, in_layer(l, "the attention outputs"));
  // A captured layer's routing reads the MLP's input, which follows the attention's residual add.
  const bool routing_captured = captured && r.layers[static_cast<std::size_t>(l)].sparse_mlp;
  const bool residual = update_residual || routing_captured;
  if (residual) residual_update(l);  // launched: a GPU computes it while the observer works below
  if (held) {
    observer->on_values(l, values);
    observer->on_attention(l, AttentionRows{0, c.heads, request.capture_rows, b.seq, b.captured.data()});
  }
  if (!residual) return;
  check_finite(b.x, in_layer(l, "the residual stream's values"));
  if (routing_captured) observer->on_routing(l, routing());
}

// HF: logits = lm_head(norm(x))[rows] (Gemma-2: then final_logit_softcapping; GPT-NeoX:
// embed_out(final_layer_norm(x)); Granite: divided by logits_scaling)
void Transformer::compute_logits(std::span<const int> rows, std::vector<float>& logits) {
  const auto count = static_cast<std::int64_t>(rows.size());
  Buffer picked = backend_.allocate(count, config_.hidden);  // [rows, hidden]
  backend_.gather_rows(buffers_.x, rows, picked);
  backend_.rms_norm(picked, config_.hidden, norm(weights_.final_norm, &weights_.final_norm_bias));
  Buffer out = backend_.allocate(count, config_.vocab);  // [rows, vocab]
  const LinearTarget head{&weights_.lm_head, &out};
  backend_.linear(stored(picked), {&head, 1});
  add_bias_if_present(out, weights_.lm_head_bias);                                            // Phi
  if (config_.recipe.logits_scale != 1.0f) backend_.scale(out, config_.recipe.logits_scale);  // Granite
  check_finite(out, "lm_head: the logits");
  if (config_.recipe.final_softcap > 0) backend_.soft_cap(out, config_.recipe.final_softcap);
  logits.resize(static_cast<std::size_t>(out.numel()));
  backend_.copy_to_host(out, logits);
}

void Transformer::forward(std::span<const int> tokens, const ForwardRequest& request, ForwardObserver* observer,
                          std::vector<float>* logits) {
  ATTNGEOM_CHECK(!tokens.empty());
  ATTNGEOM_CHECK(request.head_gates.empty() ||
                 request.head_gates.size() == static_cast<std::size_t>(config_.layers) * config_.heads);
  ATTNGEOM_CHECK(request.topn_keys.empty() ||
                 request.topn_keys.size() == static_cast<std::size_t>(config_.layers) * config_.heads);
  // Rows and values reach the observer in host memory, which on the CPU is the backend's own too.
  ATTNGEOM_CHECK(request.capture_space == MemorySpace::kHost || request.capture_space == backend_.space());
  allocate(static_cast<int>(tokens.size()));
  // HF: inputs_embeds = embed_tokens(input_ids) (* sqrt(hidden) for the Gemmas)
  backend_.embed(tokens, weights_.embed, config_.recipe.embedding_scale, buffers_.x);
  // GPT-2: hidden = inputs_embeds + wpe(position_ids), positions 0..seq-1 (OPT: 2..seq+1)
  if (weights_.position_embed.present()) {
    const std::int64_t positions = weights_.position_embed.rows() - config_.recipe.position_offset;
    if (static_cast<std::int64_t>(tokens.size()) > positions) {
      throw InputError(std::to_string(tokens.size()) + " tokens exceed the " + std::to_string(positions) +
                       " learned position embeddings (max_position_embeddings) of this model");
    }
    backend_.embed(buffers_.positions, weights_.position_embed, 1.0f, buffers_.proj);
    backend_.residual_add(buffers_.x, buffers_.proj, nullptr);
  }
  // BLOOM: hidden = word_embeddings_layernorm(inputs_embeds)
  if (weights_.embed_norm.present()) {
    backend_.rms_norm(buffers_.x, config_.hidden, norm(weights_.embed_norm, &weights_.embed_norm_bias));
  }
  // Past the last captured layer's attention, the residual stream feeds only the logits. When
  // none are asked for, that layer's output projection and MLP and every later layer are dead
  // work (a few percent of a 7B model's linear FLOPs). A pass that asks for nothing runs whole: it is
  // the benchmark's bare forward.
  const bool want_logits = logits != nullptr && !request.logit_rows.empty();
  const bool whole = want_logits || observer == nullptr || request.capture_layers.empty();
  const int last = whole ? config_.layers - 1 : request.capture_layers.back();
  ATTNGEOM_CHECK(last < config_.layers);
  for (int l = 0; l <= last; ++l) layer(l, request, observer, whole || l < last);
  if (want_logits) compute_logits(request.logit_rows, *logits);
  backend_.synchronize();
}

}  // namespace attngeom
