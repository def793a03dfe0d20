#include "geometry/value_diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "geometry/lag_band.h"
#include "geometry/lane_sums.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

// Vectorised: the reduction pragma lets the compiler reassociate the sum (-ffp-contract=off
// still keeps every product rounded on its own).
double dot(const double* a, const double* b, std::size_t n) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (std::size_t t = 0; t < n; ++t) sum += a[t] * b[t];
  return sum;
}

// exp(-beta tau) for tau = 1, 2, ... as powers of exp(-beta): one exp per curve instead of one
// per lag (relative drift of tau ulps, far below any fit error).
double fit_error(const std::vector<double>& curve, double beta) {
  const double ratio = std::exp(-beta);
  double model = 1.0;
  double sse = 0.0;
  for (const double c : curve) {
    model *= ratio;
    const double residual = c - model;
    sse += residual * residual;
  }
  return sse;
}

// ||v||^2 in double, in the fixed order that the selection metrics and a GPU share, so that
// unit_rows, value_norms and they agree to the last bit.
double squared_norm(const float* v, std::size_t dim) { return squared_norm_in_lanes(v, dim); }

}  // namespace

std::vector<double> value_norms(const HeadRowView& row) {
  std::vector<double> norms(row.keys());
  for (std::size_t k = 0; k < row.keys(); ++k) norms[k] = std::sqrt(squared_norm(row.value(k).data(), row.dim));
  return norms;
}

UnitRows unit_rows(const HeadRowView& row) {
  validate(row);
  UnitRows out;
  out.dim = row.dim;
  out.values = row.values.data();
  out.inverse_norms.resize(row.keys());
  out.rounded.resize(row.values.size());
  out.norms.resize(row.keys());
  out.defined.resize(row.keys());
  for (std::size_t k = 0; k < row.keys(); ++k) {
    const float* v = row.value(k).data();
    const double sq = squared_norm(v, row.dim);
    out.norms[k] = std::sqrt(sq);
    out.defined[k] = sq > 0.0;
    const double inverse = sq > 0.0 ? 1.0 / out.norms[k] : 0.0;
    out.inverse_norms[k] = inverse;
    float* u = out.rounded.data() + k * row.dim;
    for (std::size_t t = 0; t < row.dim; ++t) u[t] = static_cast<float>(v[t] * inverse);
  }
  return out;
}

NormStats norm_stats(const HeadRowView& row) { return norm_stats(unit_rows(row)); }

NormStats norm_stats(const UnitRows& u) { return norm_stats(u.norms); }

NormStats norm_stats(std::span<const double> norms) {
  NormStats out;
  out.sink_norm = norms[0];
  const std::size_t content = norms.size() - 1;
  if (content == 0) return out;
  for (std::size_t k = 1; k < norms.size(); ++k) out.mean_norm += norms[k];
  out.mean_norm /= static_cast<double>(content);
  if (out.mean_norm <= 0.0) return out;
  out.lambda = out.sink_norm / out.mean_norm;
  if (content < 2) return out;
  double sq_dev = 0.0;
  for (std::size_t k = 1; k < norms.size(); ++k) sq_dev += (norms[k] - out.mean_norm) * (norms[k] - out.mean_norm);
  out.cv = std::sqrt(sq_dev / static_cast<double>(content - 1)) / out.mean_norm;
  return out;
}

double sink_similarity(const HeadRowView& row) { return sink_similarity(unit_rows(row)); }

double sink_similarity(const UnitRows& u) { return sink_similarity(sink_cosines(u), u.defined, u.keys()); }

std::vector<double> sink_cosines(const UnitRows& u) {
  std::vector<double> cosines(u.keys(), 0.0);  // [M]
  if (u.keys() == 0 || !u.defined[0]) return cosines;
  std::vector<double> sink(u.dim);     // [d] u_0
  std::vector<double> content(u.dim);  // [d] u_k
  u.unit(0, sink.data());
  for (std::size_t k = 1; k < u.keys(); ++k) {
    if (!u.defined[k]) continue;
    u.unit(k, content.data());
    cosines[k] = dot(sink.data(), content.data(), u.dim);
  }
  return cosines;
}

double sink_similarity(std::span<const double> cosines, std::span<const unsigned char> defined, std::size_t keys) {
  if (keys == 0 || !defined[0]) return 0.0;
  double sum = 0.0;
  std::size_t pairs = 0;
  for (std::size_t k = 1; k < keys; ++k) {
    if (!defined[k]) continue;
    sum += cosines[k];
    ++pairs;
  }
  // A mean of unit-vector cosines lies in [-1, 1]; identical values round to 1 + 2e-16.
  return pairs > 0 ? std::clamp(sum / static_cast<double>(pairs), -1.0, 1.0) : 0.0;
}

ExpDecayFit fit_exp_decay(const std::vector<double>& curve, const ExpDecayFitOptions& options) {
  if (!(options.min_beta > 0.0) || !(options.max_beta > options.min_beta) || options.grid_points < 2) {
    throw InputError("exponential fit: need 0 < min_beta < max_beta and at least 2 grid points");
  }
  ExpDecayFit out;
  if (curve.empty()) return out;
  // Grid over {0} and a log grid; the SSE is smooth in beta, so golden section between the
  // neighbours of the best grid point finds the minimum the grid brackets.
  std::vector<double> grid = {0.0};
  const double ratio = std::log(options.max_beta / options.min_beta) / static_cast<double>(options.grid_points - 1);
  for (std::size_t g = 0; g < options.grid_points; ++g)
    grid.push_back(options.min_beta * std::exp(ratio * static_cast<double>(g)));
  std::size_t best = 0;
  double best_sse = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < grid.size(); ++g) {
    const double sse = fit_error(curve, grid[g]);
    if (sse < best_sse) {
      best_sse = sse;
      best = g;
    }
  }
  double lo = grid[best > 0 ? best - 1 : 0];
  double hi = grid[std::min(best + 1, grid.size() - 1)];
  const double golden = (std::sqrt(5.0) - 1.0) / 2.0;
  for (int iteration = 0; iteration < 100 && hi - lo > 1e-12 * std::max(1.0, hi); ++iteration) {
    const double a = hi - golden * (hi - lo);
    const double b = lo + golden * (hi - lo);
    if (fit_error(curve, a) <= fit_error(curve, b)) {
      hi = b;
    } else {
      lo = a;
    }
  }
  const double refined = 0.5 * (lo + hi);
  out.beta = fit_error(curve, refined) <= best_sse ? refined : grid[best];

  double mean = 0.0;
  for (const double c : curve) mean += c;
  mean /= static_cast<double>(curve.size());
  double ss_res = 0.0;
  double ss_tot = 0.0;
  for (std::size_t t = 0; t < curve.size(); ++t) {
    const double residual = curve[t] - std::exp(-out.beta * static_cast<double>(t + 1));
    out.mae += std::abs(residual);
    ss_res += residual * residual;
    ss_tot += (curve[t] - mean) * (curve[t] - mean);
  }
  out.mae /= static_cast<double>(curve.size());
  if (ss_tot > 0.0) {
    out.r_squared = 1.0 - ss_res / ss_tot;
  } else {
    out.r_squared = ss_res == 0.0 ? 1.0 : 0.0;
  }
  return out;
}

std::size_t default_max_lag(std::size_t keys) {
  const std::size_t length = keys - 1;  // L
  return std::min<std::size_t>(64, length / 4);
}

LagCurve lag_curve(const HeadRowView& row, const LagCurveOptions& options) {
  return lag_curve(unit_rows(row), options);
}

std::size_t lag_curve_max_lag(std::size_t keys, const LagCurveOptions& options) {
  const std::size_t length = keys - 1;  // L: content keys are 1..L
  // Content pairs (i, i + tau) with 1 <= i < i + tau <= L exist up to tau = L - 1: a row
  // shorter than an explicit tau_max (early rows of --queries all) uses the lags it has.
  return options.max_lag == 0 ? default_max_lag(keys) : std::min(options.max_lag, length > 0 ? length - 1 : 0);
}

LagCurve lag_curve(const UnitRows& u, const LagCurveOptions& options) {
  const std::size_t max_lag = lag_curve_max_lag(u.keys(), options);
  return lag_curve_from_sums(lag_band_sums(u, max_lag), max_lag, options);
}

LagCurve lag_curve_from_sums(const LagBandSums& band, std::size_t max_lag, const LagCurveOptions& options) {
  LagCurve out;
  std::size_t pairs_total = 0;
  for (std::size_t tau = 1; tau <= max_lag; ++tau) {
    pairs_total += band.pairs[tau];
    out.mean_cosine.push_back(band.pairs[tau] > 0 ? band.sums[tau] / static_cast<double>(band.pairs[tau]) : 0.0);
  }
  if (pairs_total > 0)
    out.negative_pair_share = static_cast<double>(band.negative_pairs) / static_cast<double>(pairs_total);
  if (max_lag > 0) {
    const auto negative =
        std::count_if(out.mean_cosine.begin(), out.mean_cosine.end(), [](double c) { return c < 0.0; });
    out.negative_lag_share = static_cast<double>(negative) / static_cast<double>(max_lag);
  }
  out.fit = fit_exp_decay(out.mean_cosine, options.fit);
  return out;
}

}  // namespace attngeom::geometry
