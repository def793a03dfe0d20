#pragma once
// Head taxonomy, docs/method.md section 6: Retriever / Mixer / Reset from the last-query row, with rules
// whose thresholds are named options ([OURS]) and a k-means (k = 3) cross-check. The per-row
// features it classifies are geometry/head_features.h.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "geometry/head_features.h"

namespace attngeom::stats {

using geometry::TaxonomyFeatures;

enum class HeadType { kRetriever, kMixer, kReset, kUnclassified };
std::string_view head_type_name(HeadType type);  // "retriever", "mixer", "reset", "unclassified"

struct TaxonomyOptions {
  // Where the trajectories are read (geometry::FeatureWindow).
  std::size_t small_n_max = geometry::FeatureWindow{}.small_n_max;
  double large_n_fraction = geometry::FeatureWindow{}.large_n_fraction;
  // Retriever (last-token dominated): cos(s_N, v_L) high across N.
  double retriever_min_cos_last = 0.6;  // at small and at large N
  // Reset (sink-biased normalisation): sink magnitude dominates, cos(s_N, v_L) weak at small N.
  double reset_min_sink_share = 0.5;  // sink / (sink + last + rest)
  double reset_max_small_cos_last = 0.3;
  // Mixer (gating between sink and content): aligned with v_0 at small N, shifting away as N grows.
  double mixer_min_small_cos_sink = 0.6;
  double mixer_min_sink_shift = 0.3;  // cos(s_N, v_0) at small N minus at large N
};

// Field-wise mean, to aggregate a head's features over sequences before classifying.
TaxonomyFeatures mean_features(std::span<const TaxonomyFeatures> features);

// Each rule on its own; the label is the one rule that matches, `unclassified` if none or
// more than one does.
struct RuleMatch {
  bool retriever = false;
  bool mixer = false;
  bool reset = false;
  HeadType label = HeadType::kUnclassified;
};
RuleMatch classify(const TaxonomyFeatures& features, const TaxonomyOptions& options = {});

struct KMeansOptions {
  std::size_t restarts = 10;  // k-means++ starts; the lowest within-cluster sum of squares wins
  std::size_t max_iterations = 100;
};
struct ClusterCrossCheck {
  std::vector<std::size_t> cluster;    // [H] cluster of each head, 0..2
  std::vector<HeadType> cluster_type;  // [3] the rule label each cluster maps to (best agreement)
  std::size_t compared = 0;            // heads with a rule label other than unclassified
  double agreement = 0.0;              // share of the compared heads whose cluster maps to their rule label
};
// k-means with k = 3 on the standardised features (each field z-scored over its finite
// values; a constant field, and an undefined (NaN) value, is 0: the field's mean).
ClusterCrossCheck kmeans_cross_check(std::span<const TaxonomyFeatures> features, std::span<const HeadType> rule_labels,
                                     const KMeansOptions& options, std::uint64_t seed);

// Share of each type per layer. labels: [layers, heads_per_layer] row-major.
struct LayerTypeShares {
  std::size_t layer = 0;
  double retriever = 0.0;
  double mixer = 0.0;
  double reset = 0.0;
  double unclassified = 0.0;
};
std::vector<LayerTypeShares> type_shares_by_layer(std::span<const HeadType> labels, std::size_t heads_per_layer);

}  // namespace attngeom::stats
