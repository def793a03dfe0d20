#include "geometry/selection_metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "geometry/linalg.h"
#include "geometry/projection_sweep.h"
#include "geometry/selection_evaluator.h"
#include "geometry/selection_order.h"
#include "geometry/value_projection.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

// A direct pass costs one GEMV (about M*d flops at memory speed) per N; the Gram costs M^2 d / 2
// flops at GEMM speed, several times faster per flop. Past M/8 values of N the Gram wins.
constexpr std::size_t kDenseGridDivisor = 8;

void check_radii(std::span<const double> radii) {
  for (std::size_t g = 0; g < radii.size(); ++g) {
    if (!std::isfinite(radii[g]) || radii[g] < 0.0)
      throw InputError("selection: normalised radii must be finite and >= 0");
    if (g > 0 && radii[g] <= radii[g - 1]) throw InputError("selection: normalised radii must be strictly ascending");
  }
}

std::vector<double> widen(std::span<const float> x) { return {x.begin(), x.end()}; }

PositionedRow position_row(const HeadRowView& row, const SelectionOrder& order) {
  PositionedRow out;
  out.keys = row.keys();
  out.dim = row.dim;
  out.alpha.resize(out.keys);
  out.order.assign(order.order.begin(), order.order.end());
  out.values = row.values.data();
  out.sq_norms.resize(out.keys);
  for (std::size_t p = 0; p < out.keys; ++p) {
    out.alpha[p] = row.alpha[out.order[p]];
    out.sq_norms[p] = squared_norm_in_lanes(out.value(p), out.dim);  // as the GPU sums it
  }
  out.sink_position = order.rank.front();
  out.last_position = order.rank.back();
  return out;
}

// s += a * v.
void add_scaled(std::span<double> s, double a, const float* v) {
  for (std::size_t t = 0; t < s.size(); ++t) s[t] += a * v[t];
}

// Grows s_N key by key with Gram columns; evaluates at each requested N.
// gram: [M, M] in selection order.
std::vector<SelectionMetrics> sweep_with_gram(PositionedRow& row, std::span<const double> gram,
                                              std::span<const std::size_t> n_values, const SelectionOptions& options) {
  const std::size_t keys = row.keys;
  // The Gram diagonal, so that distances and projections share one rounding.
  for (std::size_t p = 0; p < keys; ++p) row.sq_norms[p] = gram[p * keys + p];
  SelectionEvaluator evaluator(row, options.normalised_radii);
  ProjectionSweep sweep(row.alpha);
  std::vector<double> s(row.dim, 0.0);  // [d] s_N, for ||s_N|| and the few distances that cancel

  std::vector<SelectionMetrics> out;
  out.reserve(n_values.size());
  std::size_t next = 0;
  for (std::size_t q = 0; next < n_values.size(); ++q) {
    sweep.add(q, gram.subspan(q * keys, keys));  // row q of a symmetric Gram is its column
    add_scaled(s, row.alpha[q], row.value(q));
    if (q + 1 == n_values[next]) {
      out.push_back(evaluator.evaluate(q + 1, sweep.dots(), s));
      ++next;
    }
  }
  return out;
}

// Builds s_N at each requested N, then every projection <v_p, s_N> in one GEMM.
std::vector<SelectionMetrics> sweep_direct(const PositionedRow& row, std::span<const std::size_t> n_values,
                                           const SelectionOptions& options) {
  const std::size_t grid = n_values.size();
  std::vector<double> sums(grid * row.dim);  // [G, d] s_N for each requested N
  std::vector<double> s(row.dim, 0.0);       // [d] running s_N
  std::size_t joined = 0;
  for (std::size_t g = 0; g < grid; ++g) {
    for (; joined < n_values[g]; ++joined) add_scaled(s, row.alpha[joined], row.value(joined));
    std::copy(s.begin(), s.end(), sums.begin() + static_cast<std::ptrdiff_t>(g * row.dim));
  }
  std::vector<double> dots(grid * row.keys);  // [G, M] <v_p, s_N>
  project_rows_in_order(row.values, row.order, row.dim, sums, dots);
  SelectionEvaluator evaluator(row, options.normalised_radii);
  std::vector<SelectionMetrics> out;
  out.reserve(grid);
  for (std::size_t g = 0; g < grid; ++g) {
    const std::span<const double> sum(sums.data() + g * row.dim, row.dim);
    out.push_back(evaluator.evaluate(n_values[g], std::span<const double>(dots).subspan(g * row.keys, row.keys), sum));
  }
  return out;
}

}  // namespace

ProjectionMethod resolved_method(ProjectionMethod method, std::size_t grid, std::size_t keys) {
  if (method != ProjectionMethod::kAutomatic) return method;
  return grid * kDenseGridDivisor > keys ? ProjectionMethod::kGram : ProjectionMethod::kDirect;
}

std::vector<std::size_t> default_n_grid(std::size_t keys) {
  static constexpr std::array<std::size_t, 16> kGrid = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 64, 128, 256, 512};
  std::vector<std::size_t> grid;
  for (const std::size_t n : kGrid) {
    if (n < keys) grid.push_back(n);
  }
  return grid;
}

void check_n_values(std::span<const std::size_t> n_values, std::size_t keys) {
  for (std::size_t g = 0; g < n_values.size(); ++g) {
    const std::size_t n = n_values[g];
    if (n < 1 || n >= keys) {
      throw InputError("selection: N = " + std::to_string(n) + " is outside 1..M-1 = 1.." + std::to_string(keys - 1));
    }
    if (g > 0 && n <= n_values[g - 1]) throw InputError("selection: the N values must be strictly ascending");
  }
}

std::vector<std::size_t> every_n(std::size_t keys) {
  std::vector<std::size_t> all;
  for (std::size_t n = 1; n < keys; ++n) all.push_back(n);
  return all;
}

RowGram row_gram(const HeadRowView& row) {
  validate(row);
  return {row.keys(), gram_matrix(widen(row.values), row.keys(), row.dim)};
}

std::vector<SelectionMetrics> selection_metrics(const HeadRowView& row, std::span<const std::size_t> n_values,
                                                const SelectionOptions& options) {
  return selection_metrics(validated(row), n_values, options);
}

std::vector<SelectionMetrics> selection_metrics(const ValidatedRow& checked, std::span<const std::size_t> n_values,
                                                const SelectionOptions& options) {
  const HeadRowView& row = checked.view();
  check_n_values(n_values, row.keys());
  check_radii(options.normalised_radii);
  if (n_values.empty()) return {};
  const ProjectionMethod method = resolved_method(options.method, n_values.size(), row.keys());
  PositionedRow positioned = position_row(row, selection_order(row.alpha));
  if (method == ProjectionMethod::kDirect) return sweep_direct(positioned, n_values, options);
  std::vector<double> values(positioned.keys * positioned.dim);  // [M, d] v by position, for the Gram
  for (std::size_t p = 0; p < positioned.keys; ++p) {
    std::copy_n(positioned.value(p), positioned.dim, values.begin() + static_cast<std::ptrdiff_t>(p * positioned.dim));
  }
  const std::vector<double> gram = gram_matrix(values, positioned.keys, positioned.dim);  // [M, M]
  return sweep_with_gram(positioned, gram, n_values, options);
}

std::vector<SelectionMetrics> selection_metrics(const HeadRowView& row, const RowGram& gram,
                                                std::span<const std::size_t> n_values,
                                                const SelectionOptions& options) {
  validate(row);
  if (gram.keys != row.keys() || gram.entries.size() != row.keys() * row.keys()) {
    throw InputError("selection: the Gram matrix does not belong to this row (M differs)");
  }
  check_n_values(n_values, row.keys());
  check_radii(options.normalised_radii);
  if (n_values.empty()) return {};
  const SelectionOrder order = selection_order(row.alpha);
  PositionedRow positioned = position_row(row, order);
  const std::size_t keys = row.keys();
  std::vector<double> permuted(keys * keys);  // [M, M] the given Gram in selection order
  for (std::size_t p = 0; p < keys; ++p) {
    const double* source = gram.entries.data() + order.order[p] * keys;
    for (std::size_t q = 0; q < keys; ++q) permuted[p * keys + q] = source[order.order[q]];
  }
  return sweep_with_gram(positioned, permuted, n_values, options);
}

}  // namespace attngeom::geometry
