#include "geometry/head_features.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "util/error.h"

namespace attngeom::geometry {
namespace {

// Mean of cos_sink / cos_last over the metrics whose N passes `keep`, or over `fallback`.
template <typename Keep>
std::pair<double, double> mean_cosines(std::span<const SelectionMetrics> grid, Keep keep,
                                       const SelectionMetrics& fallback) {
  double sink = 0.0;
  double last = 0.0;
  std::size_t count = 0;
  for (const SelectionMetrics& m : grid) {
    if (!keep(m.n)) continue;
    sink += m.cos_sink;
    last += m.cos_last;
    ++count;
  }
  if (count == 0) return {fallback.cos_sink, fallback.cos_last};
  return {sink / static_cast<double>(count), last / static_cast<double>(count)};
}

}  // namespace

HeadMagnitudes head_magnitudes(const HeadRowView& row) { return head_magnitudes(validated(row)); }

HeadMagnitudes head_magnitudes(const ValidatedRow& checked) {
  const HeadRowView& row = checked.view();
  const std::size_t keys = row.keys();
  // rest_coordinate's sums, every coordinate at once (i outer, t inner: the same order per t).
  std::vector<double> rest(row.dim, 0.0);  // [d] sum_{0<i<L} alpha_i v_i
  for (std::size_t i = 1; i + 1 < keys; ++i) {
    const std::span<const float> v = row.value(i);
    for (std::size_t t = 0; t < row.dim; ++t) rest[t] += static_cast<double>(row.alpha[i]) * v[t];
  }
  return magnitudes_step(row.alpha.data(), row.values.data(), keys, row.dim, rest.data());
}

TaxonomyFeatures taxonomy_features(const HeadMagnitudes& magnitudes, std::span<const SelectionMetrics> grid,
                                   std::size_t keys, const FeatureWindow& window) {
  if (keys == 0) throw InputError("taxonomy: M must be >= 1");
  TaxonomyFeatures f;
  const double total = magnitudes.sink + magnitudes.last + magnitudes.rest;
  if (total > 0.0) {
    f.sink_share = magnitudes.sink / total;
    f.last_share = magnitudes.last / total;
    f.rest_share = magnitudes.rest / total;
  }
  if (grid.empty()) {
    f.cos_sink_small = f.cos_sink_large = f.cos_last_small = f.cos_last_large = std::nan("");
    return f;
  }
  // Averages over the default N grid (docs/method.md section 2) whatever N the row was analysed at: every N would
  // weight the large-N end far more and change the features with --every-n.
  const std::vector<std::size_t> default_grid = default_n_grid(keys);
  const auto on_grid = [&](std::size_t n) { return std::binary_search(default_grid.begin(), default_grid.end(), n); };
  const double large_from = window.large_n_fraction * static_cast<double>(keys - 1);
  std::tie(f.cos_sink_small, f.cos_last_small) = mean_cosines(
      grid, [&](std::size_t n) { return on_grid(n) && n <= window.small_n_max; }, grid.front());
  std::tie(f.cos_sink_large, f.cos_last_large) = mean_cosines(
      grid, [&](std::size_t n) { return on_grid(n) && static_cast<double>(n) >= large_from; }, grid.back());
  return f;
}

}  // namespace attngeom::geometry
