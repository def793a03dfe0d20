#include "geometry/reconstructed_bounds.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "geometry/bound_model.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

// Union bound of R2 for one key: Pr(|D^2 - mu| >= m) <= n (n - 1) exp(-d m^2 / (2 sigma^2 T^2)),
// for m > 0 and a key with at least one off-diagonal pair (otherwise D^2 = mu exactly).
bool deterministic(double spread, std::size_t support) { return support < 2 || spread == 0.0; }

// R2's terms that depend on a key's support n alone: log(n (n - 1)) for its tail, and the root
// in its margin. At one N the keys share at most three supports (#{alpha != 0 in I_N} - 1,
// + 0, + 1), so each is computed once per support and row instead of once per key and N.
class SupportTerms {
 public:
  SupportTerms(const ProbabilisticEnvelopeOptions& o, std::size_t keys)
      : options_(o), per_key_(o.delta / static_cast<double>(keys)), by_support_(keys + 2) {}

  // The margin at which the key's tail is delta / M (a union over the M keys) is
  // spread * margin_root(n), sqrt(2 sigma^2 log(n (n - 1) M / delta) / d), for n >= 2.
  double margin_root(std::size_t support) { return terms(support).margin_root; }

  // The tail bound n (n - 1) exp(-d m^2 / (2 sigma^2 T^2)), at most 1; for m > 0 and a key that
  // is not deterministic.
  double tail(double margin, double spread, std::size_t support) {
    const Terms& t = terms(support);
    const double exponent =
        static_cast<double>(options_.dim) * margin * margin / (2.0 * options_.sigma2 * spread * spread);
    // Clearly below log(n (n - 1)), the product exceeds 1 by far more than the rounding of exp
    // and the product, so the bound is exactly 1 without the exp (most keys at most N).
    if (exponent < t.log_pairs - kSureOneGap) return 1.0;
    return std::min(1.0, t.pairs * std::exp(-exponent));
  }

 private:
  static constexpr double kSureOneGap = 1e-9;
  struct Terms {
    bool known = false;
    double pairs = 0.0;  // n (n - 1)
    double log_pairs = 0.0;
    double margin_root = 0.0;
  };

  const Terms& terms(std::size_t support) {
    Terms& t = by_support_[support];
    if (!t.known) {
      t.pairs = static_cast<double>(support) * static_cast<double>(support - 1);
      t.log_pairs = std::log(t.pairs);
      t.margin_root =
          std::sqrt(2.0 * options_.sigma2 * std::log(t.pairs / per_key_) / static_cast<double>(options_.dim));
      t.known = true;
    }
    return t;
  }

  ProbabilisticEnvelopeOptions options_;
  double per_key_;                 // delta / M
  std::vector<Terms> by_support_;  // [M + 2] by support n <= M + 1
};

// Pr(D^2 > t) and Pr(D^2 <= t), bounded.
double probability_above(double t, double mu, double spread, std::size_t support, SupportTerms& terms) {
  if (deterministic(spread, support)) return mu > t ? 1.0 : 0.0;
  return t > mu ? terms.tail(t - mu, spread, support) : 1.0;
}
double probability_at_most(double t, double mu, double spread, std::size_t support, SupportTerms& terms) {
  if (deterministic(spread, support)) return mu <= t ? 1.0 : 0.0;
  return mu > t ? terms.tail(mu - t, spread, support) : 1.0;
}

// A key that cannot deviate sits exactly at mu in exact arithmetic, but a measured distance
// carries rounding of order 1e-16 relative: a threshold placed exactly at mu would split such
// keys by the last bit. It keeps this relative distance instead.
constexpr double kFixedKeyGuard = 1e-9;

// Threshold t between the farthest selected key (p_in) and the nearest unselected one (p_out):
// where their tails balance, or, when a side cannot deviate, as far from the other side as
// that allows (just above a fixed mu_in, just below a fixed mu_out).
double balanced_threshold(const ModelSweep& model, std::size_t p_in, std::size_t p_out) {
  const double mu_in = model.mu()[p_in];
  const double mu_out = model.mu()[p_out];
  const double t_in = model.spread()[p_in];
  const double t_out = model.spread()[p_out];
  if (deterministic(t_in, model.support()[p_in])) return mu_in * (1.0 + kFixedKeyGuard);
  if (deterministic(t_out, model.support()[p_out])) return mu_out * (1.0 - kFixedKeyGuard);
  return (mu_in * t_out + mu_out * t_in) / (t_in + t_out);
}

// Delta_N > 0 whenever every selected D^2 <= t < every unselected D^2, so
// Pr(Delta_N <= 0) <= sum_I Pr(D_i^2 > t) + sum_J Pr(D_j^2 <= t) = N (1 - E[R] bound) + E[FP] bound.
SeparationBound separation_bound(const ModelSweep& model, std::size_t n, SupportTerms& terms) {
  const std::span<const double> mu = model.mu();
  const std::span<const double> spread = model.spread();
  const std::span<const std::size_t> support = model.support();
  const std::size_t keys = model.keys();
  const auto inside =
      static_cast<std::size_t>(std::max_element(mu.begin(), mu.begin() + static_cast<std::ptrdiff_t>(n)) - mu.begin());
  const auto outside =
      static_cast<std::size_t>(std::min_element(mu.begin() + static_cast<std::ptrdiff_t>(n), mu.end()) - mu.begin());
  SeparationBound b;
  b.n = n;
  b.model_margin = std::sqrt(mu[outside]) - std::sqrt(mu[inside]);
  const double t = balanced_threshold(model, inside, outside);
  b.threshold_radius = std::sqrt(std::max(0.0, t));
  double missed = 0.0;
  for (std::size_t p = 0; p < n; ++p) missed += probability_above(t, mu[p], spread[p], support[p], terms);
  for (std::size_t p = n; p < keys; ++p)
    b.expected_false_positives += probability_at_most(t, mu[p], spread[p], support[p], terms);
  b.expected_recall = 1.0 - missed / static_cast<double>(n);
  b.separation_probability = b.model_margin > 0.0 ? std::max(0.0, 1.0 - missed - b.expected_false_positives) : 0.0;
  return b;
}

// R1 at one N of the sweep: D^2 in [mu - T eta, mu + T eta].
class DeterministicStep {
 public:
  DeterministicStep(double eta, std::size_t keys) : eta_(eta), lo_(keys), hi_(keys) {
    if (!std::isfinite(eta) || eta < 0.0) throw InputError("R1 (reconstructed): eta must be finite and >= 0");
  }

  EnvelopePoint at(const ModelSweep& model, std::size_t n) {
    for (std::size_t p = 0; p < model.keys(); ++p) {
      const double margin = model.spread()[p] * eta_ + model.rounding()[p];
      lo_[p] = std::max(0.0, model.mu()[p] - margin);
      hi_[p] = model.mu()[p] + margin;
    }
    return envelope_from_intervals(n, lo_, hi_);
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

  void add(const ModelSweep& model, std::size_t n, ProbabilisticEnvelope& out) {
    const std::size_t keys = model.keys();
    const double* mu = model.mu().data();
    const double* spread = model.spread().data();
    const std::size_t* support = model.support().data();
    // At one N the keys' supports span at most three consecutive values (see SupportTerms), so
    // their margin roots are three scalars and the loop over keys vectorises.
    std::size_t least = support[0];
    std::size_t most = support[0];
#pragma omp simd reduction(min : least) reduction(max : most)
    for (std::size_t p = 0; p < keys; ++p) {
      least = std::min(least, support[p]);
      most = std::max(most, support[p]);
    }
    ATTNGEOM_CHECK(most - least <= 2);
    std::array<double, 3> roots{};  // by support - least; unused below support 2
    for (std::size_t k = 0; k <= most - least; ++k) {
      if (least + k >= 2) roots[k] = terms_.margin_root(least + k);
    }
    const double* rounding = model.rounding().data();
    double* lo = lo_.data();
    double* hi = hi_.data();
    for (std::size_t p = 0; p < keys; ++p) {
      const double root = support[p] == least ? roots[0] : support[p] == least + 1 ? roots[1] : roots[2];
      const double margin = (deterministic(spread[p], support[p]) ? 0.0 : spread[p] * root) + rounding[p];
      lo[p] = std::max(0.0, mu[p] - margin);
      hi[p] = mu[p] + margin;
    }
    out.points.push_back(envelope_from_intervals(n, lo_, hi_));
    out.separation.push_back(separation_bound(model, n, terms_));
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
    at(model, n);
  }
}

}  // namespace

std::vector<EnvelopePoint> deterministic_envelope(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                                  double eta) {
  DeterministicStep r1(eta, inputs.alpha.size());
  std::vector<EnvelopePoint> out;
  sweep_n_values(inputs, n_values, [&](const ModelSweep& model, std::size_t n) { out.push_back(r1.at(model, n)); });
  return out;
}

ProbabilisticEnvelope probabilistic_envelope(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                             const ProbabilisticEnvelopeOptions& options) {
  ProbabilisticStep r2(options, inputs.alpha.size());
  ProbabilisticEnvelope out;
  sweep_n_values(inputs, n_values, [&](const ModelSweep& model, std::size_t n) { r2.add(model, n, out); });
  return out;
}

ReconstructedEnvelopes reconstructed_envelopes(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                               double r1_eta, const ProbabilisticEnvelopeOptions& r2_options) {
  DeterministicStep r1(r1_eta, inputs.alpha.size());
  ProbabilisticStep r2(r2_options, inputs.alpha.size());
  ReconstructedEnvelopes out;
  sweep_n_values(inputs, n_values, [&](const ModelSweep& model, std::size_t n) {
    out.r1.push_back(r1.at(model, n));
    r2.add(model, n, out.r2);
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
