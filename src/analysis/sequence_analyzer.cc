#include "analysis/sequence_analyzer.h"

#include <algorithm>
#include <string>

#include "analysis/row_fields.h"
#include "analysis/screen_products.h"
#include "util/error.h"

namespace attngeom {

SequenceAnalyzer::SequenceAnalyzer(const ModelConfig& config, const RecordSchema& schema,
                                   const geometry::RowAnalysisOptions& options)
    : config_(config), schema_(schema), options_(options) {
  if (options_.pair_products == nullptr) {
    pair_products_ = make_screen_pair_products(static_cast<std::size_t>(config.head_dim));
    options_.pair_products = pair_products_.get();  // stays null (fp32) without either kernel
  }
}

void SequenceAnalyzer::begin(std::size_t sequence, std::span<const int> tokens, std::span<const int> rows) {
  record_.sequence = sequence;
  record_.tokens.assign(tokens.begin(), tokens.end());
  record_.query_positions.assign(rows.begin(), rows.end());
  record_.resize(schema_, config_.layers, config_.heads, tokens.size(), rows.size());
  values_ = nullptr;
}

void SequenceAnalyzer::on_values(int layer, const float* values) {
  (void)layer;
  values_ = values;
  if (config_.group_size() > 1) {
    shared_ = std::make_unique<SharedValues[]>(static_cast<std::size_t>(config_.kv_heads) * record_.rows());
  }
}

const geometry::ValueGeometry& SequenceAnalyzer::shared_values(int kv_head, std::size_t row_index,
                                                               const geometry::HeadRowView& row) {
  SharedValues& slot = shared_[static_cast<std::size_t>(kv_head) * record_.rows() + row_index];
  std::call_once(slot.once, [&] { slot.geometry = geometry::analyze_values(row, options_); });
  return slot.geometry;
}

void SequenceAnalyzer::on_attention(int layer, int head, const float* probs) {
  const std::size_t seq = record_.seq_len();
  const std::size_t rows = record_.rows();
  const auto d = static_cast<std::size_t>(config_.head_dim);
  ATTNGEOM_CHECK(values_ != nullptr);
  const int kv_head = config_.kv_head_of(head);
  const float* kv_values = values_ + static_cast<std::size_t>(kv_head) * seq * d;  // [T, d]
  const std::size_t lh = static_cast<std::size_t>(layer) * config_.heads + head;
  const std::size_t n_block = schema_.n_grid.size() * schema_.per_n_fields.size();
  const std::size_t row_block = schema_.per_row_fields.size();

  for (std::size_t q = 0; q < rows; ++q) {
    const auto keys = static_cast<std::size_t>(record_.query_positions[q]) + 1;  // causal: keys 0..q
    const geometry::HeadRowView row{std::span<const float>(probs + q * seq, keys),
                                    std::span<const float>(kv_values, keys * d), d};
    geometry::RowAnalysis analysis;
    try {
      analysis = shared_ ? geometry::analyze_row(row, shared_values(kv_head, q, row), options_)
                         : geometry::analyze_row(row, options_);
    } catch (const InputError& e) {  // e.g. the row check's NaN probabilities from scores that overflow float32
      throw InputError("model.layers." + std::to_string(layer) + " head " + std::to_string(head) + ", query position " +
                       std::to_string(record_.query_positions[q]) + ": " + e.what());
    }
    fill_row_fields(schema_, analysis, std::span<double>(record_.per_n).subspan((lh * rows + q) * n_block, n_block),
                    std::span<double>(record_.per_row).subspan((lh * rows + q) * row_block, row_block));
  }
  // The mean attention profile uses the last captured row.
  const float* last = probs + (rows - 1) * seq;
  std::copy(last, last + seq, record_.profile.begin() + static_cast<std::ptrdiff_t>(lh * seq));
}

}  // namespace attngeom
