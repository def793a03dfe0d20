#pragma once
// Top-N selection metrics of one (head, query row), docs/method.md section 2.
//
// For N in 1..M-1: I_N = the N largest alpha (ties: lower index first), J_N = the rest,
// s_N = sum_{I_N} alpha_i v_i, D_k = ||alpha_k v_k - s_N||, r_max = max_{I_N} D,
// r_min = min_{J_N} D, margin = r_min - r_max, closed balls (D_k <= r is inside),
// P = N / (N + #{j in J_N : D_j <= r_max}), R = #{i in I_N : D_i <= r_min} / N, F = 2PR/(P+R).
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/head_row.h"
#include "geometry/selection_point.h"

namespace attngeom::geometry {

// the default N grid (docs/method.md section 2) 1,2,3,4,5,6,8,10,12,16,24,32,64,128,256,512, clipped to M-1.
std::vector<std::size_t> default_n_grid(std::size_t keys);
// Every N in 1..M-1 (empty when M = 1).
std::vector<std::size_t> every_n(std::size_t keys);
// InputError unless n_values is strictly ascending with each N in 1..M-1.
void check_n_values(std::span<const std::size_t> n_values, std::size_t keys);

// How <v_k, s_N> is obtained; both give the same numbers up to rounding.
enum class ProjectionMethod {
  kAutomatic,  // kGram when the N list is dense (more than M/8 values), else kDirect
  kGram,       // one Gram GEMM V V^T, then s_N grows key by key: O(M^2 d) at GEMM speed + O(M^2)
  kDirect,     // s_N rebuilt at each requested N, one GEMV each: O(G M d) for G values of N
};

struct SelectionOptions {
  // Radii r = rho * ||s_N|| at which P, R, F are also reported ("normalised radius" curves).
  // Must be ascending and >= 0. Default: a spread around 1, where the unselected points sit
  // (an unselected p_j with small alpha_j lies at distance about ||s_N||).
  std::vector<double> normalised_radii = {0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0};
  ProjectionMethod method = ProjectionMethod::kAutomatic;
};

// The method selection_metrics takes for `grid` values of N over M = keys (kAutomatic resolved).
ProjectionMethod resolved_method(ProjectionMethod method, std::size_t grid, std::size_t keys);

// The metrics at one N: the scalars (selection_point.h) and the normalised-radius curve.
struct SelectionMetrics : SelectionPoint {
  std::vector<BallScores> at_normalised_radius;  // [options.normalised_radii.size()]
};

// The full Gram matrix of one row's value vectors, in double. Compute it once when several
// analyses of the same row need it (selection, cosine deviations).
struct RowGram {
  std::size_t keys = 0;
  std::vector<double> entries;  // [M, M] <v_i, v_l>
};
RowGram row_gram(const HeadRowView& row);

// Metrics at each N of n_values (strictly ascending, each in 1..M-1; otherwise InputError).
std::vector<SelectionMetrics> selection_metrics(const HeadRowView& row, std::span<const std::size_t> n_values,
                                                const SelectionOptions& options = {});
std::vector<SelectionMetrics> selection_metrics(const ValidatedRow& checked, std::span<const std::size_t> n_values,
                                                const SelectionOptions& options = {});
// Same, reusing a Gram matrix already computed for this row (always the kGram method).
std::vector<SelectionMetrics> selection_metrics(const HeadRowView& row, const RowGram& gram,
                                                std::span<const std::size_t> n_values,
                                                const SelectionOptions& options = {});

}  // namespace attngeom::geometry
