#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace attngeom {

void log_softmax(std::span<const float> logits, std::span<float> out) {
  const float max_value = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x) - max_value);
  const double log_norm = max_value + std::log(sum);
  for (std::size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<float>(logits[i] - log_norm);
}

void check_stride(const PerplexityProtocol& p) {
  if (p.stride < 0 || p.stride > p.context - 1) {
    throw SettingError({setting("stride"), " " + std::to_string(p.stride) + " must lie in [1, context - 1 = " +
                                               std::to_string(p.context - 1) + "] so that every token is scored"});
  }
}

PerplexityResult evaluate_perplexity(Transformer& model, std::span<const int> stream, const PerplexityProtocol& p,
                                     const HeadEdits& edits, const ScoredDistributions* reference,
                                     ScoredDistributions* keep) {
  ATTNGEOM_CHECK(p.context >= 2);
  const int vocab = model.config().vocab;
  const std::size_t content = p.content();
  const std::size_t stride = p.effective_stride();
  ATTNGEOM_CHECK(stride >= 1 && stride < static_cast<std::size_t>(p.context));

  PerplexityResult result;
  if (keep != nullptr) {
    keep->vocab = vocab;
    keep->targets.clear();
    keep->log_probs.clear();
  }
  ForwardRequest request;
  request.head_gates.assign(edits.gates.begin(), edits.gates.end());
  request.topn_keys.assign(edits.topn_keys.begin(), edits.topn_keys.end());
  std::vector<int> tokens;
  std::vector<float> logits;
  std::vector<float> row(static_cast<std::size_t>(vocab));
  double nll_sum = 0, kl_sum = 0;
  std::size_t agree = 0;
  std::size_t scored_until = p.bos ? 0 : 1;  // stream index of the first token not yet scored

  for (std::size_t start = 0; start < stream.size(); start += stride) {
    const std::size_t end = std::min(stream.size(), start + content);
    tokens.clear();
    if (p.bos) tokens.push_back(p.bos_token_id);
    tokens.insert(tokens.end(), stream.begin() + static_cast<long>(start), stream.begin() + static_cast<long>(end));
    const int offset = p.bos ? 1 : 0;  // position of stream[start] in tokens
    // Positions whose logits predict a not-yet-scored stream token.
    request.logit_rows.clear();
    for (std::size_t t = std::max(start, scored_until); t < end; ++t) {
      if (t == start && !p.bos) continue;  // nothing before it in this window predicts it
      request.logit_rows.push_back(static_cast<int>(t - start) + offset - 1);
    }
    if (!request.logit_rows.empty()) {
      model.forward(tokens, request, nullptr, &logits);
      for (std::size_t r = 0; r < request.logit_rows.size(); ++r) {
        const int target = tokens[static_cast<std::size_t>(request.logit_rows[r] + 1)];
        log_softmax(std::span<const float>(logits).subspan(r * vocab, static_cast<std::size_t>(vocab)), row);
        const double nll = -static_cast<double>(row[static_cast<std::size_t>(target)]);
        result.nll.push_back(nll);
        nll_sum += nll;
        const std::size_t index = result.tokens++;
        if (reference != nullptr) {
          ATTNGEOM_CHECK(index < reference->targets.size() && reference->targets[index] == target);
          const float* ref = reference->log_probs.data() + index * static_cast<std::size_t>(vocab);
          double kl = 0;
          for (int v = 0; v < vocab; ++v)
            kl += std::exp(static_cast<double>(ref[v])) * (ref[v] - row[static_cast<std::size_t>(v)]);
          kl_sum += kl;
          const auto argmax = [&](const float* x) { return std::max_element(x, x + vocab) - x; };
          agree += argmax(ref) == argmax(row.data()) ? 1 : 0;
        }
        if (keep != nullptr) {
          keep->targets.push_back(target);
          keep->log_probs.insert(keep->log_probs.end(), row.begin(), row.end());
        }
      }
    }
    scored_until = end;
    if (end == stream.size()) break;
  }
  if (result.tokens == 0) return result;
  result.mean_nll = nll_sum / static_cast<double>(result.tokens);
  result.perplexity = std::exp(result.mean_nll);
  if (reference != nullptr) {
    ATTNGEOM_CHECK(reference->targets.size() == result.tokens);
    result.kl_from_reference = kl_sum / static_cast<double>(result.tokens);
    result.top1_agreement = static_cast<double>(agree) / static_cast<double>(result.tokens);
  }
  return result;
}

}  // namespace attngeom
