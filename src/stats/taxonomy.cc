#include "stats/taxonomy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "stats/kmeans.h"
#include "util/error.h"

namespace attngeom::stats {
namespace {

constexpr std::size_t kTypes = 3;  // retriever, mixer, reset: k of the cross-check
constexpr std::size_t kFeatureCount = 7;

std::array<double, kFeatureCount> as_array(const TaxonomyFeatures& f) {
  return {f.sink_share,     f.last_share,     f.rest_share,    f.cos_sink_small,
          f.cos_sink_large, f.cos_last_small, f.cos_last_large};
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
  r.mixer =
      f.cos_sink_small >= o.mixer_min_small_cos_sink && f.cos_sink_small - f.cos_sink_large >= o.mixer_min_sink_shift;
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
  const KMeansResult clusters =
      kmeans(points, heads, kFeatureCount, kTypes, options.restarts, options.max_iterations, seed);

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
    for (std::size_t h = 0; h < heads; ++h)
      agree += rule_labels[h] != HeadType::kUnclassified && types[out.cluster[h]] == rule_labels[h];
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
      double& share = t == HeadType::kRetriever ? s.retriever
                      : t == HeadType::kMixer   ? s.mixer
                      : t == HeadType::kReset   ? s.reset
                                                : s.unclassified;
      share += 1.0 / static_cast<double>(heads_per_layer);
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace attngeom::stats
