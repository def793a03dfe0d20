// Taxonomy: planted Retriever / Mixer / Reset heads are labelled by the rules, the k-means
// cross-check agrees, and the helpers behave on small inputs.
#include "stats/taxonomy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "synth/planted_heads.h"
#include "synth/synthetic.h"
#include "util/error.h"

namespace attngeom::geometry {

using stats::classify;
using stats::ClusterCrossCheck;
using stats::head_type_name;
using stats::HeadType;
using stats::kmeans_cross_check;
using stats::LayerTypeShares;
using stats::mean_features;
using stats::RuleMatch;
using stats::type_shares_by_layer;
using synth::attention_profile;
using synth::planted_head_spec;
using synth::PlantedHeadSpec;
using synth::synthetic_head;
using synth::SyntheticHead;
using synth::ValueSampler;
namespace {

TEST(Taxonomy, PlantedHeadsAreLabelledWithAtLeast95PercentAccuracy) {
  constexpr std::size_t kPerType = 30;
  constexpr std::size_t kKeys = 256;
  constexpr std::size_t kDim = 64;
  std::mt19937_64 rng(6);
  const std::vector<std::size_t> grid = default_n_grid(kKeys);
  std::vector<TaxonomyFeatures> features;
  std::vector<HeadType> planted;
  std::vector<HeadType> labels;
  std::size_t correct = 0;
  for (const HeadType type : {HeadType::kRetriever, HeadType::kMixer, HeadType::kReset}) {
    std::size_t type_correct = 0;
    for (std::size_t i = 0; i < kPerType; ++i) {
      const PlantedHeadSpec spec = planted_head_spec(type, kDim, rng);
      const ValueSampler sampler(spec.values, kKeys);
      const SyntheticHead head = synthetic_head(attention_profile(spec.profile, kKeys), sampler, rng);
      const std::vector<SelectionMetrics> metrics = selection_metrics(head.view(), grid);
      features.push_back(taxonomy_features(head_magnitudes(head.view()), metrics, kKeys));
      labels.push_back(classify(features.back()).label);
      planted.push_back(type);
      type_correct += labels.back() == type;
    }
    std::printf("[taxonomy] planted %-9s: %zu/%zu labelled correctly\n", head_type_name(type).data(), type_correct,
                kPerType);
    correct += type_correct;
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(labels.size());
  const ClusterCrossCheck check = kmeans_cross_check(features, labels, {}, 17);
  std::printf(
      "[taxonomy] rule accuracy %.3f over %zu planted heads; k-means (k = 3) agreement with the rules %.3f over %zu\n",
      accuracy, labels.size(), check.agreement, check.compared);
  EXPECT_GE(accuracy, 0.95);
  EXPECT_GE(check.agreement, 0.9);
}

// The features average over the default N grid even when the row was analysed at every N
// (--every-n must not change a head's type).
TEST(Taxonomy, FeaturesDoNotDependOnTheAnalysedNList) {
  constexpr std::size_t kKeys = 300;
  std::mt19937_64 rng(9);
  for (const HeadType type : {HeadType::kRetriever, HeadType::kMixer, HeadType::kReset}) {
    const PlantedHeadSpec spec = planted_head_spec(type, 32, rng);
    const SyntheticHead head =
        synthetic_head(attention_profile(spec.profile, kKeys), ValueSampler(spec.values, kKeys), rng);
    const HeadMagnitudes m = head_magnitudes(head.view());
    const TaxonomyFeatures grid = taxonomy_features(m, selection_metrics(head.view(), default_n_grid(kKeys)), kKeys);
    const TaxonomyFeatures every = taxonomy_features(m, selection_metrics(head.view(), every_n(kKeys)), kKeys);
    EXPECT_NEAR(grid.cos_sink_small, every.cos_sink_small, 1e-12);
    EXPECT_NEAR(grid.cos_last_small, every.cos_last_small, 1e-12);
    EXPECT_NEAR(grid.cos_sink_large, every.cos_sink_large, 1e-12);
    EXPECT_NEAR(grid.cos_last_large, every.cos_last_large, 1e-12);
  }
}

// The small and large N sets by hand: metrics with cos_sink = N and cos_last = -N on every
// N. small = the default grid's N <= 4; large = its N >= 0.25 (M - 1), the bound included.
TEST(Taxonomy, SmallAndLargeNSetsIncludeTheirBounds) {
  for (const std::size_t keys : {64u, 65u}) {  // 0.25 (M - 1) = 15.75, then exactly 16 (a grid N)
    std::vector<SelectionMetrics> grid;
    for (const std::size_t n : default_n_grid(keys)) {
      SelectionMetrics m;
      m.n = n;
      m.cos_sink = static_cast<double>(n);
      m.cos_last = -static_cast<double>(n);
      grid.push_back(m);
    }
    double large_sum = 0.0, large_count = 0.0;
    for (const std::size_t n : default_n_grid(keys)) {
      if (4.0 * static_cast<double>(n) >= static_cast<double>(keys - 1))
        large_sum += static_cast<double>(n), ++large_count;
    }
    const TaxonomyFeatures f = taxonomy_features(HeadMagnitudes{1, 1, 1}, grid, keys);
    EXPECT_DOUBLE_EQ(f.cos_sink_small, 2.5) << keys;  // N = 1..4
    EXPECT_DOUBLE_EQ(f.cos_last_small, -2.5) << keys;
    EXPECT_DOUBLE_EQ(f.cos_sink_large, large_sum / large_count) << keys;
    EXPECT_DOUBLE_EQ(f.cos_last_large, -large_sum / large_count) << keys;
  }
}

TEST(Taxonomy, RulesMatchTheirOwnDescriptionsAndConflictsAreUnclassified) {
  TaxonomyFeatures retriever{0.05, 0.85, 0.1, 0.1, 0.1, 0.95, 0.9};
  EXPECT_EQ(classify(retriever).label, HeadType::kRetriever);
  TaxonomyFeatures mixer{0.2, 0.05, 0.75, 0.95, 0.3, 0.2, 0.5};
  EXPECT_EQ(classify(mixer).label, HeadType::kMixer);
  TaxonomyFeatures reset{0.9, 0.02, 0.08, 0.99, 0.97, 0.05, 0.4};
  EXPECT_EQ(classify(reset).label, HeadType::kReset);
  TaxonomyFeatures both = reset;  // a sink-dominated head whose alignment also shifts: ambiguous
  both.cos_sink_large = 0.3;
  const RuleMatch match = classify(both);
  EXPECT_TRUE(match.reset && match.mixer);
  EXPECT_EQ(match.label, HeadType::kUnclassified);
  EXPECT_EQ(classify(TaxonomyFeatures{}).label, HeadType::kUnclassified);
}

TEST(Taxonomy, MagnitudesAndDegenerateRows) {
  // alpha = (0.5, 0.3, 0.2); v_0 = (2, 0), v_1 = (0, 1), v_2 = (1, 1).
  const std::vector<float> alpha = {0.5f, 0.3f, 0.2f};
  const std::vector<float> values = {2, 0, 0, 1, 1, 1};
  const HeadMagnitudes m = head_magnitudes({alpha, values, 2});
  EXPECT_NEAR(m.sink, 1.0, 1e-7);
  EXPECT_NEAR(m.last, 0.2 * std::sqrt(2.0), 1e-7);
  EXPECT_NEAR(m.rest, 0.3, 1e-7);
  const std::vector<float> one = {1.0f};
  const std::vector<float> v = {3, 4};
  const HeadMagnitudes single = head_magnitudes({one, v, 2});
  EXPECT_EQ(single.sink, 5.0);
  EXPECT_EQ(single.last, 5.0);
  EXPECT_EQ(single.rest, 0.0);
  // One key: nothing to select, so the alignments are undefined and no rule can match
  // (before, zeros made every such head a Reset).
  const TaxonomyFeatures f = taxonomy_features(single, {}, 1);
  EXPECT_TRUE(std::isnan(f.cos_sink_small) && std::isnan(f.cos_sink_large));
  EXPECT_TRUE(std::isnan(f.cos_last_small) && std::isnan(f.cos_last_large));
  EXPECT_NEAR(f.sink_share + f.last_share + f.rest_share, 1.0, 1e-12);
  EXPECT_EQ(classify(f).label, HeadType::kUnclassified);
}

// An undefined feature sits at its field's mean: the defined heads cluster as without it,
// and every head gets a cluster.
TEST(Taxonomy, KMeansPlacesUndefinedFeaturesAtTheFieldMean) {
  // The three types differ only in the alignments, which the undefined head lacks.
  const TaxonomyFeatures a{0.4, 0.3, 0.3, 0.9, 0.9, 0.1, 0.1}, b{0.4, 0.3, 0.3, 0.1, 0.1, 0.9, 0.9},
      c{0.4, 0.3, 0.3, 0.9, 0.2, 0.2, 0.3};
  std::vector<TaxonomyFeatures> features = {a, a, b, b, c, c};
  const std::vector<HeadType> labels = {HeadType::kReset,     HeadType::kReset, HeadType::kRetriever,
                                        HeadType::kRetriever, HeadType::kMixer, HeadType::kMixer};
  const ClusterCrossCheck defined = kmeans_cross_check(features, labels, {}, 3);
  EXPECT_DOUBLE_EQ(defined.agreement, 1.0);
  TaxonomyFeatures undefined = a;
  undefined.cos_sink_small = undefined.cos_sink_large = undefined.cos_last_small = undefined.cos_last_large = NAN;
  features.push_back(undefined);
  std::vector<HeadType> with = labels;
  with.push_back(HeadType::kUnclassified);
  const ClusterCrossCheck check = kmeans_cross_check(features, with, {}, 3);
  ASSERT_EQ(check.cluster.size(), 7u);
  EXPECT_LT(check.cluster[6], 3u);
  EXPECT_EQ(check.compared, 6u);
  EXPECT_DOUBLE_EQ(check.agreement, 1.0);
  // Every feature undefined for every head: no NaN reaches k-means.
  const std::vector<TaxonomyFeatures> none(4, TaxonomyFeatures{NAN, NAN, NAN, NAN, NAN, NAN, NAN});
  const ClusterCrossCheck empty = kmeans_cross_check(none, std::vector<HeadType>(4, HeadType::kUnclassified), {}, 3);
  for (const std::size_t k : empty.cluster) EXPECT_LT(k, 3u);
  EXPECT_EQ(empty.compared, 0u);
}

// Three clear groups, of which the rules label only the first: every seed finds the same
// partition, so it must report the same cluster numbers and the same cluster types (the
// unlabelled groups' types come from the tie rule, which once followed k-means' numbering).
TEST(Taxonomy, KMeansLabelsDependOnThePartitionNotTheSeed) {
  const TaxonomyFeatures a{0.4, 0.3, 0.3, 0.9, 0.9, 0.1, 0.1}, b{0.4, 0.3, 0.3, 0.1, 0.1, 0.9, 0.9},
      c{0.4, 0.3, 0.3, 0.9, 0.2, 0.2, 0.3};
  const std::vector<TaxonomyFeatures> features = {b, a, c, a, b, c};
  const std::vector<HeadType> labels = {HeadType::kUnclassified, HeadType::kReset,        HeadType::kUnclassified,
                                        HeadType::kReset,        HeadType::kUnclassified, HeadType::kUnclassified};
  const ClusterCrossCheck first = kmeans_cross_check(features, labels, {}, 1);
  EXPECT_EQ(first.cluster, (std::vector<std::size_t>{0, 1, 2, 1, 0, 2}));
  for (std::uint64_t seed = 2; seed <= 20; ++seed) {
    const ClusterCrossCheck other = kmeans_cross_check(features, labels, {}, seed);
    EXPECT_EQ(other.cluster, first.cluster) << "seed " << seed;
    EXPECT_EQ(other.cluster_type, first.cluster_type) << "seed " << seed;
  }
  EXPECT_EQ(first.cluster_type[1], HeadType::kReset);
  EXPECT_DOUBLE_EQ(first.agreement, 1.0);
}

TEST(Taxonomy, LayerSharesAndMeanFeatures) {
  const std::vector<HeadType> labels = {HeadType::kRetriever,    HeadType::kRetriever, HeadType::kMixer,
                                        HeadType::kUnclassified, HeadType::kReset,     HeadType::kReset,
                                        HeadType::kReset,        HeadType::kMixer};
  const std::vector<LayerTypeShares> shares = type_shares_by_layer(labels, 4);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_DOUBLE_EQ(shares[0].retriever, 0.5);
  EXPECT_DOUBLE_EQ(shares[0].unclassified, 0.25);
  EXPECT_DOUBLE_EQ(shares[1].reset, 0.75);
  EXPECT_THROW(type_shares_by_layer(labels, 3), InputError);
  const std::vector<TaxonomyFeatures> two = {{1, 0, 0, 1, 1, 0, 0}, {0, 1, 0, 0, 0, 1, 1}};
  const TaxonomyFeatures mean = mean_features(two);
  EXPECT_DOUBLE_EQ(mean.sink_share, 0.5);
  EXPECT_DOUBLE_EQ(mean.cos_last_large, 0.5);
}

}  // namespace
}  // namespace attngeom::geometry
