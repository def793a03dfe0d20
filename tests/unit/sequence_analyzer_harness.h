#pragma once
// One sequence of analyze's observer on made-up layers (Gaussian values, random causal rows),
// beside the record that geometry::analyze_row gives called on every (layer, head, row) on
// its own: what SequenceAnalyzer must reproduce however it shares and schedules the work.
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "analysis/row_fields.h"
#include "analysis/sequence_analyzer.h"
#include "attention_shape_config.h"

namespace attngeom {

constexpr int kLayers = 2, kHeads = 6, kDim = 16, kSeq = 48;

// probs [rows, T]: a softmax over keys 0..q of each captured row q, exact zeros after it.
inline std::vector<float> causal_probs(std::mt19937_64& rng, const std::vector<int>& rows, int seq = kSeq) {
  std::normal_distribution<float> logit(0.0f, 2.0f);
  std::vector<float> probs(rows.size() * static_cast<std::size_t>(seq), 0.0f);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    float* p = probs.data() + r * static_cast<std::size_t>(seq);
    double sum = 0.0;
    for (int k = 0; k <= rows[r]; ++k) sum += p[k] = std::exp(logit(rng));
    for (int k = 0; k <= rows[r]; ++k) p[k] = static_cast<float>(p[k] / sum);
  }
  return probs;
}

struct AnalyzedSequence {
  SequenceRecord analyzed;  // by SequenceAnalyzer
  SequenceRecord expected;  // by analyze_row, head by head
};

// kHeads heads over `kv_heads` kv heads; each layer arrives in blocks of whole kv groups.
// `deviations`, `row_parts`: what makes the objects that compute those apart (empty: the
// CPU). T = seq.
inline AnalyzedSequence analyze_sequence(const std::vector<int>& rows, int kv_heads,
                                         std::function<std::unique_ptr<LayerDeviations>()> deviations = {},
                                         std::function<std::unique_ptr<LayerRowParts>()> row_parts = {},
                                         int seq = kSeq) {
  const ModelConfig config = attention_shape_config(kLayers, kHeads, kv_heads, kDim);
  const RecordSchema schema = make_record_schema(seq, false);
  const std::vector<int> tokens(seq, 1);
  std::mt19937_64 rng(17);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<std::vector<float>> values(kLayers, std::vector<float>(kv_heads * seq * kDim));  // [kv, T, d]
  for (auto& layer : values) {
    for (float& v : layer) v = gauss(rng);
  }
  std::vector<std::vector<float>> probs;  // [L * H][rows, T]
  for (int lh = 0; lh < kLayers * kHeads; ++lh) probs.push_back(causal_probs(rng, rows, seq));
  std::vector<std::vector<float>> layer_probs(kLayers);  // [L][H, rows, T]
  for (int lh = 0; lh < kLayers * kHeads; ++lh) {
    auto& layer = layer_probs[static_cast<std::size_t>(lh / kHeads)];
    layer.insert(layer.end(), probs[static_cast<std::size_t>(lh)].begin(), probs[static_cast<std::size_t>(lh)].end());
  }

  SequenceAnalyzer analyzer(config, schema, geometry::RowAnalysisOptions{});
  if (deviations) analyzer.use_deviations(std::make_shared<InstancePool<LayerDeviations>>(std::move(deviations), 1));
  if (row_parts) analyzer.use_row_parts(std::make_shared<InstancePool<LayerRowParts>>(std::move(row_parts), 1));
  analyzer.begin(0, tokens, rows);
  for (int l = 0; l < kLayers; ++l) {
    analyzer.on_values(l, ValueStates{kv_heads, seq, kDim, values[static_cast<std::size_t>(l)].data()});
    const int group = kHeads / kv_heads;
    for (int begin = 0; begin < kHeads; begin += group) {
      const float* block = layer_probs[static_cast<std::size_t>(l)].data() + begin * rows.size() * seq;
      analyzer.on_attention(l, AttentionRows{begin, begin + group, rows, seq, block});
    }
  }

  AnalyzedSequence out{analyzer.record(), {}};
  SequenceRecord& expected = out.expected;
  expected.tokens = analyzer.record().tokens;
  expected.query_positions = analyzer.record().query_positions;
  expected.resize(schema, kLayers, kHeads, seq, rows.size());
  const std::size_t n_block = schema.n_grid.size() * schema.per_n_fields.size();
  const std::size_t row_block = schema.per_row_fields.size();
  for (int l = 0; l < kLayers; ++l) {
    for (int h = 0; h < kHeads; ++h) {
      const float* kv =
          values[static_cast<std::size_t>(l)].data() + static_cast<std::size_t>(config.kv_head_of(h)) * seq * kDim;
      for (std::size_t q = 0; q < rows.size(); ++q) {
        const auto keys = static_cast<std::size_t>(rows[q]) + 1;
        const geometry::HeadRowView row{
            std::span<const float>(probs[static_cast<std::size_t>(l * kHeads + h)].data() + q * seq, keys),
            std::span<const float>(kv, keys * kDim), kDim};
        const std::size_t at = (static_cast<std::size_t>(l * kHeads + h) * rows.size() + q);
        fill_row_fields(schema, geometry::analyze_row(row),
                        std::span<double>(expected.per_n).subspan(at * n_block, n_block),
                        std::span<double>(expected.per_row).subspan(at * row_block, row_block));
      }
    }
  }
  return out;
}

}  // namespace attngeom
