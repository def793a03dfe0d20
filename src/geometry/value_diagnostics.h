#pragma once
// Assumption diagnostics of one row's value vectors, docs/method.md section 3 (A1, A2).
// Keys 1..L are "content"; key 0 is the sink. Cosines with a zero vector are undefined:
// such pairs are left out of every mean below.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/head_row.h"

namespace attngeom::geometry {

// The row's unit vectors u_k = v_k (1 / ||v_k||), shared by every cosine below and by the
// bounds' deviations: in double on demand, from the row's values, and stored rounded to
// float, the input of the O(M^2 d) and O(M tau_max d) kernels. Zero vectors stay zero and
// are flagged. Holds the row's values: valid while they are.
struct UnitRows {
  std::size_t dim = 0;
  const float* values = nullptr;       // [M, d] the row's v_k
  std::vector<double> inverse_norms;   // [M] 1 / ||v_k||, 0 for a zero vector
  std::vector<float> rounded;          // [M, d] u_k rounded to float
  std::vector<double> norms;           // [M] ||v_k||
  std::vector<unsigned char> defined;  // [M] ||v_k|| > 0
  std::size_t keys() const { return norms.size(); }
  // u_k in double into out[d]; rounded_unit(k) holds the same values rounded to float.
  void unit(std::size_t k, double* out) const {
    const float* v = values + k * dim;
    for (std::size_t t = 0; t < dim; ++t) out[t] = v[t] * inverse_norms[k];
  }
  const float* rounded_unit(std::size_t k) const { return rounded.data() + k * dim; }
};
UnitRows unit_rows(const HeadRowView& row);
// [M] ||v_k||, bit for bit the norms of unit_rows, without the units.
std::vector<double> value_norms(const HeadRowView& row);

// A1: stable value norms, compressed sink.
struct NormStats {
  double sink_norm = 0.0;  // nu_0 = ||v_0||
  double mean_norm = 0.0;  // nu = mean_{i>=1} ||v_i||; 0 without content keys
  double cv = 0.0;         // std_{i>=1} ||v_i|| / nu (sample std); 0 with fewer than 2 content keys or nu = 0
  double lambda = 0.0;     // nu_0 / nu; 0 when nu = 0
};
NormStats norm_stats(const HeadRowView& row);
NormStats norm_stats(const UnitRows& units);          // from the norms unit_rows already has
NormStats norm_stats(std::span<const double> norms);  // norms [M] ||v_k||

// A2, sink similarity: rho_0 = mean_{k>=1} cos(v_0, v_k); 0 when no pair is defined.
double sink_similarity(const HeadRowView& row);
double sink_similarity(const UnitRows& units);
// [M] cos(v_0, v_k) for k >= 1 where both are non-zero, else 0: what sink_similarity averages.
std::vector<double> sink_cosines(const UnitRows& units);
// rho_0 of the row of keys 0..M-1 from sink_cosines and UnitRows::defined of at least M keys.
double sink_similarity(std::span<const double> cosines, std::span<const unsigned char> defined, std::size_t keys);

// Least-squares fit of C(tau) ~ exp(-beta tau) over tau = 1..tau_max.
struct ExpDecayFitOptions {
  // beta is searched on a log grid over [min_beta, max_beta] (and at 0), then refined by
  // golden section. exp(-10 tau) < 5e-5 from tau = 1: beyond max_beta nothing is resolvable.
  double min_beta = 1e-4;
  double max_beta = 10.0;
  std::size_t grid_points = 200;
};
struct ExpDecayFit {
  double beta = 0.0;
  double mae = 0.0;        // mean |C(tau) - exp(-beta tau)|
  double r_squared = 0.0;  // 1 - SS_res / SS_tot; when C is constant: 1 if the fit is exact, else 0
};
// curve[t] = C(t + 1). An empty curve gives the zero fit.
ExpDecayFit fit_exp_decay(const std::vector<double>& curve, const ExpDecayFitOptions& options = {});

// A2: the lag curve C(tau) = mean_{i>=1} cos(v_i, v_{i+tau}) and its exponential fit.
struct LagCurveOptions {
  std::size_t max_lag = 0;  // tau_max; 0 = the default min(64, L/4) (docs/method.md section 3); clipped to L - 1
  ExpDecayFitOptions fit;
};
struct LagCurve {
  std::vector<double> mean_cosine;   // [tau_max] C(tau), tau = 1..tau_max; 0 where no pair is defined
  double negative_pair_share = 0.0;  // share of the pairs (i, i+tau) behind C with a negative cosine
  double negative_lag_share = 0.0;   // share of the lags with C(tau) < 0 (an exponential cannot fit those)
  ExpDecayFit fit;
};
std::size_t default_max_lag(std::size_t keys);  // min(64, L/4) with L = M - 1
// The tau_max a row of `keys` keys uses: options.max_lag clipped to the lags it has, or the default.
std::size_t lag_curve_max_lag(std::size_t keys, const LagCurveOptions& options);
LagCurve lag_curve(const HeadRowView& row, const LagCurveOptions& options = {});
LagCurve lag_curve(const UnitRows& units, const LagCurveOptions& options = {});

}  // namespace attngeom::geometry
