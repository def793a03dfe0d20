#include "geometry/cosine_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "geometry/deviation_sums.h"
#include "geometry/simd_lanes.h"
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
  double sum_sq = 0.0;
  for (std::size_t i = 0; i < keys; ++i) {
    if (norms[i] == 0.0) continue;
    const double* g = gram.entries.data() + i * keys;
    model.column(i, by_lag, model_column);
    for (std::size_t l = i + 1; l < keys; ++l) {
      if (norms[l] == 0.0) continue;
      const double delta = g[l] / (norms[i] * norms[l]) - model_column[l];
      out.max_abs = std::max(out.max_abs, std::abs(delta));
      sum_sq += delta * delta;
      ++out.pairs;
    }
  }
  if (out.pairs > 0) out.sigma2 = static_cast<double>(row.dim) * sum_sq / static_cast<double>(out.pairs);
  return out;
}

namespace {

// A pair (i, l) whose |delta| may still be the maximum, with the upper end of its screened range.
struct Candidate {
  std::uint32_t i;
  std::uint32_t l;
  double upper;
};

constexpr Lanes kLaneIndex = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

// |delta| of one screened pair; 0 where the partner is undefined (mask 0).
float screened_magnitude(float product, float model, float mask) {
  const float delta = (product - model) * mask;
  return delta < 0.0f ? -delta : delta;
}

// The screened |delta| of one tile row's pairs, columns first..last-1, into lane-wise maxima.
// Column b reads products[b], model[model_offset + b] and mask[b], kLanes at a time from the
// aligned column at or before first to the one past last: lanes outside the stretch read
// padding and are zeroed, so the row needs no scalar ends, and the lanes are only reduced
// once per row. Masked is false when every vector of the row is defined (the mask is all ones
// then). Vectors pass by reference: by value they would change the ABI on CPUs without
// AVX-512 (-Wpsabi).
template <bool Masked>
void screen_row(const float* products, const float* model, std::ptrdiff_t model_offset, const float* mask,
                std::size_t first, std::size_t last, Lanes& max) {
  const auto begin = static_cast<float>(first), end = static_cast<float>(last);
  const std::size_t start = first / kLanes * kLanes;
  Lanes column = static_cast<float>(start) + kLaneIndex;  // exact: columns < kTile
  for (std::size_t b = start; b < last; b += kLanes, column += static_cast<float>(kLanes)) {
    Lanes product, c, m = Lanes{} + 1.0f;
    std::memcpy(&product, products + b, sizeof product);
    std::memcpy(&c, model + (model_offset + static_cast<std::ptrdiff_t>(b)), sizeof c);
    if (Masked) std::memcpy(&m, mask + b, sizeof m);
    const Lanes delta = (column >= begin) & (column < end) ? (product - c) * m : Lanes{};
    const Lanes magnitude = delta < 0.0f ? -delta : delta;
    max = magnitude > max ? magnitude : max;
  }
}

// A tree of four shuffles and maxima rather than a chain of 15 dependent ones.
float lane_max(const Lanes& x) {
  Lanes m = x;
  Lanes shifted = __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  m = shifted > m ? shifted : m;
  shifted = __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
  m = shifted > m ? shifted : m;
  shifted = __builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  m = shifted > m ? shifted : m;
  shifted = __builtin_shufflevector(m, m, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  m = shifted > m ? shifted : m;
  return m[0];
}

// The screen of one row's tiles: the model's tables, the candidates so far, and the largest
// lower end of any screened range, a lower bound on the maximum |delta|.
class DeviationScreen {
 public:
  DeviationScreen(const UnitRows& units, const CosineModel& model, bool masked)
      : units_(units),
        rho_0_(model.rho_0),
        masked_(masked),
        by_lag_(model.content_cosine_by_lag(units.keys())),
        // Padded for whole vectors: kLanes lags before lag 0 and kTile past the last key.
        model_by_lag_(kLanes + units.keys() + kTile, 0.0f),
        mask_(units.keys() + kTile, 0.0f),
        sink_model_(kTile, static_cast<float>(model.rho_0)) {
    std::copy(by_lag_.begin(), by_lag_.end(), model_by_lag_.begin() + kLanes);
    for (std::size_t l = 0; l < units.keys(); ++l) mask_[l] = units.defined[l] ? 1.0f : 0.0f;
  }

  // Screens one tile (LoadedUnits::tile at i0, j0) whose screened |delta| are within `margin`
  // of the true ones; returns how many candidates it added.
  std::size_t screen_tile(const float* tile, std::size_t i0, std::size_t j0, double margin) {
    const std::size_t keys = units_.keys();
    const std::size_t before = candidates_.size();
    for (std::size_t a = 0; a < kTile && i0 + a < keys; ++a) {
      const std::size_t i = i0 + a;
      if (!units_.defined[i]) continue;
      const std::size_t first = j0 > i ? 0 : i + 1 - j0;  // pairs l > i only
      const std::size_t last = std::min(kTile, keys - j0);
      if (first >= last) continue;
      // Column b is key l = j0 + b: content cosines by lag l - i >= 1 (kLanes on in the
      // table, which a vector may start up to kLanes - 1 columns before); the sink row
      // (i = 0) uses rho_0 throughout.
      const float* c = i == 0 ? sink_model_.data() : model_by_lag_.data();
      const std::ptrdiff_t c_offset =  // c_offset + b >= 2 for every column read
          i == 0 ? 0 : static_cast<std::ptrdiff_t>(kLanes + j0) - static_cast<std::ptrdiff_t>(i);
      const float* m = mask_.data() + j0;
      const float* products_row = tile + a * kTile;
      Lanes max{};
      if (masked_) {
        screen_row<true>(products_row, c, c_offset, m, first, last, max);
      } else {
        screen_row<false>(products_row, c, c_offset, m, first, last, max);
      }
      const double row_max = lane_max(max);
      if (row_max + margin < lower_) continue;
      lower_ = std::max(lower_, row_max - margin);
      for (std::size_t b = first; b < last; ++b) {
        const double upper =
            screened_magnitude(products_row[b], c[c_offset + static_cast<std::ptrdiff_t>(b)], m[b]) + margin;
        if (upper >= lower_ && m[b] != 0.0f) {
          candidates_.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j0 + b), upper});
        }
      }
    }
    return candidates_.size() - before;
  }

  // Takes back the last `count` candidates, to screen their tile again more finely.
  void drop_last(std::size_t count) { candidates_.resize(candidates_.size() - count); }

  // The largest |delta| of the candidates that may still hold it, each in double.
  double exact_maximum() const {
    double maximum = 0.0;
    for (const Candidate& candidate : candidates_) {
      if (candidate.upper < lower_) continue;
      const std::size_t i = candidate.i, l = candidate.l;  // i < l
      const double cosine = unit_pair_cosine(units_, i, l);
      const double model_cosine = i == 0 ? rho_0_ : by_lag_[l - i];
      maximum = std::max(maximum, std::abs(cosine - model_cosine));
    }
    return maximum;
  }

 private:
  static constexpr std::size_t kTile = LoadedUnits::kTile;
  const UnitRows& units_;
  double rho_0_;
  bool masked_;                      // some vector of the row is zero
  std::vector<double> by_lag_;       // [M] content cosines by lag
  std::vector<float> model_by_lag_;  // [kLanes + M + kTile] c by lag from kLanes
  std::vector<float> mask_;          // [M + kTile] 1 where u_l is defined
  std::vector<float> sink_model_;    // [kTile] the sink row's c = rho_0
  std::vector<Candidate> candidates_;
  double lower_ = 0.0;
};

// A tile with more candidates than this goes through fp32 products again: recomputing each
// candidate in double costs more than an fp32 tile from about this many on.
constexpr std::size_t kCrowdedTile = LoadedUnits::kTile * LoadedUnits::kTile / 16;

}  // namespace

// One function for every caller, never inlined, so that its sum keeps one order everywhere.
[[gnu::noinline]] double unit_pair_cosine(const UnitRows& units, std::size_t i, std::size_t l) {
  const std::size_t dim = units.dim;
  const float* v_i = units.values + i * dim;
  const float* v_l = units.values + l * dim;
  double dot = 0.0;
#pragma omp simd reduction(+ : dot)
  for (std::size_t t = 0; t < dim; ++t) dot += static_cast<double>(v_i[t]) * v_l[t];
  return dot * units.inverse_norms[i] * units.inverse_norms[l];
}

CosineDeviation screened_cosine_deviation(const UnitRows& units, const CosineModel& model,
                                          const PairProducts& products) {
  return screened_cosine_deviation(units, model, products, deviation_spread(units, model));
}

CosineDeviation screened_cosine_deviation(const UnitRows& units, const CosineModel& model, const PairProducts& products,
                                          const CosineDeviation& spread) {
  const std::size_t keys = units.keys();
  const std::size_t dim = units.dim;
  constexpr std::size_t kTile = LoadedUnits::kTile;
  ATTNGEOM_CHECK(keys < (std::size_t{1} << 32));
  CosineDeviation out = spread;
  if (out.pairs == 0) return out;

  const std::unique_ptr<LoadedUnits> loaded = products.load(units.rounded, keys, dim);
  // Screened deltas also round the model cosine to float (u) and the difference (u, relative).
  const double margin = loaded->error_bound() + 0x1p-22;
  const double fine_margin = fp32_product_error_bound(dim) + 0x1p-22;
  std::unique_ptr<LoadedUnits> fine;  // fp32 products for crowded tiles, loaded on first need
  const bool masked = std::find(units.defined.begin(), units.defined.end(), 0) != units.defined.end();
  DeviationScreen screen(units, model, masked);
  std::vector<float> tile(kTile * kTile);  // [kTile, kTile]
  for (std::size_t i0 = 0; i0 < keys; i0 += kTile) {
    for (std::size_t j0 = i0; j0 < keys; j0 += kTile) {
      loaded->tile(i0, j0, tile.data());
      const std::size_t added = screen.screen_tile(tile.data(), i0, j0, margin);
      // A crowded tile (deviations within the margin of each other, as when every vector is
      // nearly the same) would send most of its pairs to the double recomputation.
      if (added > kCrowdedTile && margin > fine_margin) {
        screen.drop_last(added);
        if (!fine) fine = fp32_pair_products().load(units.rounded, keys, dim);
        fine->tile(i0, j0, tile.data());
        screen.screen_tile(tile.data(), i0, j0, fine_margin);
      }
    }
  }
  out.max_abs = screen.exact_maximum();
  return out;
}

CosineDeviation deviation_spread(const UnitRows& units, const CosineModel& model) {
  const auto defined = static_cast<std::size_t>(std::count(units.defined.begin(), units.defined.end(), 1));
  return deviation_spread(defined, units.dim, [&] { return deviation_square_sum(units, model); });
}

}  // namespace attngeom::geometry
