// The GPU's arrangement of each row's mass statistics and magnitudes, run on the CPU: the
// weights fully sorted (as a segmented sort gives them) instead of the top k alone, and each
// coordinate of the rest summed on its own (one GPU thread each) instead of all at once, give
// mass_stats and head_magnitudes bit for bit, on rows with ties, zero weights, zero vectors,
// and one, two or many keys.
#include "geometry/mass_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "geometry/head_features.h"
#include "geometry/mass_stats.h"
#include "geometry/row_analysis.h"
#include "random_rows.h"

namespace attngeom::geometry {
namespace {

TEST(MassStep, GpuArrangementGivesTheCpuBits) {
  std::mt19937_64 rng(29);
  int rows = 0;
  for (const std::size_t keys : {1, 2, 3, 5, 17, 200, 1500}) {
    for (const std::size_t dim : {1, 7, 64}) {
      for (const testing::RandomRowTraits traits :
           {testing::RandomRowTraits{}, testing::RandomRowTraits{0.3, 0.3, 0.1}}) {
        const testing::OwnedRow row = testing::random_row(rng, keys, dim, traits);
        std::vector<float> descending = row.alpha;
        std::sort(descending.begin(), descending.end(), std::greater<>());
        for (const MassOptions options : {MassOptions{}, MassOptions{1, 1}, MassOptions{4000, 4000}}) {
          const MassStats got = mass_step(row.alpha.data(), keys, descending.data(), options);
          const MassStats want = mass_stats(row.alpha, options);
          EXPECT_EQ(got.sink_mass, want.sink_mass) << keys;
          EXPECT_EQ(got.last_mass, want.last_mass) << keys;
          EXPECT_EQ(got.normalised_entropy, want.normalised_entropy) << keys;
          EXPECT_EQ(got.recency_mass, want.recency_mass) << keys;
          EXPECT_EQ(got.top_k_mass, want.top_k_mass) << keys;
        }
        std::vector<double> rest(dim);  // [d] one coordinate at a time
        for (std::size_t t = 0; t < dim; ++t)
          rest[t] = rest_coordinate(row.alpha.data(), row.values.data(), keys, dim, t);
        const HeadMagnitudes got = magnitudes_step(row.alpha.data(), row.values.data(), keys, dim, rest.data());
        const HeadMagnitudes want = head_magnitudes(row.view());
        EXPECT_EQ(got.sink, want.sink) << keys;
        EXPECT_EQ(got.last, want.last) << keys;
        EXPECT_EQ(got.rest, want.rest) << keys;
        ++rows;
      }
    }
  }
  EXPECT_EQ(rows, 42);
}

TEST(MassStep, AnalyzeRowKeepsTheGivenMassAndMagnitudes) {
  std::mt19937_64 rng(31);
  const testing::OwnedRow row = testing::random_row(rng, 300, 16, {});
  const ValueGeometry values = analyze_values(row.view());
  GivenRowParts given;
  given.mass = MassStats{0.5, 0.25, 0.125, 0.0625, 0.03125};
  given.magnitudes = HeadMagnitudes{3.0, 5.0, 7.0};
  const RowAnalysis a = analyze_row(row.view(), values, given);
  EXPECT_EQ(a.mass.sink_mass, 0.5);
  EXPECT_EQ(a.mass.top_k_mass, 0.03125);
  EXPECT_EQ(a.magnitudes.last, 5.0);
  EXPECT_EQ(a.taxonomy.sink_share, 3.0 / 15.0);  // the taxonomy reads the given magnitudes
  const RowAnalysis computed = analyze_row(row.view(), values, GivenRowParts{});
  EXPECT_EQ(computed.mass.sink_mass, row.alpha[0]);
}

}  // namespace
}  // namespace attngeom::geometry
