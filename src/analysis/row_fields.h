#pragma once
// The named numbers analyze keeps for each (layer, head, sequence, query row): one list
// of per-N fields and one of per-row fields. The record schema is built from these
// lists, and every table reads fields by these names.
#include <span>
#include <string>
#include <vector>

#include "analysis/record.h"
#include "geometry/row_analysis.h"

namespace attngeom {

// The schema for sequences of `seq_len` tokens: the default N grid (docs/method.md section 2) clipped to
// seq_len - 1, or every N in 1..seq_len-1.
RecordSchema make_record_schema(std::size_t seq_len, bool every_n);

// The per-N fields holding F at the normalised radii rho ||s_N|| of
// geometry::SelectionOptions (f_at_r0.25, ..., f_at_r2), in radius order.
std::vector<std::string> normalised_radius_fields();

// Writes `analysis` into per_n [G, Kn] (NaN at grid N the row has no value for) and
// per_row [Kr].
void fill_row_fields(const RecordSchema& schema, const geometry::RowAnalysis& analysis, std::span<double> per_n,
                     std::span<double> per_row);

}  // namespace attngeom
