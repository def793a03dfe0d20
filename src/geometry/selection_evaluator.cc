#include "geometry/selection_evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/error.h"

namespace attngeom::geometry {
namespace {

// cos(v, s) from <v, s>, ||v||^2 and ||s||^2; 0 when either vector is zero.
double cosine(double dot, double v_norm2, double s_norm2) {
  if (v_norm2 <= 0.0 || s_norm2 <= 0.0) return 0.0;
  return std::clamp(dot / (std::sqrt(v_norm2) * std::sqrt(s_norm2)), -1.0, 1.0);
}

std::size_t count_at_most(std::span<const double> x, double r) {
  const double* p = x.data();
  const std::size_t n = x.size();
  std::size_t c = 0;
#pragma omp simd reduction(+ : c)
  for (std::size_t i = 0; i < n; ++i) c += p[i] <= r;
  return c;
}

// Plain loops marked as reductions: std::max_element / std::min_element do not vectorise.
double max_of(std::span<const double> x) {
  const double* p = x.data();
  const std::size_t n = x.size();
  double m = p[0];
#pragma omp simd reduction(max : m)
  for (std::size_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;
  return m;
}

// std::lower_bound without branches on the data: the offsets of unselected keys land at
// random among the candidates, so a branching search mispredicts about half its steps.
// The answer stays within [first, first + n] (first an index): one comparison per halving.
std::size_t lower_bound_index(std::span<const double> sorted, double x) {
  const double* data = sorted.data();
  std::size_t first = 0;
  std::size_t n = sorted.size();
  while (n > 1) {
    const std::size_t half = n / 2;
    first += data[first + half] < x ? half : 0;
    n -= half;
  }
  return first + (n == 1 && data[first] < x);
}

double min_of(std::span<const double> x) {
  const double* p = x.data();
  const std::size_t n = x.size();
  double m = p[0];
#pragma omp simd reduction(min : m)
  for (std::size_t i = 0; i < n; ++i) m = p[i] < m ? p[i] : m;
  return m;
}

}  // namespace

BallScores ball_scores(std::size_t tp, std::size_t fp, std::size_t n) {
  BallScores b;
  b.selected_inside = tp;
  b.unselected_inside = fp;
  b.precision = tp + fp > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 0.0;
  b.recall = static_cast<double>(tp) / static_cast<double>(n);
  b.f_score = f_score(b.precision, b.recall);
  return b;
}

SelectionEvaluator::SelectionEvaluator(const PositionedRow& row, std::span<const double> normalised_radii)
    : row_(row),
      normalised_radii_(normalised_radii),
      weighted_norm_min_(row.keys),
      offset_(row.keys),
      selected_sorted_(row.keys),
      tally_(row.keys) {
  double running = std::numeric_limits<double>::infinity();
  for (std::size_t p = 0; p < row.keys; ++p) {
    running = std::min(running, row.alpha[p] * std::sqrt(row.sq_norms[p]));
    weighted_norm_min_[p] = running;
  }
}

void SelectionEvaluator::compute_offsets(double s_norm2, std::span<const double> dots, std::span<const double> s) {
  const std::size_t keys = row_.keys;
  const std::size_t dim = row_.dim;
  std::size_t cancelling = 0;
  for (std::size_t p = 0; p < keys; ++p) {
    const double a = row_.alpha[p];
    const double e = a * (a * row_.sq_norms[p] - 2.0 * dots[p]);
    offset_[p] = e;
    cancelling += s_norm2 + e < kCancellationRatio * (s_norm2 + a * a * row_.sq_norms[p]);
  }
  recomputed_.clear();
  recomputed_d2_.clear();
  for (std::size_t p = 0; cancelling > 0 && p < keys; ++p) {
    const double a = row_.alpha[p];
    if (s_norm2 + offset_[p] >= kCancellationRatio * (s_norm2 + a * a * row_.sq_norms[p])) continue;
    const float* v = row_.value(p);
    double sum = 0.0;
    for (std::size_t t = 0; t < dim; ++t) {
      const double diff = a * v[t] - s[t];
      sum += diff * diff;
    }
    offset_[p] = sum - s_norm2;  // rounding is monotone: the order of the D^2 is kept
    recomputed_.push_back(p);
    recomputed_d2_.push_back(sum);
    --cancelling;
  }
}

double SelectionEvaluator::radius_of(double offset, double s_norm2) const {
  for (std::size_t i = 0; i < recomputed_.size(); ++i) {
    if (offset_[recomputed_[i]] == offset) return std::sqrt(recomputed_d2_[i]);
  }
  return std::sqrt(std::max(0.0, s_norm2 + offset));
}

SelectionMetrics SelectionEvaluator::evaluate(std::size_t n, std::span<const double> dots, std::span<const double> s) {
  const std::size_t keys = row_.keys;
  const std::size_t dim = row_.dim;
  ATTNGEOM_CHECK(n >= 1 && n < keys && dots.size() == keys && s.size() == dim);
  // ||s_N||^2 straight from s (O(d)): it keeps the relative accuracy that an incrementally
  // grown norm loses when the terms of s_N cancel.
  double s_norm2 = 0.0;
  for (const double x : s) s_norm2 += x * x;
  compute_offsets(s_norm2, dots, s);
  const std::span<const double> selected(offset_.data(), n);
  const std::span<const double> unselected(offset_.data() + n, keys - n);

  SelectionMetrics m;
  m.n = n;
  m.s_norm = std::sqrt(s_norm2);
  const double e_max = max_of(selected);    // r_max^2 - ||s_N||^2
  const double e_min = min_of(unselected);  // r_min^2 - ||s_N||^2
  m.r_max = radius_of(e_max, s_norm2);
  m.r_min = radius_of(e_min, s_norm2);
  m.margin = m.r_min - m.r_max;
  m.a_in_min = row_.alpha[n - 1];
  m.a_out_max = row_.alpha[n];
  m.unselected_inside_r_max = count_at_most(unselected, e_max);
  m.selected_inside_r_min = count_at_most(selected, e_min);
  m.precision = static_cast<double>(n) / static_cast<double>(n + m.unselected_inside_r_max);
  m.recall = static_cast<double>(m.selected_inside_r_min) / static_cast<double>(n);
  m.f_score = f_score(m.precision, m.recall);

  SeparationWitness& w = m.witness;
  w.min_selected_weighted_norm = weighted_norm_min_[n - 1];
  w.min_selected_cross_projection = std::numeric_limits<double>::infinity();
  // <p_i, s_N - p_i> cancels exactly where D_i does: there it comes from the vectors, in
  // place of the expanded value (whose rounding can flip its sign, e.g. at N = 1 where it is 0).
  auto exact = recomputed_.begin();
  for (std::size_t p = 0; p < n; ++p) {
    const double a = row_.alpha[p];
    double cross = 0.0;
    if (exact != recomputed_.end() && *exact == p) {
      const float* v = row_.value(p);
      for (std::size_t t = 0; t < dim; ++t) cross += a * v[t] * (s[t] - a * v[t]);
      ++exact;
    } else {
      cross = a * (dots[p] - a * row_.sq_norms[p]);
    }
    w.min_selected_cross_projection = std::min(w.min_selected_cross_projection, cross);
  }
  w.max_unselected_projection = max_of(dots.subspan(n));

  m.cos_sink = cosine(dots[row_.sink_position], row_.sq_norms[row_.sink_position], s_norm2);
  m.cos_last = cosine(dots[row_.last_position], row_.sq_norms[row_.last_position], s_norm2);
  fill_best_f(n, s_norm2, m);
  fill_radius_curve(n, s_norm2, m);
  return m;
}

// F(r) = 2 TP / (N + TP + FP) rises only at a selected distance and falls in between, so its
// maximum sits at some D_i, i in I_N, no further out than r_max, where F = 2N / (2N + c) with
// c unselected points inside. A radius holding t selected points and at least f unselected
// ones scores at most 2t / (N + t + f), which reaches 2N / (2N + c) only when
// t >= N (N + f) / (N + c). That bound (first with f = 0, then with f = the unselected points
// below the smallest remaining candidate) leaves few candidates, and only they are sorted. An
// unselected point at or below r_max counts against every candidate radius at or above it, so
// it is tallied at the first such candidate (a binary search) rather than sorted.
void SelectionEvaluator::fill_best_f(std::size_t n, double s_norm2, SelectionMetrics& m) {
  const std::size_t c = m.unselected_inside_r_max;
  const auto min_candidate_tp = [n, c](std::size_t fp) { return (n * (n + fp) + (n + c) - 1) / (n + c); };
  const std::span<double> selected(selected_sorted_.data(), n);
  std::copy(offset_.begin(), offset_.begin() + static_cast<std::ptrdiff_t>(n), selected.begin());
  const std::size_t first = min_candidate_tp(0) - 1;  // index of the smallest candidate, >= 0
  sorter_.sort_from(selected, first);
  const std::span<const double> candidates = selected.subspan(first);  // ascending, the last is r_max

  std::fill(tally_.begin(), tally_.begin() + static_cast<std::ptrdiff_t>(candidates.size()), 0);
  std::size_t fp_below = 0;  // unselected points strictly below the smallest candidate
  for (std::size_t p = n; p < row_.keys; ++p) {
    const double d = offset_[p];
    if (d < candidates.front()) {
      ++fp_below;
    } else if (d <= candidates.back()) {
      ++tally_[lower_bound_index(candidates, d)];
    }
  }
  // Candidates before this one cannot reach the maximum; their tallies still count further out.
  const std::size_t first_scored = std::max(first, std::min(n, min_candidate_tp(fp_below)) - 1) - first;

  std::size_t fp = fp_below;
  for (std::size_t i = 0; i < candidates.size();) {
    const double r = candidates[i];
    for (; i < candidates.size() && candidates[i] == r; ++i) fp += tally_[i];  // ties: all of them are inside
    if (i <= first_scored) continue;
    const std::size_t tp = first + i;
    const double f = 2.0 * static_cast<double>(tp) / static_cast<double>(n + tp + fp);
    if (f > m.f_best) {
      m.f_best = f;
      m.f_best_radius = radius_of(r, s_norm2);
    }
  }
}

void SelectionEvaluator::fill_radius_curve(std::size_t n, double s_norm2, SelectionMetrics& m) const {
  const std::span<const double> selected(offset_.data(), n);
  const std::span<const double> unselected(offset_.data() + n, row_.keys - n);
  m.at_normalised_radius.resize(normalised_radii_.size());
  for (std::size_t g = 0; g < normalised_radii_.size(); ++g) {
    // D <= rho ||s_N||  <=>  D^2 - ||s_N||^2 <= (rho^2 - 1) ||s_N||^2, exactly 0 at rho = 1.
    const double rho = normalised_radii_[g];
    const double e = (rho * rho - 1.0) * s_norm2;
    m.at_normalised_radius[g] = ball_scores(count_at_most(selected, e), count_at_most(unselected, e), n);
  }
}

}  // namespace attngeom::geometry
