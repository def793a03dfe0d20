#pragma once
// The scalar results of docs/method.md section 2 at one N, as plain structs that a GPU kernel
// writes too (C++17, no library types). selection_metrics.h adds the radius curve.
#include <cstddef>

#include "util/host_device.h"

namespace attngeom::geometry {

// F = 2PR/(P+R), 0 when both are 0.
ATTNGEOM_HD inline double f_score(double precision, double recall) {
  return precision + recall > 0.0 ? 2.0 * precision * recall / (precision + recall) : 0.0;
}

// Ball B_r(s_N) at one radius: its counts and scores.
struct BallScores {
  std::size_t selected_inside = 0;    // TP(r) = #{i in I_N : D_i <= r}
  std::size_t unselected_inside = 0;  // FP(r) = #{j in J_N : D_j <= r}
  double precision = 0.0;             // TP / (TP + FP); 0 when the ball is empty
  double recall = 0.0;                // TP / N
  double f_score = 0.0;               // 2PR / (P + R); 0 when P = R = 0
};

// Scores of a ball holding tp selected and fp unselected points, for N selected in all.
ATTNGEOM_HD inline BallScores ball_scores(std::size_t tp, std::size_t fp, std::size_t n) {
  BallScores b;
  b.selected_inside = tp;
  b.unselected_inside = fp;
  b.precision = tp + fp > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 0.0;
  b.recall = static_cast<double>(tp) / static_cast<double>(n);
  b.f_score = f_score(b.precision, b.recall);
  return b;
}

// What the reconstructed sufficient condition R3 needs from the measured row at this N.
struct SeparationWitness {
  double min_selected_weighted_norm = 0.0;     // min_{I_N} alpha_i ||v_i||
  double max_unselected_projection = 0.0;      // max_{J_N} <v_j, s_N>
  double min_selected_cross_projection = 0.0;  // min_{I_N} <p_i, s_N - p_i>
};

struct SelectionPoint {
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
};

}  // namespace attngeom::geometry
