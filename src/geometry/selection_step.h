#pragma once
// Every docs/method.md section 2 metric at one N, from the row in selection order and its
// projections <v_p, s_N>: plain functions of pointers that the CPU's selection_metrics and the
// GPU's batch (ops/cuda_selection_kernels.cu) both run, so that both give the same bits.
// C++17, no library types (HUGE_VAL for infinity): nvcc compiles it for the device too.
//
// Position p holds key order[p], so I_N is positions [0, N) and J_N is [N, M), and every pass
// is a contiguous loop. O(M) per N plus the exact F_best, which sorts only the selected
// distances that can still win (see fill_best_f).
//
// Balls are compared through offsets e_p = D_p^2 - ||s_N||^2 = alpha_p (alpha_p ||v_p||^2 -
// 2 <v_p, s_N>), never through D_p itself: a key of tiny alpha has D_p^2 within an ulp of
// ||s_N||^2, so its rounded distance would equal ||s_N|| whatever the sign of e_p, and every
// such key would sit on the radius (inside every closed ball there). D_p^2 = ||s_N||^2 + e_p
// cancels instead when p_p sits near s_N (a dominant selected key, a duplicate): its absolute
// error is a few ulps of the largest term, so a distance near 0 would come out near
// sqrt(eps) * ||s_N||. Such points (result below kCancellationRatio of the terms) are
// recomputed directly as ||p_p - s_N|| in O(d), their offset as that square less ||s_N||^2;
// there are few per N, because points that nearly equal s_N must carry most of it.
#include <cmath>
#include <cstddef>

#include "geometry/bitonic_network.h"
#include "geometry/lane_sums.h"
#include "geometry/selection_point.h"
#include "util/host_device.h"

namespace attngeom::geometry {

// Below this share of ||s_N||^2 + alpha^2 ||v||^2 the expanded D^2 has lost more than about
// 4 of its 16 digits (relative error ~ eps / ratio), so it is recomputed from the vectors.
inline constexpr double kCancellationRatio = 1.0 / 16.0;

// One row in selection order. The values stay where they are, in key order; Index is the
// type of the key numbers (std::size_t on the CPU, int on the GPU).
template <class Index>
struct PositionedView {
  std::size_t keys = 0;                       // M
  std::size_t dim = 0;                        // d
  const double* alpha = nullptr;              // [M] alpha by position (descending)
  const double* sq_norms = nullptr;           // [M] ||v||^2 by position
  const double* weighted_norm_min = nullptr;  // [M] min_{q <= p} alpha_q ||v_q|| (weighted_norm_minima)
  const Index* order = nullptr;               // [M] key at each position
  const float* values = nullptr;              // [M, d] v by key
  std::size_t sink_position = 0;              // position of key 0
  std::size_t last_position = 0;              // position of key M-1

  ATTNGEOM_HD const float* value(std::size_t p) const { return values + static_cast<std::size_t>(order[p]) * dim; }
};

// Working memory of one evaluation; a row's evaluations at different N may share it only in turn.
struct SelectionScratch {
  double* offset = nullptr;           // [M] D^2 - ||s_N||^2 by position
  std::size_t* recomputed = nullptr;  // [M] positions whose D came from the vectors, ascending
  double* recomputed_d2 = nullptr;    // [M] their D^2
  std::size_t recomputed_count = 0;
  double* selected_sorted = nullptr;  // [N] the offsets of I_N, sorted for F_best
  std::size_t* tally = nullptr;       // [N] unselected points whose first candidate radius is i
};

// out[p] = min_{q <= p} alpha_q ||v_q||, by position.
ATTNGEOM_HD inline void weighted_norm_minima(const double* alpha, const double* sq_norms, std::size_t keys,
                                             double* out) {
  double running = HUGE_VAL;
  for (std::size_t p = 0; p < keys; ++p) {
    const double x = alpha[p] * sqrt(sq_norms[p]);
    running = x < running ? x : running;
    out[p] = running;
  }
}

// s_N[t] for each N = n_values[g] < keys (n_values ascending), into sums[g * dim + t]: grown key
// by key in selection order, a product then a sum, as selection_metrics's direct method does.
template <class Index>
ATTNGEOM_HD void grow_sums_at(const double* alpha, const Index* order, const float* values, std::size_t dim,
                              std::size_t t, const int* n_values, std::size_t grid, std::size_t keys, double* sums) {
  double s = 0.0;
  std::size_t p = 0;
  for (std::size_t g = 0; g < grid && static_cast<std::size_t>(n_values[g]) < keys; ++g) {
    for (; p < static_cast<std::size_t>(n_values[g]); ++p) {
      const double term = alpha[p] * static_cast<double>(values[static_cast<std::size_t>(order[p]) * dim + t]);
      s += term;
    }
    sums[g * dim + t] = s;
  }
}

// <v, s> as one fused multiply-add per t, in order: the bits of project_rows_in_order's sums.
ATTNGEOM_HD inline double projection_of(const float* v, const double* s, std::size_t dim) {
  double acc = 0.0;
  for (std::size_t t = 0; t < dim; ++t) acc = fma(static_cast<double>(v[t]), s[t], acc);
  return acc;
}

namespace selection_step {

// cos(v, s) from <v, s>, ||v||^2 and ||s||^2; 0 when either vector is zero.
ATTNGEOM_HD inline double cosine(double dot, double v_norm2, double s_norm2) {
  if (v_norm2 <= 0.0 || s_norm2 <= 0.0) return 0.0;
  const double c = dot / (sqrt(v_norm2) * sqrt(s_norm2));
  return c < -1.0 ? -1.0 : (1.0 < c ? 1.0 : c);
}

ATTNGEOM_HD inline std::size_t count_at_most(const double* x, std::size_t n, double r) {
  std::size_t c = 0;
  ATTNGEOM_SIMD(reduction(+ : c))
  for (std::size_t i = 0; i < n; ++i) c += x[i] <= r;
  return c;
}

// Plain loops marked as reductions (std::max_element does not vectorise); exact in any order. n >= 1.
ATTNGEOM_HD inline double max_of(const double* x, std::size_t n) {
  double m = x[0];
  ATTNGEOM_SIMD(reduction(max : m))
  for (std::size_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}
ATTNGEOM_HD inline double min_of(const double* x, std::size_t n) {
  double m = x[0];
  ATTNGEOM_SIMD(reduction(min : m))
  for (std::size_t i = 0; i < n; ++i) m = x[i] < m ? x[i] : m;
  return m;
}

// std::lower_bound without branches on the data: the offsets of unselected keys land at
// random among the candidates, so a branching search mispredicts about half its steps.
// The answer stays within [0, n]: one comparison per halving.
ATTNGEOM_HD inline std::size_t lower_bound_index(const double* sorted, std::size_t n, double x) {
  std::size_t first = 0;
  while (n > 1) {
    const std::size_t half = n / 2;
    first += sorted[first + half] < x ? half : 0;
    n -= half;
  }
  return first + (n == 1 && sorted[first] < x);
}

// ||s||^2 in the order of the coordinates.
ATTNGEOM_HD inline double squared_norm_of(const double* s, std::size_t dim) {
  double sum = 0.0;
  for (std::size_t t = 0; t < dim; ++t) sum += s[t] * s[t];
  return sum;
}

// e_p expanded from the weight a, ||v_p||^2 and <v_p, s_N>.
ATTNGEOM_HD inline double expanded_offset(double a, double sq_norm, double dot) {
  return a * (a * sq_norm - 2.0 * dot);
}

// Whether the expanded e_p has cancelled so far that it is recomputed from the vectors.
ATTNGEOM_HD inline bool cancels(double s_norm2, double offset, double a, double sq_norm) {
  return s_norm2 + offset < kCancellationRatio * (s_norm2 + a * a * sq_norm);
}

// ||a v - s||^2 from the vectors, in the order of the coordinates.
ATTNGEOM_HD inline double direct_squared_distance(const float* v, double a, const double* s, std::size_t dim) {
  double sum = 0.0;
  for (std::size_t t = 0; t < dim; ++t) {
    const double diff = a * v[t] - s[t];
    sum += diff * diff;
  }
  return sum;
}

// <p_i, s_N - p_i> of a selected key with weight a: from the vectors where its D was recomputed
// (`exact`), expanded otherwise.
ATTNGEOM_HD inline double cross_projection(const float* v, double a, const double* s, std::size_t dim, double dot,
                                           double sq_norm, bool exact) {
  if (!exact) return a * (dot - a * sq_norm);
  double cross = 0.0;
  for (std::size_t t = 0; t < dim; ++t) cross += a * v[t] * (s[t] - a * v[t]);
  return cross;
}

template <class Index>
ATTNGEOM_HD void compute_offsets(const PositionedView<Index>& row, double s_norm2, const double* dots, const double* s,
                                 SelectionScratch& scratch) {
  std::size_t cancelling = 0;
  for (std::size_t p = 0; p < row.keys; ++p) {
    const double e = expanded_offset(row.alpha[p], row.sq_norms[p], dots[p]);
    scratch.offset[p] = e;
    cancelling += cancels(s_norm2, e, row.alpha[p], row.sq_norms[p]);
  }
  scratch.recomputed_count = 0;
  for (std::size_t p = 0; cancelling > 0 && p < row.keys; ++p) {
    const double a = row.alpha[p];
    if (!cancels(s_norm2, scratch.offset[p], a, row.sq_norms[p])) continue;
    const double sum = direct_squared_distance(row.value(p), a, s, row.dim);
    scratch.offset[p] = sum - s_norm2;  // rounding is monotone: the order of the D^2 is kept
    scratch.recomputed[scratch.recomputed_count] = p;
    scratch.recomputed_d2[scratch.recomputed_count] = sum;
    ++scratch.recomputed_count;
    --cancelling;
  }
}

// The radius whose offset is `offset`: from the vectors where that key was recomputed.
ATTNGEOM_HD inline double radius_of(const SelectionScratch& scratch, double offset, double s_norm2) {
  for (std::size_t i = 0; i < scratch.recomputed_count; ++i) {
    if (scratch.offset[scratch.recomputed[i]] == offset) return sqrt(scratch.recomputed_d2[i]);
  }
  const double d2 = s_norm2 + offset;
  return sqrt(0.0 < d2 ? d2 : 0.0);  // std::max(0.0, d2): -0 and NaN give 0
}

// F(r) = 2 TP / (N + TP + FP) rises only at a selected distance and falls in between, so its
// maximum sits at some D_i, i in I_N, no further out than r_max, where F = 2N / (2N + c) with
// c unselected points inside. A radius holding t selected points and at least f unselected
// ones scores at most 2t / (N + t + f), which reaches 2N / (2N + c) only when
// t >= N (N + f) / (N + c). That bound (first with f = 0, then with f = the unselected points
// below the smallest remaining candidate) leaves few candidates, and only they are sorted. An
// unselected point at or below r_max counts against every candidate radius at or above it, so
// it is tallied at the first such candidate (a binary search) rather than sorted.
// sort_from(values, count, first): afterwards values[first..count) hold the largest values
// ascending, and those before are no larger.
// The fewest selected points a radius with at least fp unselected ones inside needs to reach
// the F at r_max, where c unselected points are inside.
ATTNGEOM_HD inline std::size_t min_candidate_tp(std::size_t n, std::size_t c, std::size_t fp) {
  return (n * (n + fp) + (n + c) - 1) / (n + c);
}

// The best F over the candidate radii (count of them, ascending, from sorted index `first` of
// the selected offsets), tally[i] the unselected points whose first candidate at or above
// them is i, fp_below those below them all: m.f_best, and the offset of its smallest radius
// into best_offset (left as it is unless some radius beats m.f_best).
template <class Tally>
ATTNGEOM_HD void scan_candidates(const double* candidates, std::size_t count, const Tally* tally, std::size_t first,
                                 std::size_t fp_below, std::size_t n, SelectionPoint& m, double& best_offset) {
  // Candidates before this one cannot reach the maximum; their tallies still count further out.
  const std::size_t tp_bound = min_candidate_tp(n, m.unselected_inside_r_max, fp_below);
  const std::size_t scored_from = (tp_bound < n ? tp_bound : n) - 1;
  const std::size_t first_scored = (first < scored_from ? scored_from : first) - first;

  std::size_t fp = fp_below;
  for (std::size_t i = 0; i < count;) {
    const double r = candidates[i];
    do {  // ties: all of them are inside (and each step moves on, a NaN too)
      fp += static_cast<std::size_t>(tally[i]);
      ++i;
    } while (i < count && candidates[i] == r);
    if (i <= first_scored) continue;
    const std::size_t tp = first + i;
    const double f = 2.0 * static_cast<double>(tp) / static_cast<double>(n + tp + fp);
    if (f > m.f_best) {
      m.f_best = f;
      best_offset = r;
    }
  }
}

template <class Index, class SortFrom>
ATTNGEOM_HD void fill_best_f(const PositionedView<Index>& row, std::size_t n, double s_norm2, SelectionScratch& scratch,
                             SortFrom& sort_from, SelectionPoint& m) {
  double* selected = scratch.selected_sorted;
  for (std::size_t p = 0; p < n; ++p) selected[p] = scratch.offset[p];
  const std::size_t first = min_candidate_tp(n, m.unselected_inside_r_max, 0) - 1;  // the smallest candidate, >= 0
  sort_from(selected, n, first);
  const double* candidates = selected + first;  // ascending, the last is r_max
  const std::size_t count = n - first;

  for (std::size_t i = 0; i < count; ++i) scratch.tally[i] = 0;
  std::size_t fp_below = 0;  // unselected points strictly below the smallest candidate
  for (std::size_t p = n; p < row.keys; ++p) {
    const double d = scratch.offset[p];
    if (d < candidates[0]) {
      ++fp_below;
    } else if (d <= candidates[count - 1]) {
      ++scratch.tally[lower_bound_index(candidates, count, d)];
    }
  }
  const double f_before = m.f_best;
  double best_offset = 0.0;
  scan_candidates(candidates, count, scratch.tally, first, fp_below, n, m, best_offset);
  if (m.f_best > f_before) m.f_best_radius = radius_of(scratch, best_offset, s_norm2);
}

}  // namespace selection_step

// What the passes over a row's offsets at one N find, from which fill_point sets the rest.
struct SelectionPasses {
  double e_max = 0.0;                          // max over I_N of e_p: r_max^2 - ||s_N||^2
  double e_min = 0.0;                          // min over J_N of e_p: r_min^2 - ||s_N||^2
  std::size_t unselected_inside_r_max = 0;     // J_N with e_p <= e_max
  std::size_t selected_inside_r_min = 0;       // I_N with e_p <= e_min
  double min_selected_cross_projection = 0.0;  // the first minimum in position order
  double max_unselected_projection = 0.0;
};

// The offset of a normalised radius: D <= rho ||s_N||  <=>  D^2 - ||s_N||^2 <= (rho^2 - 1)
// ||s_N||^2, exactly 0 at rho = 1; ascending in rho.
ATTNGEOM_HD inline double radius_offset(double rho, double s_norm2) { return (rho * rho - 1.0) * s_norm2; }

// Every field of m but F_best from the passes (f_best and its radius start at 0).
template <class Index>
ATTNGEOM_HD void fill_point(const PositionedView<Index>& row, std::size_t n, double s_norm2, const double* dots,
                            const SelectionScratch& scratch, const SelectionPasses& passes, SelectionPoint& m) {
  using namespace selection_step;
  m = SelectionPoint{};
  m.n = n;
  m.s_norm = sqrt(s_norm2);
  m.r_max = radius_of(scratch, passes.e_max, s_norm2);
  m.r_min = radius_of(scratch, passes.e_min, s_norm2);
  m.margin = m.r_min - m.r_max;
  m.a_in_min = row.alpha[n - 1];
  m.a_out_max = row.alpha[n];
  m.unselected_inside_r_max = passes.unselected_inside_r_max;
  m.selected_inside_r_min = passes.selected_inside_r_min;
  m.precision = static_cast<double>(n) / static_cast<double>(n + m.unselected_inside_r_max);
  m.recall = static_cast<double>(m.selected_inside_r_min) / static_cast<double>(n);
  m.f_score = f_score(m.precision, m.recall);
  m.witness.min_selected_weighted_norm = row.weighted_norm_min[n - 1];
  m.witness.min_selected_cross_projection = passes.min_selected_cross_projection;
  m.witness.max_unselected_projection = passes.max_unselected_projection;
  m.cos_sink = cosine(dots[row.sink_position], row.sq_norms[row.sink_position], s_norm2);
  m.cos_last = cosine(dots[row.last_position], row.sq_norms[row.last_position], s_norm2);
}

// The metrics at n (1 <= n < M) from dots [M] <v_p, s_N> by position and s [d] = s_N, with the
// curve [radius_count] at the normalised radii (ascending, >= 0). sort_from as fill_best_f's.
template <class Index, class SortFrom>
ATTNGEOM_HD void evaluate_selection(const PositionedView<Index>& row, std::size_t n, const double* dots,
                                    const double* s, const double* normalised_radii, std::size_t radius_count,
                                    SelectionScratch& scratch, SortFrom& sort_from, SelectionPoint& m,
                                    BallScores* curve) {
  using namespace selection_step;
  const std::size_t keys = row.keys;
  // ||s_N||^2 straight from s (O(d)): it keeps the relative accuracy that an incrementally
  // grown norm loses when the terms of s_N cancel.
  const double s_norm2 = squared_norm_of(s, row.dim);
  compute_offsets(row, s_norm2, dots, s, scratch);
  const double* selected = scratch.offset;
  const double* unselected = scratch.offset + n;

  SelectionPasses passes;
  passes.e_max = max_of(selected, n);
  passes.e_min = min_of(unselected, keys - n);
  passes.unselected_inside_r_max = count_at_most(unselected, keys - n, passes.e_max);
  passes.selected_inside_r_min = count_at_most(selected, n, passes.e_min);
  // <p_i, s_N - p_i> cancels exactly where D_i does: there it comes from the vectors, in
  // place of the expanded value (whose rounding can flip its sign, e.g. at N = 1 where it is 0).
  passes.min_selected_cross_projection = HUGE_VAL;
  std::size_t exact = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const bool recomputed = exact < scratch.recomputed_count && scratch.recomputed[exact] == p;
    exact += recomputed;
    const double cross = cross_projection(row.value(p), row.alpha[p], s, row.dim, dots[p], row.sq_norms[p], recomputed);
    passes.min_selected_cross_projection =
        cross < passes.min_selected_cross_projection ? cross : passes.min_selected_cross_projection;
  }
  passes.max_unselected_projection = max_of(dots + n, keys - n);
  fill_point(row, n, s_norm2, dots, scratch, passes, m);
  fill_best_f(row, n, s_norm2, scratch, sort_from, m);
  for (std::size_t g = 0; g < radius_count; ++g) {
    const double e = radius_offset(normalised_radii[g], s_norm2);
    curve[g] = ball_scores(count_at_most(selected, n, e), count_at_most(unselected, keys - n, e), n);
  }
}

}  // namespace attngeom::geometry
