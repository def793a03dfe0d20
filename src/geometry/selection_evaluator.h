#pragma once
// Turns <v, s_N> into every docs/method.md section 2 metric at one N. Internal to selection_metrics.cc.
//
// Everything is in selection order: position p holds key order[p], so I_N is positions [0, N)
// and J_N is [N, M), and every pass is a contiguous loop. O(M) per N plus the exact F_best,
// which sorts only the selected distances that can still win (see fill_best_f).
//
// Balls are compared through offsets e_p = D_p^2 - ||s_N||^2 = alpha_p (alpha_p ||v_p||^2 -
// 2 <v_p, s_N>), never through D_p itself: a key of tiny alpha has D_p^2 within an ulp of
// ||s_N||^2, so its rounded distance would equal ||s_N|| whatever the sign of e_p, and every
// such key would sit on the radius (inside every closed ball there). D_p^2 = ||s_N||^2 + e_p
// cancels instead when p_p sits near s_N (a dominant selected key, a duplicate): its absolute
// error is a few ulps of the largest term, so a distance near 0 would come out near
// sqrt(eps) * ||s_N||. Such points (result below kCancellationRatio of the terms) are
// recomputed directly as ||p_p - s_N|| in O(d), their offset as that square less ||s_N||^2;
// there are at most a handful per N, because points that nearly equal s_N must carry most of it.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/radix_sort.h"
#include "geometry/selection_metrics.h"

namespace attngeom::geometry {

// Below this share of ||s_N||^2 + alpha^2 ||v||^2 the expanded D^2 has lost more than about
// 4 of its 16 digits (relative error ~ eps / ratio), so it is recomputed from the vectors.
inline constexpr double kCancellationRatio = 1.0 / 16.0;

// One row in selection order. The values stay where they are, in key order.
struct PositionedRow {
  std::size_t keys = 0;
  std::size_t dim = 0;
  std::vector<double> alpha;       // [M] alpha by position (descending)
  std::vector<std::size_t> order;  // [M] key at each position
  const float* values = nullptr;   // [M, d] v by key
  std::vector<double> sq_norms;    // [M] ||v||^2 by position
  std::size_t sink_position = 0;   // position of key 0
  std::size_t last_position = 0;   // position of key M-1

  const float* value(std::size_t p) const { return values + order[p] * dim; }  // [d] v at position p
};

class SelectionEvaluator {
 public:
  SelectionEvaluator(const PositionedRow& row, std::span<const double> normalised_radii);

  SelectionMetrics evaluate(std::size_t n,
                            std::span<const double> dots,  // [M] <v_p, s_N> by position
                            std::span<const double> s);    // [d] s_N

 private:
  void compute_offsets(double s_norm2, std::span<const double> dots, std::span<const double> s);
  // The radius whose offset is `offset`: from the vectors where that key was recomputed.
  double radius_of(double offset, double s_norm2) const;
  void fill_best_f(std::size_t n, double s_norm2, SelectionMetrics& m);
  void fill_radius_curve(std::size_t n, double s_norm2, SelectionMetrics& m) const;

  const PositionedRow& row_;
  std::span<const double> normalised_radii_;
  std::vector<double> weighted_norm_min_;  // [M] min_{q <= p} alpha_q ||v_q||, fixed for the row
  std::vector<double> offset_;             // [M] D^2 - ||s_N||^2 by position
  std::vector<std::size_t> recomputed_;    // positions whose D came from the vectors, ascending
  std::vector<double> recomputed_d2_;      // their D^2
  std::vector<double> selected_sorted_;    // [M] scratch: offsets of I_N, ascending
  std::vector<std::size_t> tally_;         // [M] scratch: unselected points whose first candidate radius is i
  RadixSorter sorter_;
};

// Scores of a ball holding tp selected and fp unselected points, for N selected in all.
BallScores ball_scores(std::size_t tp, std::size_t fp, std::size_t n);

}  // namespace attngeom::geometry
