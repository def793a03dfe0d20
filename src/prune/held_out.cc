#include "prune/held_out.h"

#include <algorithm>
#include <cmath>

#include "analysis/resources.h"
#include "util/error.h"

namespace attngeom::prune {

std::vector<int> protocol_window_lengths(std::size_t n, const PerplexityProtocol& p) {
  // Mirrors evaluate_perplexity's loop (eval/perplexity.cc).
  const std::size_t content = p.content();
  const std::size_t stride = p.effective_stride();
  std::vector<int> lengths;
  std::size_t scored_until = p.bos ? 0 : 1;
  for (std::size_t start = 0; start < n; start += stride) {
    const std::size_t end = std::min(n, start + content);
    std::size_t first = std::max(start, scored_until);
    if (first == start && !p.bos) ++first;
    if (first < end) lengths.push_back(static_cast<int>(end - start) + (p.bos ? 1 : 0));
    scored_until = end;
    if (end == n) break;
  }
  return lengths;
}

std::uint64_t reference_distribution_bytes(std::size_t tokens, std::int64_t vocab) {
  const double bytes = 4.0 * static_cast<double>(tokens) * static_cast<double>(vocab);
  return bytes >= 0x1p64 ? UINT64_MAX : static_cast<std::uint64_t>(bytes);
}

void check_reference_fits(std::size_t tokens, std::int64_t vocab, std::optional<std::uint64_t> available) {
  const std::uint64_t need = reference_distribution_bytes(tokens, vocab);
  if (!available || need <= *available) return;
  const std::uint64_t fits = *available / (4 * static_cast<std::uint64_t>(vocab));
  throw SettingError({"prune: the unedited model's distributions over " + std::to_string(tokens) +
                          " held-out tokens take " + human_bytes(need) + " but only " + human_bytes(*available) +
                          " of memory is available; use ",
                      setting("max_tokens"), " (at most " + std::to_string(fits) + ")"});
}

HeldOutEvaluator::HeldOutEvaluator(Transformer& model, std::vector<std::vector<int>> documents,
                                   const PerplexityProtocol& protocol)
    : model_(model), protocol_(protocol) {
  for (auto& d : documents) {
    if (!protocol_window_lengths(d.size(), protocol).empty()) documents_.push_back(std::move(d));
  }
  if (documents_.empty()) throw InputError("the held-out text is too short: no token can be scored");
  for (const auto& d : documents_) {
    const auto lengths = protocol_window_lengths(d.size(), protocol);
    window_lengths_.insert(window_lengths_.end(), lengths.begin(), lengths.end());
  }
  reference_distributions_.resize(documents_.size());
  reference_ = run({}, true);
}

HeldOutScore HeldOutEvaluator::evaluate(const HeadEdits& edits) { return run(edits, false); }

HeldOutScore HeldOutEvaluator::run(const HeadEdits& edits, bool keep) {
  HeldOutScore s;
  double nll = 0, kl = 0, agree = 0;
  for (std::size_t d = 0; d < documents_.size(); ++d) {
    const PerplexityResult r =
        evaluate_perplexity(model_, documents_[d], protocol_, edits, keep ? nullptr : &reference_distributions_[d],
                            keep ? &reference_distributions_[d] : nullptr);
    ATTNGEOM_CHECK(r.tokens > 0);
    s.tokens += r.tokens;
    for (const double x : r.nll) nll += x;
    kl += r.kl_from_reference * static_cast<double>(r.tokens);
    agree += std::round(r.top1_agreement * static_cast<double>(r.tokens));  // a count
  }
  const auto tokens = static_cast<double>(s.tokens);
  s.mean_nll = nll / tokens;
  s.ppl = std::exp(s.mean_nll);
  s.kl = keep ? 0.0 : kl / tokens;
  s.top1 = keep ? 1.0 : agree / tokens;
  return s;
}

}  // namespace attngeom::prune
