// analyze's observer: the heads of a kv group share one value geometry per captured row,
// computed once per block of heads; each head's rows are analysed in ranges on several
// threads; the cosine deviations, selection metrics and envelopes may be computed elsewhere (a
// GPU), all rows of a block at once. The record must equal one filled from geometry::analyze_row called on every
// (layer, head, row) on its own (sequence_analyzer_harness.h).
#include "analysis/sequence_analyzer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "geometry/pair_products.h"
#include "geometry/reconstructed_bounds.h"
#include "geometry/value_diagnostics.h"
#include "screened_deviations.h"
#include "sequence_analyzer_harness.h"
#include "util/error.h"

namespace attngeom {
namespace {

constexpr int kKvHeads = 2;

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

void expect_matches_per_head_analysis(const std::vector<int>& rows) {
  const AnalyzedSequence s = analyze_sequence(rows, kKvHeads);
  EXPECT_TRUE(same_bits(s.analyzed.per_n, s.expected.per_n));
  EXPECT_TRUE(same_bits(s.analyzed.per_row, s.expected.per_row));
}

TEST(SequenceAnalyzer, GqaHeadsSharingValueGeometryMatchPerHeadAnalysis) {
  expect_matches_per_head_analysis({5, 20, 47});
}

TEST(SequenceAnalyzer, RowRangesOnSeveralThreadsMatchPerHeadAnalysis) {
  std::vector<int> rows;  // more rows than one task takes
  for (int q = 3; q < kSeq; ++q) rows.push_back(q);
  expect_matches_per_head_analysis(rows);
}

TEST(SequenceAnalyzer, DeviationsComputedApartMatchPerHeadAnalysis) {
  for (const int kv_heads : {kKvHeads, kHeads}) {  // GQA, and a kv head per head
    int calls = 0;
    const AnalyzedSequence s =
        analyze_sequence({0, 5, 20, 47}, kv_heads, [&calls] { return std::make_unique<ScreenedDeviations>(&calls); });
    EXPECT_EQ(calls, kLayers * kv_heads) << kv_heads;  // once per block of heads
    EXPECT_TRUE(same_bits(s.analyzed.per_n, s.expected.per_n)) << kv_heads;
    EXPECT_TRUE(same_bits(s.analyzed.per_row, s.expected.per_row)) << kv_heads;
  }
}

// Row parts computed apart, as the CPU computes them: the selection metrics for the rows a GPU
// takes (the direct method), the envelopes from each row's shared value geometry, and every
// row's mass statistics and magnitudes. Only the
// hand-over is under test (which heads, rows and kv heads, into which entries, and which rows
// stay with the CPU).
class CpuRowParts final : public LayerRowParts {
 public:
  explicit CpuRowParts(int* selections, int* envelopes) : selections_(selections), envelopes_(envelopes) {}
  void fill(const ModelConfig& config, const ValueStates& values, const AttentionRows& rows,
            std::span<const geometry::ValueGeometry> shared, const geometry::RowAnalysisOptions& options,
            std::span<geometry::GivenRowParts> out) override {
    const std::size_t count = rows.positions.size();
    ASSERT_EQ(out.size(), static_cast<std::size_t>(rows.heads()) * count);
    for (int h = rows.head_begin; h < rows.head_end; ++h) {
      for (std::size_t q = 0; q < count; ++q) {
        const auto keys = static_cast<std::size_t>(rows.positions[q]) + 1;
        const std::vector<std::size_t> grid = geometry::default_n_grid(keys);
        if (grid.empty()) continue;
        const geometry::HeadRowView row{std::span<const float>(rows.head_rows(h) + q * rows.seq, keys),
                                        std::span<const float>(values.kv_head(config.kv_head_of(h)), keys * kDim),
                                        kDim};
        geometry::GivenRowParts& parts = out[static_cast<std::size_t>(h - rows.head_begin) * count + q];
        parts.mass = geometry::mass_stats(row.alpha, options.mass);
        parts.magnitudes = geometry::head_magnitudes(row);
        if (geometry::resolved_method(options.selection.method, grid.size(), keys) ==
            geometry::ProjectionMethod::kDirect) {
          parts.selection = geometry::selection_metrics(row, grid, options.selection);
          ++*selections_;
        }
        if (!options.bounds) continue;
        const geometry::ValueGeometry& v = shared[static_cast<std::size_t>(config.kv_head_of(h)) * count + q];
        const geometry::BoundSettings settings = geometry::bound_settings(v.deviation, v.lag, options);
        geometry::ReconstructedEnvelopes envelopes =
            geometry::reconstructed_envelopes({row.alpha, geometry::value_norms(row), v.model}, grid, settings.eta,
                                              {kDim, settings.sigma2, options.r2_delta});
        parts.r1 = std::move(envelopes.r1);
        parts.r2 = std::move(envelopes.r2);
        ++*envelopes_;
      }
    }
  }

 private:
  int* selections_;
  int* envelopes_;
};

TEST(SequenceAnalyzer, RowPartsComputedApartMatchPerHeadAnalysis) {
  // M = 1 has no N; M = 6 and 100 take the Gram method (the CPU's); M = 128 and 200 the direct one.
  const std::vector<int> rows = {0, 5, 99, 127, 199};
  for (const int kv_heads : {kKvHeads, kHeads}) {
    int selections = 0;
    int envelopes = 0;
    const AnalyzedSequence s = analyze_sequence(
        rows, kv_heads, {}, [&] { return std::make_unique<CpuRowParts>(&selections, &envelopes); }, 200);
    EXPECT_EQ(selections, kLayers * kHeads * 2) << kv_heads;
    EXPECT_EQ(envelopes, kLayers * kHeads * 4) << kv_heads;
    EXPECT_TRUE(same_bits(s.analyzed.per_n, s.expected.per_n)) << kv_heads;
    EXPECT_TRUE(same_bits(s.analyzed.per_row, s.expected.per_row)) << kv_heads;
  }
}

TEST(SequenceAnalyzer, DeviationsApartAreNotAskedForWithoutBounds) {
  int calls = 0;
  const ModelConfig config = attention_shape_config(1, kHeads, kKvHeads, kDim);
  const RecordSchema schema = make_record_schema(kSeq, false);
  for (const bool every_n : {false, true}) {
    geometry::RowAnalysisOptions options;
    options.bounds = every_n;  // no bounds; or bounds with every N, whose double Gram gives them
    options.every_n = every_n;
    SequenceAnalyzer analyzer(config, schema, options);
    analyzer.use_deviations(std::make_shared<InstancePool<LayerDeviations>>(
        [&calls] { return std::make_unique<ScreenedDeviations>(&calls); }, 1));
    std::mt19937_64 rng(5);
    const std::vector<int> rows = {30};
    const std::vector<float> values(kKvHeads * kSeq * kDim, 0.25f);
    const std::vector<float> probs = causal_probs(rng, rows);
    std::vector<float> block;
    for (int h = 0; h < kHeads; ++h) block.insert(block.end(), probs.begin(), probs.end());
    analyzer.begin(0, std::vector<int>(kSeq, 1), rows);
    analyzer.on_values(0, ValueStates{kKvHeads, kSeq, kDim, values.data()});
    analyzer.on_attention(0, AttentionRows{0, kHeads, rows, kSeq, block.data()});
  }
  EXPECT_EQ(calls, 0);
}

TEST(SequenceAnalyzer, ValueGeometryOfOtherKeysIsRefused) {
  std::mt19937_64 rng(3);
  const std::vector<int> rows = {9, 19};
  const std::vector<float> probs = causal_probs(rng, rows);
  std::vector<float> values(kSeq * kDim, 0.5f);
  const geometry::HeadRowView short_row{std::span<const float>(probs.data(), 10),
                                        std::span<const float>(values.data(), 10 * kDim), kDim};
  const geometry::HeadRowView long_row{std::span<const float>(probs.data() + kSeq, 20),
                                       std::span<const float>(values.data(), 20 * kDim), kDim};
  EXPECT_THROW(geometry::analyze_row(long_row, geometry::analyze_values(short_row)), InputError);
}

// Each head checks only its own weights; the values are checked once per kv head, by the
// value geometry its rows share, so a non-finite value is still refused, naming its key.
TEST(SequenceAnalyzer, ANonFiniteValueIsRefusedOncePerKvHead) {
  const ModelConfig config = attention_shape_config(1, kHeads, kKvHeads, kDim);
  const RecordSchema schema = make_record_schema(kSeq, false);
  std::mt19937_64 rng(9);
  for (const std::vector<int>& rows : std::vector<std::vector<int>>{{30}, {12, 30}}) {
    std::vector<float> values(kKvHeads * kSeq * kDim, 0.25f);
    values[(1 * kSeq + 11) * kDim + 3] = std::nanf("");  // kv head 1, key 11: in every row
    const std::vector<float> probs = causal_probs(rng, rows);
    std::vector<float> block;
    for (int h = 0; h < kHeads; ++h) block.insert(block.end(), probs.begin(), probs.end());
    SequenceAnalyzer analyzer(config, schema, geometry::RowAnalysisOptions{});
    analyzer.begin(0, std::vector<int>(kSeq, 1), rows);
    analyzer.on_values(0, ValueStates{kKvHeads, kSeq, kDim, values.data()});
    std::string error;
    try {
      analyzer.on_attention(0, AttentionRows{0, kHeads, rows, kSeq, block.data()});
    } catch (const InputError& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("value of key 11 is not finite"), std::string::npos) << rows.size() << " rows: " << error;
  }
}

}  // namespace
}  // namespace attngeom
