#pragma once
// <s_g, v_k> for a few double vectors s_g against every value vector v_k, read in place from
// the float values and in a given order. Internal to selection_metrics.cc.
#include <cstddef>
#include <span>

namespace attngeom::geometry {

// out[g * order.size() + p] = <vectors_g, rows_{order[p]}>, each a double sum over t in order
// (one fused multiply-add per term) of the float row widened exactly to double.
void project_rows_in_order(const float* rows,                   // [*, dim], indexed by order
                           std::span<const std::size_t> order,  // [count] row of each position
                           std::size_t dim,
                           std::span<const double> vectors,  // [n_vectors, dim]
                           std::span<double> out);           // [n_vectors, count]

}  // namespace attngeom::geometry
