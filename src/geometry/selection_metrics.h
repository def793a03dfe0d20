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

// Ball B_r(s_N) at one radius: its counts and scores.
struct BallScores {
  std::size_t selected_inside = 0;    // TP(r) = #{i in I_N : D_i <= r}
  std::size_t unselected_inside = 0;  // FP(r) = #{j in J_N : D_j <= r}
  double precision = 0.0;             // TP / (TP + FP); 0 when the ball is empty
  double recall = 0.0;                // TP / N
  double f_score = 0.0;               // 2PR / (P + R); 0 when P = R = 0
};

// What the reconstructed sufficient condition R3 needs from the measured row at this N.
struct SeparationWitness {
  double min_selected_weighted_norm = 0.0;     // min_{I_N} alpha_i ||v_i||
  double max_unselected_projection = 0.0;      // max_{J_N} <v_j, s_N>
  double min_selected_cross_projection = 0.0;  // min_{I_N} <p_i, s_N - p_i>
};

struct SelectionMetrics {
  std::size_t n = 0;
  double precision = 0.0;  // P(r_max, N)
  double recall = 0.0;     // R(r_min, N)
  double f_score = 0.0;    // F(N)
  double r_min = 0.0;
  double r_max = 0.0;                       // exactly 0 at N = 1 (s_1 = p_{i_1})
  double margin = 0.0;                      // r_min - r_max; separation is perfect iff > 0
  std::size_t unselected_inside_r_max = 0;  // FP at r_max
  std::size_t selected_inside_r_min = 0;    // TP at r_min
  double a_in_min = 0.0;                    // min_{I_N} alpha
  double a_out_max = 0.0;                   // max_{J_N} alpha
  double f_best = 0.0;                      // max_r F(r, N), exact over every radius
  double f_best_radius = 0.0;               // the smallest radius reaching f_best
  double s_norm = 0.0;                      // ||s_N||
  double cos_sink = 0.0;                    // cos(s_N, v_0); 0 when either vector is zero
  double cos_last = 0.0;                    // cos(s_N, v_{M-1}); 0 when either vector is zero
  SeparationWitness witness;
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

// F = 2PR/(P+R), 0 when both are 0.
double f_score(double precision, double recall);

}  // namespace attngeom::geometry
