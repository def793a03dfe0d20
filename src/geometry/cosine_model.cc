#include "geometry/cosine_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/error.h"

namespace attngeom::geometry {

double CosineModel::cosine(std::size_t i, std::size_t l) const {
  if (i == l) return 1.0;
  if (i == 0 || l == 0) return rho_0;
  const double lag = static_cast<double>(i > l ? i - l : l - i);
  return std::exp(-beta * lag);  // beta = +inf gives exactly 0 for lag >= 1
}

std::vector<double> CosineModel::content_cosine_by_lag(std::size_t keys) const {
  std::vector<double> table(keys);
  for (std::size_t tau = 0; tau < keys; ++tau) table[tau] = tau == 0 ? 1.0 : std::exp(-beta * static_cast<double>(tau));
  return table;
}

void CosineModel::column(std::size_t l, std::span<const double> by_lag, std::span<double> out) const {
  const std::size_t keys = out.size();
  ATTNGEOM_CHECK(by_lag.size() == keys && l < keys);
  for (std::size_t i = 0; i < keys; ++i) out[i] = by_lag[i > l ? i - l : l - i];
  if (l == 0) {
    for (std::size_t i = 1; i < keys; ++i) out[i] = rho_0;
  } else {
    out[0] = rho_0;
  }
}

CosineDeviation cosine_deviation(const HeadRowView& row, const RowGram& gram, const CosineModel& model) {
  validate(row);
  const std::size_t keys = row.keys();
  if (gram.keys != keys) throw InputError("cosine deviation: the Gram matrix does not belong to this row");
  std::vector<double> norms(keys);
  for (std::size_t k = 0; k < keys; ++k) norms[k] = std::sqrt(gram.entries[k * keys + k]);
  const std::vector<double> by_lag = model.content_cosine_by_lag(keys);
  std::vector<double> model_column(keys);
  CosineDeviation out;
  double sum_abs = 0.0;
  double sum_sq = 0.0;
  for (std::size_t i = 0; i < keys; ++i) {
    if (norms[i] == 0.0) continue;
    const double* g = gram.entries.data() + i * keys;
    model.column(i, by_lag, model_column);
    for (std::size_t l = i + 1; l < keys; ++l) {
      if (norms[l] == 0.0) continue;
      const double delta = g[l] / (norms[i] * norms[l]) - model_column[l];
      out.max_abs = std::max(out.max_abs, std::abs(delta));
      sum_abs += std::abs(delta);
      sum_sq += delta * delta;
      ++out.pairs;
    }
  }
  if (out.pairs > 0) {
    out.mean_abs = sum_abs / static_cast<double>(out.pairs);
    out.sigma2 = static_cast<double>(row.dim) * sum_sq / static_cast<double>(out.pairs);
  }
  return out;
}

}  // namespace attngeom::geometry
