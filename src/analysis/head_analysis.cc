#include "analysis/head_analysis.h"

#include <string>
#include <utility>

#include "analysis/row_fields.h"
#include "util/error.h"

namespace attngeom {

geometry::HeadRowView HeadRows::row(std::size_t q) const {
  const auto keys = static_cast<std::size_t>(positions[q]) + 1;  // causal: keys 0..q
  return {std::span<const float>(probs + q * seq, keys), std::span<const float>(values, keys * head_dim), head_dim};
}

void analyze_head_rows(const HeadRows& head, const RecordSchema& schema, const geometry::RowAnalysisOptions& options,
                       std::span<double> per_n, std::span<double> per_row) {
  const std::size_t n_block = schema.n_grid.size() * schema.per_n_fields.size();
  const std::size_t row_block = schema.per_row_fields.size();
  for (std::size_t q = 0; q < head.positions.size(); ++q) {
    const geometry::HeadRowView row = head.row(q);
    geometry::RowAnalysis analysis;
    try {
      if (head.shared_values.empty()) {
        analysis = geometry::analyze_row(row, options);
      } else if (head.given.empty()) {
        analysis = geometry::analyze_row(row, head.shared_values[q], options);
      } else {
        analysis = geometry::analyze_row(row, head.shared_values[q], std::move(head.given[q]), options);
      }
    } catch (const InputError& e) {  // e.g. the row check's NaN probabilities from scores that overflow float32
      throw InputError("query position " + std::to_string(head.positions[q]) + ": " + e.what());
    }
    fill_row_fields(schema, analysis, per_n.subspan(q * n_block, n_block), per_row.subspan(q * row_block, row_block));
  }
}

}  // namespace attngeom
