#pragma once
// Test oracle: docs/method.md section 2 computed literally, from scratch for every N. Re-sorts alpha,
// rebuilds s_N, takes every distance as ||alpha_k v_k - s_N|| and counts balls by their
// definitions. O(M d + M log M) per N; shares no code with the fast sweep. Only the widening
// of the row to double is done once for all N.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/head_row.h"
#include "geometry/selection_metrics.h"

namespace attngeom::geometry::oracle {

std::vector<SelectionMetrics> naive_selection_metrics(const HeadRowView& row, std::span<const std::size_t> n_values,
                                                      std::span<const double> normalised_radii);

}  // namespace attngeom::geometry::oracle
