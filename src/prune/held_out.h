#pragma once
// Held-out evaluation of edited models (masked heads, top-N keys) against the unedited
// model, under the documented perplexity protocol (eval/perplexity.h). Each document
// of the held-out text is its own token stream (windows never cross documents); the
// NLL, KL and top-1 agreement are pooled over every scored token of every document.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "eval/perplexity.h"

namespace attngeom::prune {

struct HeldOutScore {
  std::size_t tokens = 0;  // scored tokens
  double mean_nll = 0;     // nats
  double ppl = 0;          // exp(mean_nll)
  double kl = 0;           // mean KL(unedited || edited), nats per token
  double top1 = 1;         // share of tokens whose argmax equals the unedited model's
};

class HeldOutEvaluator {
 public:
  // Runs the unedited model once over every document and keeps its log-probabilities
  // as the reference ([scored tokens, vocab] floats in memory). Documents that score no
  // token are dropped. Throws InputError when no token at all can be scored.
  HeldOutEvaluator(Transformer& model, std::vector<std::vector<int>> documents, const PerplexityProtocol& protocol);

  const HeldOutScore& reference() const { return reference_; }
  HeldOutScore evaluate(const HeadEdits& edits);

  // Token counts of the forward passes of one evaluation (BOS included), in order.
  const std::vector<int>& window_lengths() const { return window_lengths_; }
  const std::vector<std::vector<int>>& documents() const { return documents_; }

 private:
  HeldOutScore run(const HeadEdits& edits, bool keep);

  Transformer& model_;
  std::vector<std::vector<int>> documents_;
  PerplexityProtocol protocol_;
  std::vector<ScoredDistributions> reference_distributions_;  // per document
  HeldOutScore reference_;
  std::vector<int> window_lengths_;
};

// Bytes the reference log-probabilities of `tokens` held-out tokens take ([tokens, vocab]
// floats; an upper bound, as unscored tokens keep none).
std::uint64_t reference_distribution_bytes(std::size_t tokens, std::int64_t vocab);

// Throws InputError naming --max-tokens (and how many tokens would fit) when those bytes
// exceed `available`; an unknown availability passes.
void check_reference_fits(std::size_t tokens, std::int64_t vocab, std::optional<std::uint64_t> available);

// The forward passes the protocol makes over one stream: the token count of each
// window that scores at least one token (BOS included).
std::vector<int> protocol_window_lengths(std::size_t stream_tokens, const PerplexityProtocol& protocol);

}  // namespace attngeom::prune
