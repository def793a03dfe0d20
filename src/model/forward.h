#pragma once
// The transformer forward pass, fp32 activations, for every family model/recipe.h lists.
// Reads like the paper's model: embed, then per layer ComputeQKV -> Attention ->
// OutputProjection -> Mlp, then the final norm and the logits that were asked for. Family
// differences (norm placement, q/k norms, biases, soft-caps, windows, RoPE tables) come
// from the config's recipe only.
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
  std::vector<float> x;           // [seq, hidden] residual stream
  std::vector<float> normed;      // [seq, hidden] a norm's output, where fp32 backends keep it
  std::vector<float> q;           // [seq, heads*head_dim]
  std::vector<float> k;           // [seq, kv_heads*head_dim]
  std::vector<float> v;           // [seq, kv_heads*head_dim]
  std::vector<float> attn_out;    // [seq, heads*head_dim]
  std::vector<float> proj;        // [seq, hidden]
  std::vector<float> gate;        // [seq, intermediate]; fp32 backends put act(gate) * up over it
  std::vector<float> up;          // [seq, intermediate]
  std::vector<float> values;      // [kv_heads, seq, head_dim] captured layout
  std::vector<float> widened;     // [max(hidden, heads*head_dim)] a norm weight or bias widened to fp32
  std::vector<RopeTables> ropes;  // one per distinct RoPE of the recipe
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
  const float* widen(const TensorView& vector);
  // norm(x) as a linear layer's input, or x itself when the recipe has no norm there.
  LinearInput layer_input(const TensorView& norm);
  // In place on y [seq, cols]: y += bias, when the bias is present.
  void add_bias_if_present(float* y, const TensorView& bias);
  // In place on y [rows, width]: rms_norm over each row of width, with `norm` [width].
  void norm_rows(float* y, std::int64_t rows, std::int64_t width, const TensorView& norm);
  void attention_input(int l, bool captured);
  void output_projection(int l);
  void mlp(int l);

  const ModelConfig& config_;
  const Weights& weights_;
  LinearBackend& backend_;
  ForwardScratch s_;
  ForwardTimings timings_;
};

}  // namespace attngeom
