#pragma once
// The geometry entry point for one head: its captured rows and its values in, its per-N and
// per-row record blocks out. The CPU runs it row by row; the caller owns the parallel loop
// over heads and row ranges, and the GQA sharing of value geometry.
#include <cstddef>
#include <span>

#include "analysis/record.h"
#include "geometry/row_analysis.h"

namespace attngeom {

// A range of one head's captured rows.
struct HeadRows {
  std::span<const int> positions;  // [rows] ascending query positions
  const float* probs = nullptr;    // [rows, seq], row q over keys 0..positions[q]
  std::size_t seq = 0;
  const float* values = nullptr;  // [seq, head_dim] the head's kv head's value states
  std::size_t head_dim = 0;
  // Each row's value geometry when shared with the other heads of a GQA group ([rows]);
  // empty: computed here.
  std::span<const geometry::ValueGeometry> shared_values;
  // Parts of each row's analysis computed elsewhere (a GPU), moved out as they are used
  // ([rows], with shared_values); an empty span: all computed here.
  std::span<geometry::GivenRowParts> given;

  geometry::HeadRowView row(std::size_t q) const;
};

// Fills per_n [rows, n_grid * per_n_fields] and per_row [rows, per_row_fields] of `schema`.
// A row the geometry refuses throws InputError naming its query position.
void analyze_head_rows(const HeadRows& head, const RecordSchema& schema, const geometry::RowAnalysisOptions& options,
                       std::span<double> per_n, std::span<double> per_row);

}  // namespace attngeom
