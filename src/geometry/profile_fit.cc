#include "geometry/profile_fit.h"

#include <cmath>
#include <limits>
#include <string>

#include "util/error.h"

namespace attngeom::geometry {
namespace {

// Sums of y and y^2 over [0, i), for constant fits of any range in O(1).
struct PrefixSums {
  std::vector<double> sum;     // [M + 1]
  std::vector<double> sum_sq;  // [M + 1]

  explicit PrefixSums(std::span<const double> y) : sum(y.size() + 1, 0.0), sum_sq(y.size() + 1, 0.0) {
    for (std::size_t i = 0; i < y.size(); ++i) {
      sum[i + 1] = sum[i] + y[i];
      sum_sq[i + 1] = sum_sq[i] + y[i] * y[i];
    }
  }
  double mean(std::size_t begin, std::size_t end) const { return (sum[end] - sum[begin]) / static_cast<double>(end - begin); }
  double sse(std::size_t begin, std::size_t end) const {  // residual of the constant fit
    const double s = sum[end] - sum[begin];
    return std::max(0.0, sum_sq[end] - sum_sq[begin] - s * s / static_cast<double>(end - begin));
  }
};

struct TailFit {
  double cost = std::numeric_limits<double>::infinity();
  double floor = 0.0;
  double amplitude = 0.0;
  double rate = 0.0;
};

// Least squares of y ~ floor + amplitude * e over one range, from the range's sums.
struct TailSums {
  double n = 0, e = 0, ee = 0, y = 0, ye = 0, yy = 0;
  void add(double yi, double ei) {
    n += 1;
    e += ei;
    ee += ei * ei;
    y += yi;
    ye += yi * ei;
    yy += yi * yi;
  }
  // Returns the residual sum of squares and sets floor and amplitude.
  double solve(double& floor, double& amplitude) const {
    const double det = n * ee - e * e;
    if (det > 1e-12 * n * ee) {  // e varies enough over the range to separate the two terms
      amplitude = (n * ye - e * y) / det;
      floor = (y - amplitude * e) / n;
    } else {
      amplitude = 0.0;
      floor = y / n;
    }
    const double sse = yy - 2.0 * floor * y - 2.0 * amplitude * ye + n * floor * floor + 2.0 * floor * amplitude * e +
                       amplitude * amplitude * ee;
    return std::max(0.0, sse);
  }
};

// The tail [start, M) fitted at one rate.
TailFit fit_tail(std::span<const double> row, std::size_t start, double rate) {
  const double last = static_cast<double>(row.size() - 1);
  TailSums sums;
  for (std::size_t i = start; i < row.size(); ++i) sums.add(row[i], std::exp(-rate * (last - static_cast<double>(i))));
  TailFit fit;
  fit.rate = rate;
  fit.cost = sums.solve(fit.floor, fit.amplitude);  // here: the residual sum of squares
  return fit;
}

// Golden-section search of the rate within one grid step either side of the grid's best.
TailFit refine_tail(std::span<const double> row, std::size_t start, double rate, double grid_ratio) {
  double lo = rate / grid_ratio;
  double hi = rate * grid_ratio;
  const double golden = (std::sqrt(5.0) - 1.0) / 2.0;
  for (int iteration = 0; iteration < 80; ++iteration) {
    const double a = hi - golden * (hi - lo);
    const double b = lo + golden * (hi - lo);
    if (fit_tail(row, start, a).cost <= fit_tail(row, start, b).cost) {
      hi = b;
    } else {
      lo = a;
    }
  }
  const TailFit refined = fit_tail(row, start, 0.5 * (lo + hi));
  const TailFit grid = fit_tail(row, start, rate);
  return refined.cost <= grid.cost ? refined : grid;
}

void check_options(const FourPhaseFitOptions& o) {
  if (o.min_phase_length < 1) throw InputError("four-phase fit: min_phase_length must be >= 1");
  if (!(o.min_recency_rate > 0.0) || !(o.max_recency_rate > o.min_recency_rate) || o.recency_rate_points < 2) {
    throw InputError("four-phase fit: need 0 < min_recency_rate < max_recency_rate and at least 2 rate points");
  }
  if (!(o.variance_floor >= 0.0)) throw InputError("four-phase fit: variance_floor must be >= 0");
}

}  // namespace

FourPhaseFit fit_four_phase(std::span<const double> row, const FourPhaseFitOptions& options) {
  check_options(options);
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (!std::isfinite(row[i])) throw InputError("four-phase fit: row[" + std::to_string(i) + "] is not finite");
  }
  FourPhaseFit fit;
  const std::size_t keys = row.size();
  const std::size_t min_len = options.min_phase_length;
  if (keys < 1 + 3 * min_len) return fit;
  const double last = static_cast<double>(keys - 1);  // L
  const PrefixSums prefix(row);

  // Variance floor, relative to the spread of the whole row after the sink.
  const double floor_variance =
      std::max(options.variance_floor * prefix.sse(1, keys) / static_cast<double>(keys - 1), std::numeric_limits<double>::min());
  const auto phase_cost = [floor_variance](double n, double sse) { return n * std::log(std::max(sse / n, floor_variance)); };

  // Best recency tail for every start b2, over the rate grid, from suffix sums.
  std::vector<TailFit> tails(keys);
  const double step = std::log(options.max_recency_rate / options.min_recency_rate) /
                      static_cast<double>(options.recency_rate_points - 1);
  for (std::size_t g = 0; g < options.recency_rate_points; ++g) {
    const double rate = options.min_recency_rate * std::exp(step * static_cast<double>(g));
    TailSums sums;
    for (std::size_t start = keys - 1; start >= 1 + 2 * min_len; --start) {
      sums.add(row[start], std::exp(-rate * (last - static_cast<double>(start))));
      if (keys - start < min_len) continue;
      TailFit candidate;
      candidate.rate = rate;
      const double sse = sums.solve(candidate.floor, candidate.amplitude);
      candidate.cost = phase_cost(sums.n, sse);
      if (candidate.cost < tails[start].cost) tails[start] = candidate;
    }
  }

  double best = std::numeric_limits<double>::infinity();
  for (std::size_t b1 = 1 + min_len; b1 + 2 * min_len <= keys; ++b1) {
    const double plateau = phase_cost(static_cast<double>(b1 - 1), prefix.sse(1, b1));
    for (std::size_t b2 = b1 + min_len; b2 + min_len <= keys; ++b2) {
      const double cost = plateau + phase_cost(static_cast<double>(b2 - b1), prefix.sse(b1, b2)) + tails[b2].cost;
      if (cost < best) {
        best = cost;
        fit.oscillation_start = b1;
        fit.recency_start = b2;
      }
    }
  }

  const std::size_t b1 = fit.oscillation_start;
  const std::size_t b2 = fit.recency_start;
  // The breakpoints come from the rate grid; the chosen tail's rate is then refined.
  const TailFit tail = refine_tail(row, b2, tails[b2].rate, std::exp(step));
  fit.fitted = true;
  fit.sink_weight = row[0];
  fit.plateau_level = prefix.mean(1, b1);
  fit.oscillation_level = prefix.mean(b1, b2);
  fit.oscillation_spread = std::sqrt(prefix.sse(b1, b2) / static_cast<double>(b2 - b1));
  fit.recency_floor = tail.floor;
  fit.recency_amplitude = tail.amplitude;
  fit.recency_rate = tail.rate;
  fit.curve.resize(keys);
  fit.curve[0] = fit.sink_weight;
  for (std::size_t i = 1; i < keys; ++i) {
    if (i < b1) {
      fit.curve[i] = fit.plateau_level;
    } else if (i < b2) {
      fit.curve[i] = fit.oscillation_level;
    } else {
      fit.curve[i] = tail.floor + tail.amplitude * std::exp(-tail.rate * (last - static_cast<double>(i)));
    }
  }
  double sq = 0.0;
  double abs_error = 0.0;
  double abs_total = 0.0;
  for (std::size_t i = 0; i < keys; ++i) {
    sq += (fit.curve[i] - row[i]) * (fit.curve[i] - row[i]);
    abs_error += std::abs(fit.curve[i] - row[i]);
    abs_total += std::abs(row[i]);
  }
  fit.rmse = std::sqrt(sq / static_cast<double>(keys));
  fit.relative_l1 = abs_total > 0.0 ? abs_error / abs_total : 0.0;
  return fit;
}

}  // namespace attngeom::geometry
