#pragma once
// Held-out perplexity with a documented protocol, plus KL divergence and top-1
// agreement against a reference run (e.g. the unmasked model).
//
// Protocol: the token stream (no BOS inside) is cut into windows of `context - 1`
// content tokens advancing by `stride` tokens; each window is fed as
// [BOS, c_0 .. c_{n-1}]. Without BOS (bos = false) a window holds `context` tokens and its
// first token is context only, so windows must overlap by at least one token: in both
// cases stride <= context - 1, the default. The logits at the position before c_i predict
// c_i. Every token (but the stream's first without BOS) is scored exactly once, by the
// first window that predicts it. ppl = exp(mean NLL over scored tokens).
#include <cstdint>
#include <span>
#include <vector>

#include "model/forward.h"

namespace attngeom {

struct PerplexityProtocol {
  int context = 256;  // tokens per forward pass, including BOS
  int stride = 0;     // tokens advanced per window, at most context - 1; 0 means context - 1
  bool bos = true;
  int bos_token_id = 1;

  std::size_t content() const {
    return static_cast<std::size_t>(bos ? context - 1 : context);
  }  // stream tokens per window
  std::size_t effective_stride() const { return static_cast<std::size_t>(stride > 0 ? stride : context - 1); }
};

// SettingError naming the setting stride unless 1 <= stride <= context - 1 (0: the default).
void check_stride(const PerplexityProtocol& protocol);

// The log-probabilities a run assigned at every scored position: [scored, vocab].
struct ScoredDistributions {
  int vocab = 0;
  std::vector<int> targets;      // [scored]
  std::vector<float> log_probs;  // [scored, vocab]
};

struct PerplexityResult {
  std::size_t tokens = 0;        // scored tokens
  double mean_nll = 0;           // nats
  double perplexity = 0;         // exp(mean_nll)
  double kl_from_reference = 0;  // mean over tokens of KL(reference || this), nats; 0 without reference
  double top1_agreement = 1;     // share of tokens whose argmax equals the reference's
  std::vector<double> nll;       // [tokens]
};

// How the evaluated model differs from the checkpoint, both [layers, heads], empty: no
// change (see ForwardRequest): head output gates (0 removes a head) and top-N key limits.
struct HeadEdits {
  std::span<const float> gates;
  std::span<const int> topn_keys;
};

// Runs the protocol. When `keep` is non-null the per-token distributions are stored
// there (to serve as a later reference). `reference` (may be null) gives KL and top-1.
PerplexityResult evaluate_perplexity(Transformer& model, std::span<const int> stream,
                                     const PerplexityProtocol& protocol, const HeadEdits& edits,
                                     const ScoredDistributions* reference, ScoredDistributions* keep);

// log_softmax of one logits row, in double for the normaliser.
void log_softmax(std::span<const float> logits, std::span<float> out);

}  // namespace attngeom
