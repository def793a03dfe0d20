#pragma once
// The transformer forward pass, fp32 activations, for every family model/recipe.h lists.
// Reads like the paper's model: embed, then per layer ComputeQKV -> Attention ->
// OutputProjection -> Mlp (sequential or parallel residual), then the final norm and the logits that were asked for.
// Family differences (norm placement, q/k norms, biases, soft-caps, windows, RoPE tables) come from the config's recipe
// only; every computation is an op of the backend (ops/backend.h), so this one script runs on every kind of hardware.
#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/moe_routing.h"
#include "model/observer.h"
#include "model/weights.h"
#include "ops/backend.h"

namespace attngeom {

// Every activation of one forward pass, in the backend's memory, allocated once per
// sequence length and reused.
struct ForwardBuffers {
  int seq = 0;
  Buffer x;                     // [seq, hidden] residual stream
  Buffer q;                     // [seq, heads*head_dim]
  Buffer k;                     // [seq, kv_heads*head_dim]
  Buffer v;                     // [seq, kv_heads*head_dim]
  Buffer attn_out;              // [seq, heads*head_dim]
  Buffer proj;                  // [seq, hidden] a block's output before the residual add
  Buffer gate;                  // [seq, intermediate]
  Buffer up;                    // [seq, intermediate]
  Buffer mlp_out;               // [seq, hidden] the MLP branch of a parallel residual (else empty)
  std::vector<Buffer> ropes;    // [seq, head_dim] cos | sin, one per distinct RoPE of the recipe
  HostFloats values;            // [kv_heads, seq, head_dim] a captured layer's values, on the host
  std::vector<float> captured;  // [heads, rows, seq] a captured layer's rows held for later delivery
  std::vector<int> positions;   // [seq] the rows of learned position embeddings (ModelRecipe::position_offset on)
  // Mixtures of experts (else empty): the router's logits, on the device and the host, and
  // the routing made of them; on a fast path also the fp32 logits' routing it is checked
  // against. An expert's n tokens use the leading n rows of the expert buffers.
  Buffer router_logits;            // [seq, experts]
  Buffer router_exact;             // [seq, experts] fp32 products (bf16 path only)
  std::vector<float> router_host;  // [seq, experts]
  ExpertRoutes routes, exact_routes;
  std::vector<int> expert_load;   // [experts] tokens routed to each expert
  std::vector<int> flipped;       // [seq] 1 where the fp32 routing differs (bf16 path only)
  int flips = -1;                 // tokens flipped; -1: not checked (fp32 path)
  Buffer expert_x;                // [seq, hidden] the routed rows of x
  Buffer expert_gate, expert_up;  // [seq, intermediate]
  Buffer expert_y;                // [seq, hidden]
  // Qwen2-MoE's shared expert (else empty): its gate's logit and the expert's activations.
  Buffer shared_logit;               // [seq, 1]
  Buffer shared_gate, shared_up;     // [seq, shared_intermediate]
  std::vector<float> shared_weight;  // [seq] sigmoid of the logit, on the host
  std::vector<int> all_rows;         // [seq] 0..seq-1
};

// Wall-clock seconds spent in the attention core (softmax, P V, and the observer's work on
// captured rows delivered block by block), accumulated over forward calls; for the per-stage
// benchmark breakdown.
struct ForwardTimings {
  double attention_seconds = 0;
};

// Bytes of the activation buffers (ForwardBuffers in the backend's memory) that a forward
// pass over `seq` tokens allocates, RoPE tables included; besides them a backend keeps its
// own scratch (ops/cuda_backend.h cuda_scratch_bytes on a GPU).
std::uint64_t forward_activation_bytes(const ModelConfig& config, int seq, Precision precision);

class Transformer {
 public:
  Transformer(const ModelConfig& config, const BackendWeights& weights, Backend& backend);

  // tokens [seq] -> logits [logit_rows, vocab] (row order of request.logit_rows).
  // `observer` may be null when nothing is captured. Without logits, a capturing pass stops
  // after the last captured layer's attention.
  void forward(std::span<const int> tokens, const ForwardRequest& request, ForwardObserver* observer,
               std::vector<float>* logits);

  const ModelConfig& config() const { return config_; }
  const ForwardTimings& timings() const { return timings_; }

 private:
  void allocate(int seq);
  // update_residual: false skips the output projection and MLP (the residual is not read again).
  void layer(int l, const ForwardRequest& request, ForwardObserver* observer, bool update_residual);
  void compute_logits(std::span<const int> rows, std::vector<float>& logits);
  RmsNormSpec norm(const Weight& weight, const Weight* bias = nullptr) const;
  // norm(x) as a linear layer's input, or x itself when the recipe has no norm there.
  LinearSource layer_input(const Weight& norm_weight, const Weight& norm_bias);
  void add_bias_if_present(Buffer& y, const Weight& bias);
  void check_finite(const Buffer& x, const std::string& what);
  void attention_input(int l);
  void output_projection(int l, Buffer& out);
  void mlp(int l, Buffer& out);
  void sparse_mlp(int l, Buffer& out);
  void shared_expert(int l, Buffer& out);
  void route(int l);
  ExpertRouting routing() const;
  void residual_update(int l);

  const ModelConfig& config_;
  const BackendWeights& weights_;
  Backend& backend_;
  ForwardBuffers buffers_;
  ForwardTimings timings_;
};

}  // namespace attngeom
