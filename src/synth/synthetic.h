#pragma once
// Synthetic heads (alpha, V) under chosen assumptions, docs/method.md section 8. They drive the
// ablations of `attngeom synth` and every Monte Carlo test of the reconstructed bounds.
#include <cstddef>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "geometry/head_row.h"

namespace attngeom::synth {

// ---- attention profiles -------------------------------------------------------------------

enum class ProfileKind { kFourPhase, kUniform, kBimodal, kPowerLaw };
std::string_view profile_name(ProfileKind kind);   // "four-phase", "uniform", "bimodal", "power-law"
ProfileKind parse_profile(std::string_view name);  // InputError on an unknown name

// Sink, plateau, oscillation band, exponential recency tail (docs/method.md section 3, A3).
struct FourPhaseShape {
  double sink_mass = 0.3;              // alpha_0
  double recency_mass = 0.3;           // mass of the recency phase [b2, L]
  double plateau_end = 0.5;            // b1 as a fraction of L
  double oscillation_end = 0.9;        // b2 as a fraction of L
  double oscillation_level = 2.0;      // mean level of the oscillation band / plateau level
  double oscillation_amplitude = 0.5;  // relative amplitude of the sinusoid around that level
  double oscillation_period = 8.0;     // in tokens
  double recency_decay = 4.0;          // in tokens: the tail grows as exp(-(L - i) / decay)
};

// Sink and last token, the rest spread evenly ("others ~ 0").
struct BimodalShape {
  double sink_mass = 0.45;
  double last_mass = 0.45;
};

struct ProfileSpec {
  ProfileKind kind = ProfileKind::kFourPhase;
  FourPhaseShape four_phase;
  BimodalShape bimodal;
  double power_law_exponent = 1.0;  // gamma: alpha_i ~ (i + 1)^-gamma over keys 0..L
};

// [M] an attention row summing to 1. InputError on masses or fractions out of range.
std::vector<double> attention_profile(const ProfileSpec& spec, std::size_t keys);

// ---- value vectors ------------------------------------------------------------------------

struct ValueModelSpec {
  std::size_t dim = 128;  // d
  double nu = 1.0;        // mean norm of content values
  double cv = 0.03;       // coefficient of variation of content norms (lognormal)
  double lambda = 0.2;    // sink compression nu_0 / nu
  double rho_0 = 0.1;     // cosine of the sink with every content key
  double beta = 0.05;     // content cosines exp(-beta |i - l|); +infinity: independent directions
};

// Directions are u = F z normalised, with F F^T = C and z Gaussian: F z has exactly the
// model's covariance, and u its cosines in expectation for large d (at small d the
// normalisation shrinks them; docs/geometry.md gives the measured gap). F is computed once
// here (O(M^3)); each sample is then one GEMM. beta = +infinity with rho_0 = 0 gives
// directions uniform on the sphere.
class ValueSampler {
 public:
  // InputError when the model's cosine matrix is not positive semi-definite (for long rows
  // and slow decay a large rho_0 is impossible: rho_0^2 1^T C^-1 1 must stay <= 1).
  ValueSampler(const ValueModelSpec& spec, std::size_t keys);

  std::size_t keys() const { return keys_; }
  const ValueModelSpec& spec() const { return spec_; }
  // values: [M, d]; norms drawn afresh each time.
  void sample(std::mt19937_64& rng, std::span<float> values) const;

 private:
  ValueModelSpec spec_;
  std::size_t keys_;
  std::vector<double> factor_;  // [M, M] F
};

struct SyntheticHead {
  std::vector<float> alpha;   // [M]
  std::vector<float> values;  // [M, d]
  std::size_t dim = 0;
  geometry::HeadRowView view() const { return {alpha, values, dim}; }
};

SyntheticHead synthetic_head(std::span<const double> profile, const ValueSampler& sampler, std::mt19937_64& rng);

}  // namespace attngeom::synth
