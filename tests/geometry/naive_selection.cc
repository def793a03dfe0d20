#include "naive_selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

namespace attngeom::geometry::oracle {
namespace {

double dot(std::span<const double> a, std::span<const double> b) {
  double sum = 0.0;
  for (std::size_t t = 0; t < a.size(); ++t) sum += a[t] * b[t];
  return sum;
}

double cosine(std::span<const double> a, std::span<const double> b) {
  const double na = std::sqrt(dot(a, a));
  const double nb = std::sqrt(dot(b, b));
  if (na == 0.0 || nb == 0.0) return 0.0;
  return std::clamp(dot(a, b) / (na * nb), -1.0, 1.0);
}

double f_of(double p, double r) { return p + r > 0.0 ? 2.0 * p * r / (p + r) : 0.0; }

// One N, from scratch. v and pts are the row widened to double: [M][d] v_k and p_k = alpha_k v_k.
SelectionMetrics metrics_at(const HeadRowView& row, const std::vector<std::vector<double>>& v,
                            const std::vector<std::vector<double>>& pts, std::size_t n,
                            std::span<const double> normalised_radii) {
  const std::size_t keys = row.keys();
  const std::size_t dim = row.dim;

  std::vector<std::size_t> order(keys);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return row.alpha[a] != row.alpha[b] ? row.alpha[a] > row.alpha[b] : a < b;
  });
  std::vector<bool> selected(keys, false);
  for (std::size_t p = 0; p < n; ++p) selected[order[p]] = true;

  std::vector<double> s(dim, 0.0);
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t t = 0; t < dim; ++t) s[t] += pts[order[p]][t];
  }
  std::vector<double> dist(keys);
  for (std::size_t k = 0; k < keys; ++k) {
    double sum = 0.0;
    for (std::size_t t = 0; t < dim; ++t) sum += (pts[k][t] - s[t]) * (pts[k][t] - s[t]);
    dist[k] = std::sqrt(sum);
  }
  const auto count_inside = [&](double r, bool want_selected) {
    std::size_t c = 0;
    for (std::size_t k = 0; k < keys; ++k) c += (selected[k] == want_selected) && dist[k] <= r;
    return c;
  };

  SelectionMetrics m;
  m.n = n;
  m.s_norm = std::sqrt(dot(s, s));
  m.r_min = INFINITY;
  m.a_out_max = 0.0;
  m.a_in_min = INFINITY;
  m.witness.min_selected_weighted_norm = INFINITY;
  m.witness.min_selected_cross_projection = INFINITY;
  m.witness.max_unselected_projection = -INFINITY;
  for (std::size_t k = 0; k < keys; ++k) {
    if (selected[k]) {
      m.r_max = std::max(m.r_max, dist[k]);
      m.a_in_min = std::min<double>(m.a_in_min, row.alpha[k]);
      m.witness.min_selected_weighted_norm =
          std::min(m.witness.min_selected_weighted_norm, row.alpha[k] * std::sqrt(dot(v[k], v[k])));
      double cross = 0.0;  // <p_k, s - p_k>
      for (std::size_t t = 0; t < dim; ++t) cross += pts[k][t] * (s[t] - pts[k][t]);
      m.witness.min_selected_cross_projection = std::min(m.witness.min_selected_cross_projection, cross);
    } else {
      m.r_min = std::min(m.r_min, dist[k]);
      m.a_out_max = std::max<double>(m.a_out_max, row.alpha[k]);
      m.witness.max_unselected_projection = std::max(m.witness.max_unselected_projection, dot(v[k], s));
    }
  }
  m.margin = m.r_min - m.r_max;
  // P = |{i in I : D_i <= r_max}| / |{k : D_k <= r_max}|, literally.
  const std::size_t tp_at_rmax = count_inside(m.r_max, true);
  m.unselected_inside_r_max = count_inside(m.r_max, false);
  m.precision = static_cast<double>(tp_at_rmax) / static_cast<double>(tp_at_rmax + m.unselected_inside_r_max);
  m.selected_inside_r_min = count_inside(m.r_min, true);
  m.recall = static_cast<double>(m.selected_inside_r_min) / static_cast<double>(n);
  m.f_score = f_of(m.precision, m.recall);

  // F_best: try every distinct distance as the radius, smallest first.
  std::vector<std::pair<double, bool>> sorted;
  for (std::size_t k = 0; k < keys; ++k) sorted.emplace_back(dist[k], selected[k]);
  std::sort(sorted.begin(), sorted.end());
  std::size_t tp = 0;
  std::size_t fp = 0;
  for (std::size_t i = 0; i < sorted.size();) {
    const double r = sorted[i].first;
    for (; i < sorted.size() && sorted[i].first == r; ++i) (sorted[i].second ? tp : fp) += 1;
    const double p = tp + fp > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 0.0;
    const double f = f_of(p, static_cast<double>(tp) / static_cast<double>(n));
    // Equal scores at two radii (4/6 vs 6/9) may round apart by an ulp here; keep the smaller radius.
    if (f > m.f_best + 1e-12) {
      m.f_best = f;
      m.f_best_radius = r;
    }
  }

  for (const double rho : normalised_radii) {
    const double r = rho * m.s_norm;
    BallScores b;
    b.selected_inside = count_inside(r, true);
    b.unselected_inside = count_inside(r, false);
    const std::size_t total = b.selected_inside + b.unselected_inside;
    b.precision = total > 0 ? static_cast<double>(b.selected_inside) / static_cast<double>(total) : 0.0;
    b.recall = static_cast<double>(b.selected_inside) / static_cast<double>(n);
    b.f_score = f_of(b.precision, b.recall);
    m.at_normalised_radius.push_back(b);
  }
  m.cos_sink = cosine(s, v[0]);
  m.cos_last = cosine(s, v[keys - 1]);
  return m;
}

}  // namespace

std::vector<SelectionMetrics> naive_selection_metrics(const HeadRowView& row, std::span<const std::size_t> n_values,
                                                      std::span<const double> normalised_radii) {
  const std::size_t keys = row.keys();
  const std::size_t dim = row.dim;
  std::vector<std::vector<double>> v(keys, std::vector<double>(dim));
  std::vector<std::vector<double>> pts(keys, std::vector<double>(dim));
  for (std::size_t k = 0; k < keys; ++k) {
    for (std::size_t t = 0; t < dim; ++t) {
      v[k][t] = row.values[k * dim + t];
      pts[k][t] = static_cast<double>(row.alpha[k]) * v[k][t];
    }
  }
  std::vector<SelectionMetrics> out;
  for (const std::size_t n : n_values) out.push_back(metrics_at(row, v, pts, n, normalised_radii));
  return out;
}

}  // namespace attngeom::geometry::oracle
