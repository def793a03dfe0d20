// attngeom.selection: docs/method.md section 2 on arrays the user brings, computed by the
// same geometry calls, on the same N grid, as `attngeom metrics` on a dump of those arrays.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <string>

#include "analysis/dump_input.h"
#include "analysis/row_fields.h"
#include "geometry/selection_metrics.h"
#include "python/arrays.h"
#include "python/bindings.h"
#include "python/interrupt.h"
#include "util/error.h"
#include "util/half.h"
#include "util/parallel.h"

namespace attngeom::python {
namespace {

namespace py = pybind11;
using FloatArray = py::array_t<float, py::array::c_style>;
using IntArray = py::array_t<std::int32_t, py::array::c_style>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// attn [H, Q, T], values [H_kv, T, d], query_positions [Q] (ascending, in [0, T)).
struct SelectionInput {
  std::size_t heads, rows, seq, kv_heads, dim;
  const float* attn;
  const float* values;
  std::span<const int> query_positions;
};

SelectionInput checked_input(const FloatArray& attn, const FloatArray& values, const IntArray& query_positions) {
  if (attn.ndim() != 3 || values.ndim() != 3 || query_positions.ndim() != 1) {
    throw InputError("selection: attn must be [H, Q, T] (or [H, T]) and values [H_kv, T, d]");
  }
  SelectionInput in{static_cast<std::size_t>(attn.shape(0)),
                    static_cast<std::size_t>(attn.shape(1)),
                    static_cast<std::size_t>(attn.shape(2)),
                    static_cast<std::size_t>(values.shape(0)),
                    static_cast<std::size_t>(values.shape(2)),
                    attn.data(),
                    values.data(),
                    {query_positions.data(), static_cast<std::size_t>(query_positions.shape(0))}};
  if (in.heads < 1 || in.kv_heads < 1 || in.heads % in.kv_heads != 0 || in.dim < 1 ||
      static_cast<std::size_t>(values.shape(1)) != in.seq) {
    throw InputError("selection: attn [" + std::to_string(in.heads) + ", " + std::to_string(in.rows) + ", " +
                     std::to_string(in.seq) + "] and values [" + std::to_string(values.shape(0)) + ", " +
                     std::to_string(values.shape(1)) + ", " + std::to_string(values.shape(2)) +
                     "]: values must be [H_kv, T, d] with H_kv dividing H and the same T");
  }
  if (in.seq < 2 || in.rows < 1 || in.query_positions.size() != in.rows) {
    throw InputError("selection: needs at least 2 keys and 1 query row, and one query position per row");
  }
  for (std::size_t i = 0; i < in.rows; ++i) {
    const int q = in.query_positions[i];
    if (q < 0 || static_cast<std::size_t>(q) >= in.seq || (i > 0 && q <= in.query_positions[i - 1])) {
      throw InputError("selection: query_positions must be ascending, in [0, T)");
    }
  }
  return in;
}

// chosen_grid: the N a caller asked for (ascending, positive); empty: metrics' grid (every N
// when all_n, else the default one).
py::dict selection(const FloatArray& attn, const FloatArray& values, const IntArray& query_positions, bool all_n,
                   const std::vector<std::size_t>& chosen_grid, int threads) {
  const SelectionInput in = checked_input(attn, values, query_positions);
  const std::vector<std::size_t> grid =
      chosen_grid.empty() ? make_record_schema(in.seq, all_n).n_grid : chosen_grid;  // metrics' N grid for T keys
  const std::size_t cells = in.heads * in.rows * grid.size();
  std::vector<double> precision(cells, kNaN), recall(cells, kNaN), f(cells, kNaN), r_min(cells, kNaN),
      r_max(cells, kNaN), margin(cells, kNaN);
  std::vector<std::int64_t> false_positives(cells, -1), true_positives(cells, -1);
  run_interruptibly(
      [&](const std::atomic<bool>& stop) {
        check_attention_rows({in.attn, in.heads * in.rows * in.seq}, in.query_positions, in.seq, "selection: attn");
        if (const NonFiniteCount bad = count_nonfinite(DType::kF32, in.values, in.kv_heads * in.seq * in.dim);
            bad.count) {
          throw InputError("selection: values hold " + std::to_string(bad.count) +
                           " NaN/Inf value(s) (first at flat index " + std::to_string(bad.first) + ")");
        }
        const std::size_t group = in.heads / in.kv_heads;
        parallel_for_each(in.heads * in.rows, [&](std::size_t hq) {
          if (stop) return;
          const std::size_t h = hq / in.rows, q = hq % in.rows;
          const auto keys = static_cast<std::size_t>(in.query_positions[q]) + 1;  // causal: keys 0..q
          const geometry::HeadRowView row{
              {in.attn + hq * in.seq, keys}, {in.values + (h / group) * in.seq * in.dim, keys * in.dim}, in.dim};
          geometry::validate(row);
          // The calls analyze_row makes: every N through one Gram, the default grid directly;
          // a chosen grid directly too, its N below the row's keys.
          std::vector<std::size_t> n_values = all_n ? geometry::every_n(keys) : geometry::default_n_grid(keys);
          if (!chosen_grid.empty()) {
            n_values.clear();
            for (const std::size_t n : chosen_grid) {
              if (n < keys) n_values.push_back(n);
            }
          }
          const std::vector<geometry::SelectionMetrics> metrics =
              all_n ? geometry::selection_metrics(row, geometry::row_gram(row), n_values)
                    : geometry::selection_metrics(row, n_values);
          for (std::size_t g = 0, r = 0; g < grid.size(); ++g) {
            while (r < n_values.size() && n_values[r] < grid[g]) ++r;
            if (r == n_values.size() || n_values[r] != grid[g]) continue;
            const geometry::SelectionMetrics& m = metrics[r];
            const std::size_t at = hq * grid.size() + g;
            precision[at] = m.precision;
            recall[at] = m.recall;
            f[at] = m.f_score;
            r_min[at] = m.r_min;
            r_max[at] = m.r_max;
            margin[at] = m.margin;
            false_positives[at] = static_cast<std::int64_t>(m.unselected_inside_r_max);
            true_positives[at] = static_cast<std::int64_t>(m.selected_inside_r_min);
          }
        });
      },
      threads);
  const std::vector<std::int64_t> shape = {static_cast<std::int64_t>(in.heads), static_cast<std::int64_t>(in.rows),
                                           static_cast<std::int64_t>(grid.size())};
  py::dict out;
  out["n"] = to_numpy(std::vector<std::int64_t>(grid.begin(), grid.end()), {static_cast<std::int64_t>(grid.size())});
  out["precision"] = to_numpy(std::move(precision), shape);
  out["recall"] = to_numpy(std::move(recall), shape);
  out["f"] = to_numpy(std::move(f), shape);
  out["r_max"] = to_numpy(std::move(r_max), shape);
  out["r_min"] = to_numpy(std::move(r_min), shape);
  out["margin"] = to_numpy(std::move(margin), shape);
  out["unselected_inside_r_max"] = to_numpy(std::move(false_positives), shape);
  out["selected_inside_r_min"] = to_numpy(std::move(true_positives), shape);
  return out;
}

}  // namespace

void bind_selection(py::module_& m) {
  m.def("_selection", &selection, py::arg("attn"), py::arg("values"), py::arg("query_positions"), py::arg("all_n"),
        py::arg("grid"), py::arg("threads"));
}

}  // namespace attngeom::python
