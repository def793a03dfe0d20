#pragma once
// Four-phase piecewise fit of a mean attention row, docs/method.md section 3 (A3):
//   sink         position 0            f = y_0
//   plateau      [1, b1)               f = plateau level (constant)
//   oscillation  [b1, b2)              f = oscillation level (constant); its spread is the band
//   recency      [b2, L]               f = floor + amplitude * exp(-rate (L - i)), rising to the query
// The breakpoints maximise a Gaussian change-point likelihood: each phase costs
// n_phase * log(residual variance), so phases are told apart by a change of level or of spread
// (a flat plateau and an oscillation band at the same mean still split). Exhaustive over
// (b1, b2) with prefix sums: O(M^2 + M * rate grid), most pairs ruled out by a cheap lower
// bound of their cost; the chosen tail's rate is then refined between grid points by golden
// section.
#include <cstddef>
#include <span>
#include <vector>

namespace attngeom::stats {

struct FourPhaseFitOptions {
  std::size_t min_phase_length = 2;  // plateau, oscillation and recency each span at least this many keys
  // The recency rate is searched on a log grid (per token).
  double min_recency_rate = 1e-3;
  double max_recency_rate = 4.0;
  std::size_t recency_rate_points = 64;
  // Residual variances are floored at this share of the row's variance (over keys 1..L), so a
  // phase that fits exactly does not score -infinity.
  double variance_floor = 1e-6;
};

struct FourPhaseFit {
  bool fitted = false;                // false when M < 1 + 3 * min_phase_length; every other field is then 0
  std::size_t oscillation_start = 0;  // b1
  std::size_t recency_start = 0;      // b2
  double sink_weight = 0.0;
  double plateau_level = 0.0;
  double oscillation_level = 0.0;
  double oscillation_spread = 0.0;  // standard deviation of the row over [b1, b2)
  double recency_floor = 0.0;
  double recency_amplitude = 0.0;
  double recency_rate = 0.0;
  double rmse = 0.0;          // sqrt(mean (f - y)^2) over all keys
  double relative_l1 = 0.0;   // sum |f - y| / sum |y|; 0 when the row is all zero
  std::vector<double> curve;  // [M] f
};

// row: [M] mean attention weights by key position.
FourPhaseFit fit_four_phase(std::span<const double> row, const FourPhaseFitOptions& options = {});

}  // namespace attngeom::stats
