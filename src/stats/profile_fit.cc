#include "stats/profile_fit.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>

#include "geometry/simd_lanes.h"
#include "util/error.h"

namespace attngeom::stats {
namespace {

// Sums of y and y^2 over [0, i), for constant fits of any range in O(1); `padding` zeros
// past the end let a vector read run past the last index.
struct PrefixSums {
  std::vector<double> sum;     // [M + 1 + padding]
  std::vector<double> sum_sq;  // [M + 1 + padding]

  PrefixSums(std::span<const double> y, std::size_t padding)
      : sum(y.size() + 1 + padding, 0.0), sum_sq(y.size() + 1 + padding, 0.0) {
    for (std::size_t i = 0; i < y.size(); ++i) {
      sum[i + 1] = sum[i] + y[i];
      sum_sq[i + 1] = sum_sq[i] + y[i] * y[i];
    }
  }
  double mean(std::size_t begin, std::size_t end) const {
    return (sum[end] - sum[begin]) / static_cast<double>(end - begin);
  }
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

// The breakpoint screen's pairs, kDoubleLanes at a time, and their bits.
using Doubles = geometry::DoubleLanes;
using geometry::kDoubleLanes;
using Words = std::uint64_t __attribute__((vector_size(sizeof(Doubles))));
using SignedWords = std::int64_t __attribute__((vector_size(sizeof(Doubles))));

// Vectors pass and return by reference below: by value they would change the ABI on CPUs
// without AVX-512 (-Wpsabi).

// x = 2^e m with m in [1, 2), lane by lane, for x positive and normal.
struct BinarySplit {
  Doubles exponent;  // e
  Doubles mantissa;  // m
};

void split_binary(const Doubles& x, BinarySplit& out) {
  constexpr int kMantissaBits = 52;
  constexpr double kExponentBias = 1023.0;
  constexpr std::uint64_t kMantissaMask = (std::uint64_t{1} << kMantissaBits) - 1;
  const Words bits = (Words)x;  // a cast between vector types of one size keeps the bits
  out.exponent = __builtin_convertvector((SignedWords)(bits >> kMantissaBits), Doubles) - kExponentBias;
  out.mantissa = (Doubles)((bits & kMantissaMask) | std::bit_cast<std::uint64_t>(1.0));
}

// Two lower bounds of log x = e log 2 + log m. The chord of the concave log m over [1, 2) lies
// below it by less than 0.061 and needs no division.
void log_chord_bound(const BinarySplit& x, Doubles& out) { out = (x.exponent + x.mantissa - 1.0) * std::numbers::ln2; }

// log m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 + ...) with z = (m - 1) / (m + 1) in [0, 1/3). Every
// term is >= 0, so the series cut after z^9 lies below log m, by less than
// 2 z^11 / (11 (1 - z^2)) < 1.2e-6.
void log_series_bound(const BinarySplit& x, Doubles& out) {
  const Doubles z = (x.mantissa - 1.0) / (x.mantissa + 1.0);
  const Doubles z2 = z * z;
  const Doubles series = z * (2.0 + z2 * (2.0 / 3.0 + z2 * (2.0 / 5.0 + z2 * (2.0 / 7.0 + z2 * (2.0 / 9.0)))));
  out = x.exponent * std::numbers::ln2 + series;
}

static_assert(kDoubleLanes == 8, "lane_min and the lane indices below are written for eight doubles");

// The least lane, by a tree of three shuffles.
double lane_min(const Doubles& x) {
  Doubles m = x;
  Doubles shifted = __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3);
  m = shifted < m ? shifted : m;
  shifted = __builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5);
  m = shifted < m ? shifted : m;
  shifted = __builtin_shufflevector(m, m, 1, 0, 3, 2, 5, 4, 7, 6);
  m = shifted < m ? shifted : m;
  return m[0];
}

// Reads kDoubleLanes doubles from p (unaligned).
void load(const double* p, Doubles& out) { std::memcpy(&out, p, sizeof out); }

// The breakpoints (b1, b2) of least total cost, plateau [1, b1) + oscillation [b1, b2) + tail
// [b2, M), and among equal costs the first in scan order (b1, then b2, ascending): the
// exhaustive search's answer. There are O(M^2) pairs, so each group of kDoubleLanes b2 is screened
// first with lower bounds of its costs (the chord, then the series, in place of the log; 1 / n
// in place of dividing by n); only a pair whose bound may beat the best so far gets its exact
// cost. The allowances cover the rounding of either side (a few ulp) many times over.
struct Breakpoints {
  std::size_t b1 = 0;
  std::size_t b2 = 0;
};

template <class PhaseCost>
Breakpoints best_breakpoints(const PrefixSums& prefix, std::span<const TailFit> tails, std::size_t min_len,
                             double floor_variance, const PhaseCost& phase_cost) {
  constexpr double kSseRounding = 1e-14;   // relative to |sum of squares| + s^2 / n
  constexpr double kCostRounding = 1e-12;  // relative to the sum of the costs' magnitudes
  const std::size_t keys = tails.size();
  // prefix is padded, and so are these, for a group's read of kDoubleLanes entries past the last b2.
  std::vector<double> tail_cost(keys + kDoubleLanes, 0.0);  // [M + kDoubleLanes]
  for (std::size_t b2 = 0; b2 < keys; ++b2) tail_cost[b2] = tails[b2].cost;
  std::vector<double> reciprocal(keys + kDoubleLanes, 0.0);  // [M + kDoubleLanes] 1 / n, rounded
  for (std::size_t n = 1; n < reciprocal.size(); ++n) reciprocal[n] = 1.0 / static_cast<double>(n);
  const Doubles lane_index = {0, 1, 2, 3, 4, 5, 6, 7};
  const Doubles log_floor = Doubles{} + std::log(floor_variance);
  const Doubles beyond = Doubles{} + std::numeric_limits<double>::infinity();

  Breakpoints found;
  double best = std::numeric_limits<double>::infinity();
  const std::size_t end = keys - min_len + 1;  // b2 < end
  for (std::size_t b1 = 1 + min_len; b1 + 2 * min_len <= keys; ++b1) {
    const double plateau = phase_cost(static_cast<double>(b1 - 1), prefix.sse(1, b1));
    for (std::size_t b2 = b1 + min_len; b2 < end; b2 += kDoubleLanes) {
      // Lane k is the pair (b1, b2 + k), n = b2 + k - b1 keys in the oscillation.
      const Doubles n = static_cast<double>(b2 - b1) + lane_index;
      Doubles inverse_n, s, squares, tail;
      load(reciprocal.data() + (b2 - b1), inverse_n);
      load(prefix.sum.data() + b2, s);
      load(prefix.sum_sq.data() + b2, squares);
      load(tail_cost.data() + b2, tail);
      s -= prefix.sum[b1];
      squares -= prefix.sum_sq[b1];
      const Doubles mean_square = s * s * inverse_n;
      const Doubles sse_low =
          squares - mean_square - kSseRounding * ((squares < 0.0 ? -squares : squares) + mean_square);
      const Doubles variance_low = sse_low * inverse_n * (1.0 - kSseRounding);
      BinarySplit split;
      split_binary(variance_low, split);
      const Doubles fixed = plateau + tail;  // the terms without a log
      const Doubles fixed_magnitude = std::abs(plateau) + (tail < 0.0 ? -tail : tail);
      const Doubles in_range = static_cast<double>(b2) + lane_index < static_cast<double>(end) ? fixed : beyond;
      Doubles log_low, oscillation, lower;
      const auto bound_lower = [&] {
        oscillation = n * (variance_low > floor_variance ? log_low : log_floor);
        lower = in_range + oscillation -
                kCostRounding * (fixed_magnitude + (oscillation < 0.0 ? -oscillation : oscillation));
      };
      log_chord_bound(split, log_low);
      bound_lower();
      if (!(lane_min(lower) < best)) continue;
      log_series_bound(split, log_low);
      bound_lower();
      if (!(lane_min(lower) < best)) continue;
      for (std::size_t k = 0; k < kDoubleLanes; ++k) {
        if (!(lower[k] < best)) continue;
        const std::size_t pair_b2 = b2 + k;
        const double cost =
            plateau + phase_cost(static_cast<double>(pair_b2 - b1), prefix.sse(b1, pair_b2)) + tails[pair_b2].cost;
        if (cost < best) {
          best = cost;
          found = {b1, pair_b2};
        }
      }
    }
  }
  return found;
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
  const PrefixSums prefix(row, kDoubleLanes);

  // Variance floor, relative to the spread of the whole row after the sink.
  const double floor_variance = std::max(options.variance_floor * prefix.sse(1, keys) / static_cast<double>(keys - 1),
                                         std::numeric_limits<double>::min());
  const auto phase_cost = [floor_variance](double n, double sse) {
    return n * std::log(std::max(sse / n, floor_variance));
  };

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

  const Breakpoints breakpoints = best_breakpoints(prefix, tails, min_len, floor_variance, phase_cost);
  const std::size_t b1 = breakpoints.b1;
  const std::size_t b2 = breakpoints.b2;
  fit.oscillation_start = b1;
  fit.recency_start = b2;
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

}  // namespace attngeom::stats
