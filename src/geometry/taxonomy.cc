#include "geometry/taxonomy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "geometry/kmeans.h"
#include "geometry/selection_metrics.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

constexpr std::size_t kTypes = 3;  // retriever, mixer, reset: k of the cross-check
constexpr std::size_t kFeatureCount = 7;

std::array<double, kFeatureCount> as_array(const TaxonomyFeatures& f) {
  return {f.sink_share, f.last_share, f.rest_share, f.cos_sink_small, f.cos_sink_large, f.cos_last_small, f.cos_last_large};
}

double norm_of_scaled(std::span<const float> v, double a) {
  double sq = 0.0;
  for (const float x : v) sq += (a * x) * (a * x);
  return std::sqrt(sq);
}

// Mean of cos_sink / cos_last over the metrics whose N passes `keep`, or over `fallback`.
template <typename Keep>
std::pair<double, double> mean_cosines(std::span<const SelectionMetrics> grid, Keep keep, const SelectionMetrics& fallback) {
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

std::string_view head_type_name(HeadType type) {
  switch (type) {
    case HeadType::kRetriever:
      return "retriever";
    case HeadType::kMixer:
      return "mixer";
    case HeadType::kReset:
      return "reset";
    case HeadType::kUnclassified:
      return "unclassified";
  }
  ATTNGEOM_CHECK(false);
  return {};
}

HeadMagnitudes head_magnitudes(const HeadRowView& row) {
  validate(row);
  const std::size_t last = row.keys() - 1;  // L
  HeadMagnitudes m;
  m.sink = norm_of_scaled(row.value(0), row.alpha[0]);
  m.last = norm_of_scaled(row.value(last), row.alpha[last]);
  std::vector<double> rest(row.dim, 0.0);  // [d] sum_{0<i<L} alpha_i v_i
  for (std::size_t i = 1; i < last; ++i) {
    const std::span<const float> v = row.value(i);
    for (std::size_t t = 0; t < row.dim; ++t) rest[t] += static_cast<double>(row.alpha[i]) * v[t];
  }
  double sq = 0.0;
  for (const double x : rest) sq += x * x;
  m.rest = std::sqrt(sq);
  return m;
}

TaxonomyFeatures taxonomy_features(const HeadMagnitudes& magnitudes, std::span<const SelectionMetrics> grid,
                                   std::size_t keys, const TaxonomyOptions& options) {
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
  const double large_from = options.large_n_fraction * static_cast<double>(keys - 1);
  std::tie(f.cos_sink_small, f.cos_last_small) =
      mean_cosines(grid, [&](std::size_t n) { return on_grid(n) && n <= options.small_n_max; }, grid.front());
  std::tie(f.cos_sink_large, f.cos_last_large) = mean_cosines(
      grid, [&](std::size_t n) { return on_grid(n) && static_cast<double>(n) >= large_from; }, grid.back());
  return f;
}

TaxonomyFeatures mean_features(std::span<const TaxonomyFeatures> features) {
  TaxonomyFeatures mean;
  if (features.empty()) return mean;
  std::array<double, kFeatureCount> sum{};
  for (const TaxonomyFeatures& f : features) {
    const auto a = as_array(f);
    for (std::size_t i = 0; i < kFeatureCount; ++i) sum[i] += a[i];
  }
  for (double& s : sum) s /= static_cast<double>(features.size());
  mean = {sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6]};
  return mean;
}

RuleMatch classify(const TaxonomyFeatures& f, const TaxonomyOptions& o) {
  RuleMatch r;
  r.retriever = f.cos_last_small >= o.retriever_min_cos_last && f.cos_last_large >= o.retriever_min_cos_last;
  r.reset = f.sink_share >= o.reset_min_sink_share && f.cos_last_small <= o.reset_max_small_cos_last;
  r.mixer = f.cos_sink_small >= o.mixer_min_small_cos_sink && f.cos_sink_small - f.cos_sink_large >= o.mixer_min_sink_shift;
  const int matches = int{r.retriever} + int{r.reset} + int{r.mixer};
  if (matches == 1) r.label = r.retriever ? HeadType::kRetriever : r.mixer ? HeadType::kMixer : HeadType::kReset;
  return r;
}

ClusterCrossCheck kmeans_cross_check(std::span<const TaxonomyFeatures> features, std::span<const HeadType> rule_labels,
                                     const KMeansOptions& options, std::uint64_t seed) {
  const std::size_t heads = features.size();
  if (heads == 0 || rule_labels.size() != heads) throw InputError("k-means cross-check: need one rule label per head");
  // Standardise each feature (z-score), so shares and cosines weigh alike.
  std::vector<double> points(heads * kFeatureCount);  // [H, 7]
  for (std::size_t h = 0; h < heads; ++h) {
    const auto a = as_array(features[h]);
    std::copy(a.begin(), a.end(), points.begin() + static_cast<std::ptrdiff_t>(h * kFeatureCount));
  }
  for (std::size_t f = 0; f < kFeatureCount; ++f) {
    double mean = 0.0, var = 0.0;
    std::size_t defined = 0;
    for (std::size_t h = 0; h < heads; ++h) {
      const double x = points[h * kFeatureCount + f];
      if (std::isfinite(x)) mean += x, ++defined;
    }
    mean /= static_cast<double>(std::max<std::size_t>(defined, 1));
    for (std::size_t h = 0; h < heads; ++h) {
      const double x = points[h * kFeatureCount + f];
      if (std::isfinite(x)) var += (x - mean) * (x - mean);
    }
    const double sd = std::sqrt(var / static_cast<double>(std::max<std::size_t>(defined, 1)));
    for (std::size_t h = 0; h < heads; ++h) {
      double& x = points[h * kFeatureCount + f];
      x = sd > 0.0 && std::isfinite(x) ? (x - mean) / sd : 0.0;
    }
  }
  const KMeansResult clusters = kmeans(points, heads, kFeatureCount, kTypes, options.restarts, options.max_iterations, seed);

  ClusterCrossCheck out;
  // Clusters numbered by their first head: a partition gets the same numbers (and, through
  // the tie rule below, the same types) whichever seed's k-means found it.
  std::array<std::size_t, kTypes> number;
  number.fill(kTypes);
  std::size_t next = 0;
  for (const std::size_t c : clusters.assignment) {
    if (number[c] == kTypes) number[c] = next++;
  }
  for (std::size_t& c : number) {
    if (c == kTypes) c = next++;  // an empty cluster
  }
  for (const std::size_t c : clusters.assignment) out.cluster.push_back(number[c]);
  for (const HeadType label : rule_labels) out.compared += label != HeadType::kUnclassified;
  // The cluster -> type map with the most agreement, over all 3! assignments (ties: the first
  // in lexicographic order of types by cluster number).
  std::array<HeadType, kTypes> types = {HeadType::kRetriever, HeadType::kMixer, HeadType::kReset};
  std::sort(types.begin(), types.end());
  std::size_t best = 0;
  out.cluster_type.assign(types.begin(), types.end());
  do {
    std::size_t agree = 0;
    for (std::size_t h = 0; h < heads; ++h) agree += rule_labels[h] != HeadType::kUnclassified && types[out.cluster[h]] == rule_labels[h];
    if (agree > best) {
      best = agree;
      out.cluster_type.assign(types.begin(), types.end());
    }
  } while (std::next_permutation(types.begin(), types.end()));
  out.agreement = out.compared > 0 ? static_cast<double>(best) / static_cast<double>(out.compared) : 0.0;
  return out;
}

std::vector<LayerTypeShares> type_shares_by_layer(std::span<const HeadType> labels, std::size_t heads_per_layer) {
  if (heads_per_layer == 0 || labels.size() % heads_per_layer != 0) {
    throw InputError("type shares: the labels do not form whole layers");
  }
  std::vector<LayerTypeShares> out;
  for (std::size_t layer = 0; layer * heads_per_layer < labels.size(); ++layer) {
    LayerTypeShares s;
    s.layer = layer;
    for (std::size_t h = 0; h < heads_per_layer; ++h) {
      const HeadType t = labels[layer * heads_per_layer + h];
      double& share = t == HeadType::kRetriever ? s.retriever : t == HeadType::kMixer ? s.mixer : t == HeadType::kReset ? s.reset : s.unclassified;
      share += 1.0 / static_cast<double>(heads_per_layer);
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace attngeom::geometry
