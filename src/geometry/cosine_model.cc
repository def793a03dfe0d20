#include "geometry/cosine_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
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

namespace {

// Pairs (i, l) whose screened |delta| may still be the maximum, with that screened value.
struct Candidate {
  std::uint32_t i;
  std::uint32_t l;
  float screened;
};

// |delta| over one stretch of a tile row: its max and sums. Float sums of at most kTile
// terms (relative error gamma_kTile, about 1.5e-5), added up in double across stretches.
struct ScreenedStretch {
  float max = 0.0f;
  float abs_sum = 0.0f;
  float sq_sum = 0.0f;
};

// |delta| of one screened pair; 0 where the partner is undefined (mask 0).
float screened_magnitude(float product, float model, float mask) {
  const float delta = (product - model) * mask;
  return delta < 0.0f ? -delta : delta;
}

// products, model, mask: [count]. One branch-free loop with one model pointer: a select
// between the sink's constant and the lag table inside the loop kept GCC from vectorising it.
ScreenedStretch screen_stretch(const float* products, const float* model, const float* mask, std::size_t count) {
  float max = 0.0f;
  float abs_sum = 0.0f;
  float sq_sum = 0.0f;
#pragma omp simd reduction(max : max) reduction(+ : abs_sum, sq_sum)
  for (std::size_t b = 0; b < count; ++b) {
    const float magnitude = screened_magnitude(products[b], model[b], mask[b]);
    max = magnitude > max ? magnitude : max;
    abs_sum += magnitude;
    sq_sum += magnitude * magnitude;
  }
  return {max, abs_sum, sq_sum};
}

}  // namespace

CosineDeviation screened_cosine_deviation(const UnitRows& units, const CosineModel& model, const PairProducts& products) {
  const std::size_t keys = units.keys();
  const std::size_t dim = units.dim;
  constexpr std::size_t kTile = LoadedUnits::kTile;
  ATTNGEOM_CHECK(keys < (std::size_t{1} << 32));
  CosineDeviation out;
  std::size_t defined = 0;
  for (const unsigned char d : units.defined) defined += d;
  out.pairs = defined * (defined - (defined > 0)) / 2;
  if (out.pairs == 0) return out;

  const std::unique_ptr<LoadedUnits> loaded = products.load(units.units, keys, dim);
  // Screened deltas also round the model cosine to float (u) and the difference (u, relative).
  const double slack = 2.0 * (products.error_bound(dim) + 0x1p-22);
  const std::vector<double> by_lag = model.content_cosine_by_lag(keys);
  std::vector<float> model_by_lag(by_lag.begin(), by_lag.end());  // [M] c by lag, content pairs
  std::vector<float> mask(keys);                                   // [M] 1 where u_l is defined
  for (std::size_t l = 0; l < keys; ++l) mask[l] = units.defined[l] ? 1.0f : 0.0f;
  const std::vector<float> sink_model(kTile, static_cast<float>(model.rho_0));  // [kTile] the sink row's c = rho_0

  std::vector<float> tile(kTile * kTile);  // [kTile, kTile]
  std::vector<Candidate> candidates;
  double sum_abs = 0.0;
  double sum_sq = 0.0;
  float screened_max = 0.0f;
  for (std::size_t i0 = 0; i0 < keys; i0 += kTile) {
    for (std::size_t j0 = i0; j0 < keys; j0 += kTile) {
      loaded->tile(i0, j0, tile.data());
      for (std::size_t a = 0; a < kTile && i0 + a < keys; ++a) {
        const std::size_t i = i0 + a;
        if (!units.defined[i]) continue;
        const std::size_t first = j0 > i ? 0 : i + 1 - j0;  // pairs l > i only
        const std::size_t last = std::min(kTile, keys - j0);
        if (first >= last) continue;
        const std::size_t l0 = j0 + first;  // the stretch's first key: l0 + b for b < count
        const std::size_t count = last - first;
        // Content cosines by lag l - i >= 1; the sink row (i = 0) uses rho_0 throughout.
        const float* c = i == 0 ? sink_model.data() : model_by_lag.data() + (l0 - i);
        const float* m = mask.data() + l0;
        const float* products_row = tile.data() + a * kTile + first;
        const ScreenedStretch row = screen_stretch(products_row, c, m, count);
        sum_abs += row.abs_sum;
        sum_sq += row.sq_sum;
        if (row.max < screened_max - slack) continue;
        screened_max = std::max(screened_max, row.max);
        for (std::size_t b = 0; b < count; ++b) {
          const float magnitude = screened_magnitude(products_row[b], c[b], m[b]);
          if (magnitude >= screened_max - slack && m[b] != 0.0f) {
            candidates.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(l0 + b), magnitude});
          }
        }
      }
    }
  }
  for (const Candidate& candidate : candidates) {
    if (candidate.screened < screened_max - slack) continue;
    const double* u = units.unit(candidate.i);
    const double* v = units.unit(candidate.l);
    double cosine = 0.0;
    for (std::size_t t = 0; t < dim; ++t) cosine += u[t] * v[t];
    out.max_abs = std::max(out.max_abs, std::abs(cosine - model.cosine(candidate.i, candidate.l)));
  }
  out.mean_abs = sum_abs / static_cast<double>(out.pairs);
  out.sigma2 = static_cast<double>(dim) * sum_sq / static_cast<double>(out.pairs);
  return out;
}

}  // namespace attngeom::geometry
