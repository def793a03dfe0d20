#pragma once
// Sink similarity vs Recall across heads, docs/method.md section 5: Pearson and Spearman correlation at
// each N with percentile-bootstrap confidence intervals. The RNG is seeded by the caller.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace attngeom::stats {

// Pearson correlation of finite values; 0 when fewer than 2 points or either variable is constant.
double pearson(std::span<const double> x, std::span<const double> y);
// Spearman correlation: Pearson of mid-ranks (ties share their mean rank).
double spearman(std::span<const double> x, std::span<const double> y);

struct BootstrapOptions {
  std::size_t resamples = 2000;
  double confidence = 0.95;  // central interval of the bootstrap distribution
};

struct CorrelationEstimate {
  double value = 0.0;  // on the full sample
  double ci_low = 0.0;
  double ci_high = 0.0;
  bool defined = false;  // false with fewer than 3 heads or a constant variable; then all 0
};

struct SinkRecallPoint {
  std::size_t n = 0;
  std::size_t heads = 0;  // heads with a finite rho_0 and R(N): the ones correlated
  CorrelationEstimate pearson;
  CorrelationEstimate spearman;
};

struct SinkRecallCorrelation {
  std::vector<SinkRecallPoint> points;  // one per N
  std::size_t peak_n = 0;               // N with the largest defined Pearson correlation (0 if none is defined)
};

// rho_0: [H] one value per head. recall: [H, G] row-major, recall[h * G + g] = R(n_values[g])
// of head h, NaN where undefined. Resampling draws heads with replacement, the same heads for
// every N; at each N only the heads with finite values take part, and a resample whose values
// are constant (no correlation) is left out of the percentiles (NaN bounds if all are).
SinkRecallCorrelation sink_recall_correlation(std::span<const double> rho_0, std::span<const double> recall,
                                              std::span<const std::size_t> n_values, const BootstrapOptions& options,
                                              std::uint64_t seed);

// Spearman correlation of x and y (one value per head, finite pairs only) with the same
// percentile bootstrap over heads: sink_recall_correlation with one column.
CorrelationEstimate spearman_bootstrap(std::span<const double> x, std::span<const double> y,
                                       const BootstrapOptions& options, std::uint64_t seed);

}  // namespace attngeom::stats
