#pragma once
// Reconstructed bounds of docs/method.md section 4 ([OURS]: our derivation, not the paper's formulas).
// Every printed name of these bounds says "reconstructed" (see kR1Name etc.).
//
// With u_i = v_i / nu_i, model cosines c_il (CosineModel) and deviations
// delta_il = <u_i, u_l> - c_il, and for key k the weights w = alpha on I_N (w_k = 0 if k in I_N,
// w_k = -alpha_k if k in J_N):  D_k^2 = sum_il w_i w_l nu_i nu_l <u_i, u_l>  exactly, so
//   |D_k^2 - mu_k| <= T_k max|delta|,  mu_k = sum_il w_i w_l nu_i nu_l c_il,
//   T_k = sum_{i != l} |w_i w_l| nu_i nu_l.
// R1 (deterministic): all |delta| <= eta  =>  D_k^2 in [mu_k - T_k eta, mu_k + T_k eta].
// R2 (probabilistic, A4: Pr(|delta| >= t) <= 2 exp(-d t^2 / (2 sigma^2))):
//   Pr(|D_k^2 - mu_k| >= m) <= n_k (n_k - 1) exp(-d m^2 / (2 sigma^2 T_k^2)), n_k = |supp w|.
//   Each key gets the margin m_k at which its tail is delta / M, so with probability at least
//   1 - delta every D_k^2 lies in [mu_k - m_k, mu_k + m_k] at this N.
// Intervals of D^2 bound the counts: r_max^2 in [max_I lo, max_I hi], FP(r_max) between
// #{j : hi_j <= max_I lo} and #{j : lo_j <= max_I hi}, and likewise R; F rises with P and R.
// R3 (sufficient condition, from measured quantities): if <p_i, s_N - p_i> >= 0 for every
// selected i (true when all cosines among I_N are >= 0, the assumption docs/method.md states, which is what the
// proof uses) and (min_I alpha_i nu_i)^2 > 2 a_out_max max(0, max_J <v_j, s_N>), then
// Delta_N > 0 and P = R = F = 1. (The max(0, .) keeps the claim strict when every
// projection is negative.)
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "geometry/cosine_model.h"
#include "geometry/envelope_point.h"
#include "geometry/selection_metrics.h"

namespace attngeom::geometry {

inline constexpr std::string_view kR1Name = "R1-reconstructed-deterministic";
inline constexpr std::string_view kR2Name = "R2-reconstructed-probabilistic";
inline constexpr std::string_view kR3Name = "R3-reconstructed-sufficient";

// The measured inputs of R1 and R2.
struct BoundInputs {
  std::span<const float> alpha;   // [M]
  std::span<const double> norms;  // [M] nu_k = ||v_k||
  CosineModel model;              // fitted beta and measured rho_0 (or the planted ones)
};

// R1 at each N of n_values (strictly ascending, in 1..M-1). eta: the bound on |delta| (the
// measured max deviation for a proof, or a typical one such as the lag-fit MAE).
std::vector<EnvelopePoint> deterministic_envelope(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                                  double eta);

struct ProbabilisticEnvelopeOptions {
  std::size_t dim = 0;  // d, required
  double sigma2 = 1.0;  // A4's variance proxy (1 for independent directions on the sphere)
  double delta = 0.05;  // stated violation probability of the envelope at each N
};

struct ProbabilisticEnvelope {
  std::vector<EnvelopePoint> points;        // P, R, F within these with probability >= 1 - delta, at each N
  std::vector<SeparationBound> separation;  // [n_values.size()]
};
ProbabilisticEnvelope probabilistic_envelope(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                             const ProbabilisticEnvelopeOptions& options);

// R1 and R2 together: the same envelopes, with one sweep of the model for both.
struct ReconstructedEnvelopes {
  std::vector<EnvelopePoint> r1;
  ProbabilisticEnvelope r2;
};
ReconstructedEnvelopes reconstructed_envelopes(const BoundInputs& inputs, std::span<const std::size_t> n_values,
                                               double r1_eta, const ProbabilisticEnvelopeOptions& r2_options);

// R3 from the measured metrics (their SeparationWitness). keys: M.
std::vector<EnvelopePoint> sufficient_condition(std::span<const SelectionMetrics> measured, std::size_t keys);

// Share of measured points inside an envelope, and its typical width. Points pair up by N.
struct EnvelopeCoverage {
  std::size_t points = 0;
  double precision = 0.0;  // share of N with P inside
  double recall = 0.0;
  double f_score = 0.0;
  double all = 0.0;  // share of (N, metric) pairs inside
  double vacuous_share = 0.0;
  double mean_width_precision = 0.0;
  double mean_width_recall = 0.0;
  double mean_width_f_score = 0.0;
};
EnvelopeCoverage coverage(std::span<const EnvelopePoint> envelope, std::span<const SelectionMetrics> measured);

}  // namespace attngeom::geometry
