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

// sort_from for fill_best_f without memory of its own (a GPU thread's): a heap sort that stops
// once positions [first, count) hold the largest values ascending, as RadixSorter::sort_from.
struct HeapSortFrom {
  ATTNGEOM_HD static void sift_down(double* v, std::size_t root, std::size_t end) {
    for (;;) {
      std::size_t child = 2 * root + 1;
      if (child >= end) return;
      if (child + 1 < end && v[child] < v[child + 1]) ++child;
      if (!(v[root] < v[child])) return;
      const double t = v[root];
      v[root] = v[child];
      v[child] = t;
      root = child;
    }
  }
  ATTNGEOM_HD void operator()(double* v, std::size_t count, std::size_t first) const {
    for (std::size_t i = count / 2; i-- > 0;) sift_down(v, i, count);
    for (std::size_t end = count; end > first; --end) {
      const double t = v[0];
      v[0] = v[end - 1];
      v[end - 1] = t;
      sift_down(v, 0, end - 1);
    }
  }
};

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

template <class Index>
ATTNGEOM_HD void compute_offsets(const PositionedView<Index>& row, double s_norm2, const double* dots, const double* s,
                                 SelectionScratch& scratch) {
  std::size_t cancelling = 0;
  for (std::size_t p = 0; p < row.keys; ++p) {
    const double a = row.alpha[p];
    const double e = a * (a * row.sq_norms[p] - 2.0 * dots[p]);
    scratch.offset[p] = e;
    cancelling += s_norm2 + e < kCancellationRatio * (s_norm2 + a * a * row.sq_norms[p]);
  }
  scratch.recomputed_count = 0;
  for (std::size_t p = 0; cancelling > 0 && p < row.keys; ++p) {
    const double a = row.alpha[p];
    if (s_norm2 + scratch.offset[p] >= kCancellationRatio * (s_norm2 + a * a * row.sq_norms[p])) continue;
    const float* v = row.value(p);
    double sum = 0.0;
    for (std::size_t t = 0; t < row.dim; ++t) {
      const double diff = a * v[t] - s[t];
      sum += diff * diff;
    }
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
template <class Index, class SortFrom>
ATTNGEOM_HD void fill_best_f(const PositionedView<Index>& row, std::size_t n, double s_norm2, SelectionScratch& scratch,
                             SortFrom& sort_from, SelectionPoint& m) {
  const std::size_t c = m.unselected_inside_r_max;
  const auto min_candidate_tp = [n, c](std::size_t fp) { return (n * (n + fp) + (n + c) - 1) / (n + c); };
  double* selected = scratch.selected_sorted;
  for (std::size_t p = 0; p < n; ++p) selected[p] = scratch.offset[p];
  const std::size_t first = min_candidate_tp(0) - 1;  // index of the smallest candidate, >= 0
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
  // Candidates before this one cannot reach the maximum; their tallies still count further out.
  const std::size_t tp_bound = min_candidate_tp(fp_below);
  const std::size_t scored_from = (tp_bound < n ? tp_bound : n) - 1;
  const std::size_t first_scored = (first < scored_from ? scored_from : first) - first;

  std::size_t fp = fp_below;
  for (std::size_t i = 0; i < count;) {
    const double r = candidates[i];
    do {  // ties: all of them are inside (and each step moves on, a NaN too)
      fp += scratch.tally[i];
      ++i;
    } while (i < count && candidates[i] == r);
    if (i <= first_scored) continue;
    const std::size_t tp = first + i;
    const double f = 2.0 * static_cast<double>(tp) / static_cast<double>(n + tp + fp);
    if (f > m.f_best) {
      m.f_best = f;
      m.f_best_radius = radius_of(scratch, r, s_norm2);
    }
  }
}

}  // namespace selection_step

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
  double s_norm2 = 0.0;
  for (std::size_t t = 0; t < row.dim; ++t) s_norm2 += s[t] * s[t];
  compute_offsets(row, s_norm2, dots, s, scratch);
  const double* selected = scratch.offset;
  const double* unselected = scratch.offset + n;

  m = SelectionPoint{};
  m.n = n;
  m.s_norm = sqrt(s_norm2);
  const double e_max = max_of(selected, n);           // r_max^2 - ||s_N||^2
  const double e_min = min_of(unselected, keys - n);  // r_min^2 - ||s_N||^2
  m.r_max = radius_of(scratch, e_max, s_norm2);
  m.r_min = radius_of(scratch, e_min, s_norm2);
  m.margin = m.r_min - m.r_max;
  m.a_in_min = row.alpha[n - 1];
  m.a_out_max = row.alpha[n];
  m.unselected_inside_r_max = count_at_most(unselected, keys - n, e_max);
  m.selected_inside_r_min = count_at_most(selected, n, e_min);
  m.precision = static_cast<double>(n) / static_cast<double>(n + m.unselected_inside_r_max);
  m.recall = static_cast<double>(m.selected_inside_r_min) / static_cast<double>(n);
  m.f_score = f_score(m.precision, m.recall);

  SeparationWitness& w = m.witness;
  w.min_selected_weighted_norm = row.weighted_norm_min[n - 1];
  w.min_selected_cross_projection = HUGE_VAL;
  // <p_i, s_N - p_i> cancels exactly where D_i does: there it comes from the vectors, in
  // place of the expanded value (whose rounding can flip its sign, e.g. at N = 1 where it is 0).
  std::size_t exact = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const double a = row.alpha[p];
    double cross = 0.0;
    if (exact < scratch.recomputed_count && scratch.recomputed[exact] == p) {
      const float* v = row.value(p);
      for (std::size_t t = 0; t < row.dim; ++t) cross += a * v[t] * (s[t] - a * v[t]);
      ++exact;
    } else {
      cross = a * (dots[p] - a * row.sq_norms[p]);
    }
    w.min_selected_cross_projection = cross < w.min_selected_cross_projection ? cross : w.min_selected_cross_projection;
  }
  w.max_unselected_projection = max_of(dots + n, keys - n);

  m.cos_sink = cosine(dots[row.sink_position], row.sq_norms[row.sink_position], s_norm2);
  m.cos_last = cosine(dots[row.last_position], row.sq_norms[row.last_position], s_norm2);
  fill_best_f(row, n, s_norm2, scratch, sort_from, m);
  for (std::size_t g = 0; g < radius_count; ++g) {
    // D <= rho ||s_N||  <=>  D^2 - ||s_N||^2 <= (rho^2 - 1) ||s_N||^2, exactly 0 at rho = 1.
    const double rho = normalised_radii[g];
    const double e = (rho * rho - 1.0) * s_norm2;
    curve[g] = ball_scores(count_at_most(selected, n, e), count_at_most(unselected, keys - n, e), n);
  }
}

}  // namespace attngeom::geometry
