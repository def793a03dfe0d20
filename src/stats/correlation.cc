#include "stats/correlation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "util/error.h"

namespace attngeom::stats {
namespace {

std::vector<double> mid_ranks(std::span<const double> x) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i + 1;
    while (j < order.size() && x[order[j]] == x[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + j - 1) + 1.0;  // mean of ranks i+1..j
    for (std::size_t k = i; k < j; ++k) ranks[order[k]] = rank;
    i = j;
  }
  return ranks;
}

bool constant(std::span<const double> x) {
  return std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); });
}

// NaN when no draw is defined (every resample constant).
double quantile(const std::vector<double>& sorted_values, double q) {
  if (sorted_values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double position = q * static_cast<double>(sorted_values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted_values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted_values[below] * (1.0 - fraction) + sorted_values[above] * fraction;
}

}  // namespace

double pearson(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw InputError("correlation: the two variables differ in length");
  const std::size_t n = x.size();
  if (n < 2) return 0.0;
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(n);
  double sxy = 0.0;
  double sxx = 0.0;
  double syy = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0.0 || syy <= 0.0) return 0.0;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

double spearman(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw InputError("correlation: the two variables differ in length");
  return pearson(mid_ranks(x), mid_ranks(y));
}

SinkRecallCorrelation sink_recall_correlation(std::span<const double> rho_0, std::span<const double> recall,
                                              std::span<const std::size_t> n_values, const BootstrapOptions& options,
                                              std::uint64_t seed) {
  const std::size_t heads = rho_0.size();
  const std::size_t grid = n_values.size();
  if (recall.size() != heads * grid) throw InputError("sink-recall: recall must hold heads x N values");
  if (options.resamples < 2 || !(options.confidence > 0.0 && options.confidence < 1.0)) {
    throw InputError("sink-recall: need at least 2 resamples and a confidence in (0, 1)");
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, heads == 0 ? 0 : heads - 1);
  // The resampled head sets, shared by every N so that the curves stay comparable.
  std::vector<std::vector<std::size_t>> samples(options.resamples, std::vector<std::size_t>(heads));
  for (auto& sample : samples) {
    for (std::size_t& h : sample) h = pick(rng);
  }
  const double tail = 0.5 * (1.0 - options.confidence);

  SinkRecallCorrelation out;
  double best = -2.0;
  std::vector<double> x, y, pearson_draws, spearman_draws;
  std::vector<char> usable(heads);
  for (std::size_t g = 0; g < grid; ++g) {
    // A head whose rows were all too short for this N has no recall there: it sits out
    // (pairwise deletion), in the full sample and in every resample.
    std::vector<double> rho_used, recall_used;
    for (std::size_t h = 0; h < heads; ++h) {
      const double r = recall[h * grid + g];
      usable[h] = std::isfinite(rho_0[h]) && std::isfinite(r);
      if (usable[h]) rho_used.push_back(rho_0[h]), recall_used.push_back(r);
    }
    SinkRecallPoint point;
    point.n = n_values[g];
    point.heads = rho_used.size();
    if (point.heads >= 3 && !constant(rho_used) && !constant(recall_used)) {
      pearson_draws.clear();
      spearman_draws.clear();
      for (const auto& sample : samples) {
        x.clear();
        y.clear();
        for (const std::size_t h : sample) {
          if (usable[h]) x.push_back(rho_0[h]), y.push_back(recall[h * grid + g]);
        }
        // A resample whose rho_0 or recall is constant has no correlation: it is left out of
        // the percentiles rather than counted as r = 0, which would pull them towards 0.
        if (x.size() < 2 || constant(x) || constant(y)) continue;
        pearson_draws.push_back(pearson(x, y));
        spearman_draws.push_back(spearman(x, y));
      }
      std::sort(pearson_draws.begin(), pearson_draws.end());
      std::sort(spearman_draws.begin(), spearman_draws.end());
      point.pearson = {pearson(rho_used, recall_used), quantile(pearson_draws, tail),
                       quantile(pearson_draws, 1.0 - tail), true};
      point.spearman = {spearman(rho_used, recall_used), quantile(spearman_draws, tail),
                        quantile(spearman_draws, 1.0 - tail), true};
      if (point.pearson.value > best) {
        best = point.pearson.value;
        out.peak_n = point.n;
      }
    }
    out.points.push_back(point);
  }
  return out;
}

CorrelationEstimate spearman_bootstrap(std::span<const double> x, std::span<const double> y,
                                       const BootstrapOptions& options, std::uint64_t seed) {
  const std::size_t one_column[] = {0};
  return sink_recall_correlation(x, y, one_column, options, seed).points.front().spearman;
}

}  // namespace attngeom::stats
