#pragma once
// The transformer forward pass (LLaMA / Mistral / Gemma family), fp32 activations.
// Reads like the paper's model: embed, then per layer ComputeQKV -> Attention ->
// OutputProjection -> Mlp, then the final norm and the logits that were asked for.
#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/observer.h"
#include "model/weights.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/gemm.h"

namespace attngeom {

// Every buffer of one forward pass, sized once per sequence length and reused.
struct ForwardScratch {
  int seq = 0;
  std::vector<float> x;          // [seq, hidden] residual stream
  std::vector<float> normed;     // [seq, hidden] a norm's output, where fp32 backends keep it
  std::vector<float> q;          // [seq, heads*head_dim]
  std::vector<float> k;          // [seq, kv_heads*head_dim]
  std::vector<float> v;          // [seq, kv_heads*head_dim]
  std::vector<float> attn_out;   // [seq, heads*head_dim]
  std::vector<float> proj;       // [seq, hidden]
  std::vector<float> gate;       // [seq, intermediate]; fp32 backends put act(gate) * up over it
  std::vector<float> up;         // [seq, intermediate]
  std::vector<float> values;     // [kv_heads, seq, head_dim] captured layout
  std::vector<float> norm_weight;  // [hidden] widened norm weight
  RopeTables rope;
  AttentionScratch attention;
  void resize(const ModelConfig& config, int seq);
};

// Wall-clock seconds spent in the attention core (softmax, P V and any observer work on
// captured rows), accumulated over forward calls; for the per-stage benchmark breakdown.
struct ForwardTimings {
  double attention_seconds = 0;
};

class Transformer {
 public:
  Transformer(const ModelConfig& config, const Weights& weights, LinearBackend& backend);

  // tokens [seq] -> logits [logit_rows, vocab] (row order of request.logit_rows).
  // `observer` may be null when nothing is captured. Without logits, a capturing pass stops
  // after the last captured layer's attention.
  void forward(std::span<const int> tokens, const ForwardRequest& request, ForwardObserver* observer,
               std::vector<float>* logits);

  const ModelConfig& config() const { return config_; }
  const ForwardTimings& timings() const { return timings_; }
  Precision precision() const { return backend_.precision(); }

 private:
  void embed(std::span<const int> tokens);
  // update_residual: false skips the output projection and MLP (the residual is not read again).
  void layer(int l, const ForwardRequest& request, ForwardObserver* observer, bool update_residual);
  void compute_logits(std::span<const int> rows, std::vector<float>& logits);
  const float* widen_norm(const TensorView& weight);
  LinearInput normed_input(const TensorView& weight);

  const ModelConfig& config_;
  const Weights& weights_;
  LinearBackend& backend_;
  ForwardScratch s_;
  ForwardTimings timings_;
};

}  // namespace attngeom
