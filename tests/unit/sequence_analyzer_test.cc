// analyze's observer on a GQA layout: the heads of a kv group share one value geometry per
// captured row, computed once per block of heads, and each head's rows are analysed in ranges
// on several threads. The record must equal one filled from geometry::analyze_row called on
// every (layer, head, row) on its own.
#include "analysis/sequence_analyzer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "analysis/row_fields.h"
#include "attention_shape_config.h"
#include "util/error.h"

namespace attngeom {
namespace {

constexpr int kLayers = 2, kHeads = 6, kKvHeads = 2, kDim = 16, kSeq = 48;

// probs [rows, T]: a softmax over keys 0..q of each captured row q, exact zeros after it.
std::vector<float> causal_probs(std::mt19937_64& rng, const std::vector<int>& rows) {
  std::normal_distribution<float> logit(0.0f, 2.0f);
  std::vector<float> probs(rows.size() * kSeq, 0.0f);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    float* p = probs.data() + r * kSeq;
    double sum = 0.0;
    for (int k = 0; k <= rows[r]; ++k) sum += p[k] = std::exp(logit(rng));
    for (int k = 0; k <= rows[r]; ++k) p[k] = static_cast<float>(p[k] / sum);
  }
  return probs;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Each layer arrives in blocks of whole kv groups: heads [0, 3), then [3, 6).
void expect_matches_per_head_analysis(const std::vector<int>& rows) {
  const ModelConfig config = attention_shape_config(kLayers, kHeads, kKvHeads, kDim);
  const RecordSchema schema = make_record_schema(kSeq, false);
  const std::vector<int> tokens(kSeq, 1);
  std::mt19937_64 rng(17);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<std::vector<float>> values(kLayers, std::vector<float>(kKvHeads * kSeq * kDim));  // [kv, T, d]
  for (auto& layer : values) {
    for (float& v : layer) v = gauss(rng);
  }
  std::vector<std::vector<float>> probs;  // [L * H][rows, T]
  for (int lh = 0; lh < kLayers * kHeads; ++lh) probs.push_back(causal_probs(rng, rows));
  std::vector<std::vector<float>> layer_probs(kLayers);  // [L][H, rows, T]
  for (int lh = 0; lh < kLayers * kHeads; ++lh) {
    auto& layer = layer_probs[static_cast<std::size_t>(lh / kHeads)];
    layer.insert(layer.end(), probs[static_cast<std::size_t>(lh)].begin(), probs[static_cast<std::size_t>(lh)].end());
  }

  SequenceAnalyzer analyzer(config, schema, geometry::RowAnalysisOptions{});
  analyzer.begin(0, tokens, rows);
  for (int l = 0; l < kLayers; ++l) {
    analyzer.on_values(l, ValueStates{kKvHeads, kSeq, kDim, values[static_cast<std::size_t>(l)].data()});
    const int group = kHeads / kKvHeads;
    for (int begin = 0; begin < kHeads; begin += group) {
      const float* block = layer_probs[static_cast<std::size_t>(l)].data() + begin * rows.size() * kSeq;
      analyzer.on_attention(l, AttentionRows{begin, begin + group, rows, kSeq, block});
    }
  }

  SequenceRecord expected;
  expected.tokens = analyzer.record().tokens;
  expected.query_positions = analyzer.record().query_positions;
  expected.resize(schema, kLayers, kHeads, kSeq, rows.size());
  const std::size_t n_block = schema.n_grid.size() * schema.per_n_fields.size();
  const std::size_t row_block = schema.per_row_fields.size();
  for (int l = 0; l < kLayers; ++l) {
    for (int h = 0; h < kHeads; ++h) {
      const float* kv =
          values[static_cast<std::size_t>(l)].data() + static_cast<std::size_t>(config.kv_head_of(h)) * kSeq * kDim;
      for (std::size_t q = 0; q < rows.size(); ++q) {
        const auto keys = static_cast<std::size_t>(rows[q]) + 1;
        const geometry::HeadRowView row{
            std::span<const float>(probs[static_cast<std::size_t>(l * kHeads + h)].data() + q * kSeq, keys),
            std::span<const float>(kv, keys * kDim), kDim};
        const std::size_t at = (static_cast<std::size_t>(l * kHeads + h) * rows.size() + q);
        fill_row_fields(schema, geometry::analyze_row(row),
                        std::span<double>(expected.per_n).subspan(at * n_block, n_block),
                        std::span<double>(expected.per_row).subspan(at * row_block, row_block));
      }
    }
  }
  EXPECT_TRUE(same_bits(analyzer.record().per_n, expected.per_n));
  EXPECT_TRUE(same_bits(analyzer.record().per_row, expected.per_row));
}

TEST(SequenceAnalyzer, GqaHeadsSharingValueGeometryMatchPerHeadAnalysis) {
  expect_matches_per_head_analysis({5, 20, 47});
}

TEST(SequenceAnalyzer, RowRangesOnSeveralThreadsMatchPerHeadAnalysis) {
  std::vector<int> rows;  // more rows than one task takes
  for (int q = 3; q < kSeq; ++q) rows.push_back(q);
  expect_matches_per_head_analysis(rows);
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

}  // namespace
}  // namespace attngeom
