#include "synth/synthetic.h"

#include <cmath>
#include <numbers>
#include <string>

#include "geometry/cosine_model.h"
#include "geometry/linalg.h"
#include "util/error.h"

namespace attngeom::synth {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw InputError("synthetic: " + what);
}

std::vector<double> four_phase(const FourPhaseShape& s, std::size_t keys) {
  require(s.sink_mass >= 0.0 && s.recency_mass >= 0.0 && s.sink_mass + s.recency_mass < 1.0,
          "four-phase masses need sink >= 0, recency >= 0 and sink + recency < 1");
  require(0.0 < s.plateau_end && s.plateau_end < s.oscillation_end && s.oscillation_end < 1.0,
          "four-phase breakpoints need 0 < plateau_end < oscillation_end < 1");
  require(s.oscillation_level > 0.0 && s.oscillation_amplitude >= 0.0 && s.oscillation_amplitude < 1.0 &&
              s.oscillation_period > 0.0 && s.recency_decay > 0.0,
          "four-phase oscillation and decay parameters out of range");
  const std::size_t last = keys - 1;  // L
  const auto b1 = static_cast<std::size_t>(std::round(s.plateau_end * static_cast<double>(last)));
  const auto b2 = static_cast<std::size_t>(std::round(s.oscillation_end * static_cast<double>(last)));
  require(1 <= b1 && b1 < b2 && b2 <= last, "four-phase: the row is too short for its phases");
  std::vector<double> alpha(keys, 0.0);
  double middle = 0.0;  // plateau + oscillation, before scaling
  for (std::size_t i = 1; i < b2; ++i) {
    const double phase = 2.0 * std::numbers::pi * static_cast<double>(i - b1) / s.oscillation_period;
    alpha[i] = i < b1 ? 1.0 : s.oscillation_level * (1.0 + s.oscillation_amplitude * std::sin(phase));
    middle += alpha[i];
  }
  double tail = 0.0;
  for (std::size_t i = b2; i < keys; ++i) {
    alpha[i] = std::exp(-static_cast<double>(last - i) / s.recency_decay);
    tail += alpha[i];
  }
  const double middle_mass = 1.0 - s.sink_mass - s.recency_mass;
  for (std::size_t i = 1; i < b2; ++i) alpha[i] *= middle_mass / middle;
  for (std::size_t i = b2; i < keys; ++i) alpha[i] *= s.recency_mass / tail;
  alpha[0] = s.sink_mass;
  return alpha;
}

std::vector<double> bimodal(const BimodalShape& s, std::size_t keys) {
  require(s.sink_mass >= 0.0 && s.last_mass >= 0.0 && s.sink_mass + s.last_mass <= 1.0,
          "bimodal masses need sink >= 0, last >= 0 and sink + last <= 1");
  require(keys >= 3 || s.sink_mass + s.last_mass == 1.0, "bimodal: no middle keys to take the remaining mass");
  std::vector<double> alpha(keys, keys > 2 ? (1.0 - s.sink_mass - s.last_mass) / static_cast<double>(keys - 2) : 0.0);
  alpha.front() = s.sink_mass;
  alpha.back() = keys > 1 ? s.last_mass : alpha.back() + s.last_mass;
  return alpha;
}

std::vector<double> power_law(double exponent, std::size_t keys) {
  require(std::isfinite(exponent) && exponent >= 0.0, "power-law exponent must be finite and >= 0");
  std::vector<double> alpha(keys);
  double total = 0.0;
  for (std::size_t i = 0; i < keys; ++i) total += alpha[i] = std::pow(static_cast<double>(i + 1), -exponent);
  for (double& a : alpha) a /= total;
  return alpha;
}

}  // namespace

std::string_view profile_name(ProfileKind kind) {
  switch (kind) {
    case ProfileKind::kFourPhase:
      return "four-phase";
    case ProfileKind::kUniform:
      return "uniform";
    case ProfileKind::kBimodal:
      return "bimodal";
    case ProfileKind::kPowerLaw:
      return "power-law";
  }
  ATTNGEOM_CHECK(false);
  return {};
}

ProfileKind parse_profile(std::string_view name) {
  for (const ProfileKind kind :
       {ProfileKind::kFourPhase, ProfileKind::kUniform, ProfileKind::kBimodal, ProfileKind::kPowerLaw}) {
    if (profile_name(kind) == name) return kind;
  }
  throw InputError("unknown attention profile '" + std::string(name) + "' (four-phase, uniform, bimodal, power-law)");
}

std::vector<double> attention_profile(const ProfileSpec& spec, std::size_t keys) {
  require(keys >= 1, "a profile needs at least one key");
  switch (spec.kind) {
    case ProfileKind::kFourPhase:
      return four_phase(spec.four_phase, keys);
    case ProfileKind::kUniform:
      return std::vector<double>(keys, 1.0 / static_cast<double>(keys));
    case ProfileKind::kBimodal:
      return bimodal(spec.bimodal, keys);
    case ProfileKind::kPowerLaw:
      return power_law(spec.power_law_exponent, keys);
  }
  ATTNGEOM_CHECK(false);
  return {};
}

ValueSampler::ValueSampler(const ValueModelSpec& spec, std::size_t keys) : spec_(spec), keys_(keys) {
  require(keys >= 1 && spec.dim >= 1, "need M >= 1 and d >= 1");
  require(spec.nu > 0.0 && spec.cv >= 0.0 && spec.lambda >= 0.0, "need nu > 0, cv >= 0, lambda >= 0");
  require(std::abs(spec.rho_0) <= 1.0 && spec.beta >= 0.0, "need |rho_0| <= 1 and beta >= 0");
  const geometry::CosineModel model{spec.beta, spec.rho_0};
  const std::vector<double> by_lag = model.content_cosine_by_lag(keys);
  std::vector<double> cosines(keys * keys);  // [M, M] C
  for (std::size_t l = 0; l < keys; ++l) model.column(l, by_lag, std::span<double>(cosines).subspan(l * keys, keys));
  factor_.resize(keys * keys);
  // Round-off in C alone never needs more than this tolerance.
  constexpr double kPsdTolerance = 1e-9;
  if (!geometry::psd_factor(cosines, keys, kPsdTolerance, factor_)) {
    // With independent directions (beta = inf) C is the identity bordered by rho_0: PSD
    // exactly when L rho_0^2 <= 1.
    const std::string fix = std::isinf(spec.beta) ? "lower |rho_0| to at most 1/sqrt(L) = " +
                                                        std::to_string(1.0 / std::sqrt(static_cast<double>(keys - 1)))
                                                  : "lower rho_0 or raise beta";
    throw InputError("synthetic: the cosine model (rho_0 = " + std::to_string(spec.rho_0) +
                     ", beta = " + std::to_string(spec.beta) + ", M = " + std::to_string(keys) +
                     ") is not positive semi-definite: " + fix);
  }
}

void ValueSampler::sample(std::mt19937_64& rng, std::span<float> values) const {
  const std::size_t dim = spec_.dim;
  ATTNGEOM_CHECK(values.size() == keys_ * dim);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> z(keys_ * dim);  // [M, d]
  for (double& x : z) x = gauss(rng);
  std::vector<double> x(keys_ * dim);  // [M, d] rows with covariance C (times d)
  geometry::multiply(factor_, z, keys_, keys_, dim, x);
  // Lognormal content norms with mean nu and the requested CV; the sink is exactly lambda nu.
  const double spread = std::sqrt(std::log1p(spec_.cv * spec_.cv));
  for (std::size_t k = 0; k < keys_; ++k) {
    const double norm =
        k == 0 ? spec_.lambda * spec_.nu : spec_.nu * std::exp(spread * gauss(rng) - 0.5 * spread * spread);
    double sq = 0.0;
    for (std::size_t t = 0; t < dim; ++t) sq += x[k * dim + t] * x[k * dim + t];
    const double scale = sq > 0.0 ? norm / std::sqrt(sq) : 0.0;
    for (std::size_t t = 0; t < dim; ++t) values[k * dim + t] = static_cast<float>(x[k * dim + t] * scale);
  }
}

SyntheticHead synthetic_head(std::span<const double> profile, const ValueSampler& sampler, std::mt19937_64& rng) {
  require(profile.size() == sampler.keys(), "the profile and the value sampler disagree on M");
  SyntheticHead head;
  head.dim = sampler.spec().dim;
  head.alpha.assign(profile.begin(), profile.end());
  head.values.resize(sampler.keys() * head.dim);
  sampler.sample(rng, head.values);
  return head;
}

}  // namespace attngeom::synth
