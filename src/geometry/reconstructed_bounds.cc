#include "geometry/reconstructed_bounds.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "geometry/bound_model.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

// R2's terms by support, each computed once per support and row (support_term), instead of
// once per key and N: at one N the keys share at most three supports.
class SupportTerms {
 public:
  SupportTerms(const ProbabilisticEnvelopeOptions& o, std::size_t keys)
      : options_(o), keys_(keys), known_(keys + 2, false), by_support_(keys + 2) {}

  double margin_root(std::size_t support) { return terms(support).margin_root; }
  double tail(double margin, double spread, std::size_t support) {
    return support_tail(terms(support), margin, spread, options_.dim, options_.sigma2);
  }

 private:
  const SupportTerm& terms(std::size_t support) {
    if (!known_[support]) {
      by_support_[support] = support_term(support, options_.sigma2, options_.delta, keys_, options_.dim);
      known_[support] = true;
    }
    return by_support_[support];
  }

  ProbabilisticEnvelopeOptions options_;
  std::size_t keys_;
  std::vector<bool> known_;              // [M + 2] by support n <= M + 1
  std::vector<SupportTerm> by_support_;  // [M + 2]
};

// R1 at one N of the sweep: D^2 in [mu - T eta, mu + T eta].
class DeterministicStep {
 public:
  DeterministicStep(double eta, std::size_t keys) : eta_(eta), lo_(keys), hi_(keys) {
    if (!std::isfinite(eta) || eta < 0.0) throw InputError("R1 (reconstructed): eta must be finite and >= 0");
  }

  EnvelopePoint at(const ModelSweep& model) {
    return deterministic_point(model.state(), model.keys(), eta_, lo_.data(), hi_.data());
  }

 private:
  double eta_;
  std::vector<double> lo_, hi_;  // [M] scratch: the interval of each D^2
};

// R2 at one N of the sweep: each key within its margin at tail delta / M (a union over the
// M keys), and the separation statements.
class ProbabilisticStep {
 public:
  ProbabilisticStep(const ProbabilisticEnvelopeOptions& options, std::size_t keys)
      : terms_(options, keys), lo_(keys), hi_(keys) {
    if (options.dim == 0) throw InputError("R2 (reconstructed): the dimension d is required");
    if (!(options.sigma2 > 0.0) || !std::isfinite(options.sigma2))
      throw InputError("R2 (reconstructed): sigma^2 must be > 0");
    if (!(options.delta > 0.0 && options.delta < 1.0)) throw InputError("R2 (reconstructed): delta must lie in (0, 1)");
  }

  void add(const ModelSweep& model, ProbabilisticEnvelope& out) {
    const std::size_t keys = model.keys();
    std::size_t least = 0;
    std::size_t most = 0;
    support_range(model.state().support, keys, least, most);
    ATTNGEOM_CHECK(most - least <= 2);
    std::array<double, 3> roots{};  // by support - least; unused below support 2
    for (std::size_t k = 0; k <= most - least; ++k) {
      if (least + k >= 2) roots[k] = terms_.margin_root(least + k);
    }
    out.points.push_back(probabilistic_point(model.state(), keys, least, roots.data(), lo_.data(), hi_.data()));
    auto tail = [this](double margin, double spread, std::size_t support) {
      return terms_.tail(margin, spread, support);
    };
    out.separation.push_back(separation_bound(model.state(), keys, tail));
  }

 private:
  SupportTerms terms_;
  std::vector<double> lo_, hi_;  // [M] scratch: the interval of each D^2
};

// Advances one model sweep through n_values, handing each N's state to `at`.
template <class AtEachN>
void sweep_n_values(const BoundInputs& inputs, std::span<const std::size_t> n_values, AtEachN at) {
  ModelSweep model(inputs);
  check_n_values(n_values, model.keys());
  for (const std::size_t n : n_values) {
    model.advance_to(n);
    at(model);
  }
}

}  // namespace

std::vector<EnvelopePoint> deterministic_envelope(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                                  double eta) {
  DeterministicStep r1(eta, inputs.alpha.size());
  std::vector<EnvelopePoint> out;
  sweep_n_values(inputs, n_values, [&](const ModelSweep& model) { out.push_back(r1.at(model)); });
  return out;
}

ProbabilisticEnvelope probabilistic_envelope(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                             const ProbabilisticEnvelopeOptions& options) {
  ProbabilisticStep r2(options, inputs.alpha.size());
  ProbabilisticEnvelope out;
  sweep_n_values(inputs, n_values, [&](const ModelSweep& model) { r2.add(model, out); });
  return out;
}

ReconstructedEnvelopes reconstructed_envelopes(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                               double r1_eta, const ProbabilisticEnvelopeOptions& r2_options) {
  DeterministicStep r1(r1_eta, inputs.alpha.size());
  ProbabilisticStep r2(r2_options, inputs.alpha.size());
  ReconstructedEnvelopes out;
  sweep_n_values(inputs, n_values, [&](const ModelSweep& model) {
    out.r1.push_back(r1.at(model));
    r2.add(model, out.r2);
  });
  return out;
}

std::vector<EnvelopePoint> sufficient_condition(std::span<const SelectionMetrics> measured, std::size_t keys) {
  std::vector<EnvelopePoint> out;
  for (const SelectionMetrics& m : measured) {
    if (m.n < 1 || m.n >= keys) throw InputError("R3 (reconstructed): N outside 1..M-1");
    const SeparationWitness& w = m.witness;
    const bool assumption = w.min_selected_cross_projection >= 0.0;
    const bool condition = w.min_selected_weighted_norm * w.min_selected_weighted_norm >
                           2.0 * m.a_out_max * std::max(0.0, w.max_unselected_projection);
    EnvelopePoint e;
    e.n = m.n;
    e.guarantees_separation = assumption && condition;
    if (e.guarantees_separation) {
      e.precision = e.recall = e.f_score = {1.0, 1.0};
    } else {
      e.precision = {static_cast<double>(m.n) / static_cast<double>(keys), 1.0};
      e.recall = e.f_score = {0.0, 1.0};
      e.vacuous = true;
    }
    out.push_back(e);
  }
  return out;
}

EnvelopeCoverage coverage(std::span<const EnvelopePoint> envelope, std::span<const SelectionMetrics> measured) {
  if (envelope.size() != measured.size())
    throw InputError("coverage: the envelope and the measurements differ in length");
  // P, R, F and their bounds are ratios of the same small integers, computed alike; this only
  // absorbs the last-bit differences of F's formula.
  constexpr double kSlack = 1e-12;
  const auto inside = [](const Interval& i, double x) { return x >= i.lower - kSlack && x <= i.upper + kSlack; };
  EnvelopeCoverage c;
  c.points = envelope.size();
  if (c.points == 0) return c;
  for (std::size_t i = 0; i < envelope.size(); ++i) {
    const EnvelopePoint& e = envelope[i];
    const SelectionMetrics& m = measured[i];
    if (e.n != m.n) throw InputError("coverage: the envelope and the measurements are at different N");
    c.precision += inside(e.precision, m.precision);
    c.recall += inside(e.recall, m.recall);
    c.f_score += inside(e.f_score, m.f_score);
    c.vacuous_share += e.vacuous;
    c.mean_width_precision += e.precision.width();
    c.mean_width_recall += e.recall.width();
    c.mean_width_f_score += e.f_score.width();
  }
  const double count = static_cast<double>(c.points);
  c.all = (c.precision + c.recall + c.f_score) / (3.0 * count);
  for (double* x : {&c.precision, &c.recall, &c.f_score, &c.vacuous_share, &c.mean_width_precision,
                    &c.mean_width_recall, &c.mean_width_f_score}) {
    *x /= count;
  }
  return c;
}

}  // namespace attngeom::geometry
