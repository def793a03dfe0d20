#include "geometry/prefix_screen.h"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "util/error.h"
#include "util/parallel.h"

namespace attngeom::geometry {
namespace {

constexpr std::size_t kTile = LoadedUnits::kTile;
constexpr std::size_t kSlots = 2 * kTile - 1;  // lag l - i within a tile: (j0 - i0) + slot - (kTile - 1)
constexpr float kInf = std::numeric_limits<float>::infinity();

// Tile (bi, bj), bi <= bj, by column: bj (bj + 1) / 2 + bi.
std::size_t tile_index(std::size_t bi, std::size_t bj) { return bj * (bj + 1) / 2 + bi; }

// One tile's screened cosines of defined pairs i < l: per slot the largest and smallest of
// the content pairs (i >= 1), and of the sink's pairs (i = 0) apart. hi < lo: no pair.
struct TileExtrema {
  std::vector<float> hi = std::vector<float>(kSlots, -kInf);  // [kSlots]
  std::vector<float> lo = std::vector<float>(kSlots, kInf);   // [kSlots]
  float sink_hi = -kInf, sink_lo = kInf;
};

// Per-thread product kernels and tile buffers: a loaded kernel keeps scratch of its own.
class ThreadTiles {
 public:
  ThreadTiles(const UnitRows& units, const PairProducts& products)
      : units_(units),
        products_(products),
        loaded_(static_cast<std::size_t>(omp_get_max_threads())),
        buffers_(loaded_.size()) {}
  // This thread's products of tile (i0, j0), [kTile, kTile].
  const float* tile(std::size_t i0, std::size_t j0) {
    const auto thread = static_cast<std::size_t>(omp_get_thread_num());
    if (!loaded_[thread]) {
      loaded_[thread] = products_.load(units_.rounded, units_.keys(), units_.dim);
      buffers_[thread].resize(kTile * kTile);
    }
    loaded_[thread]->tile(i0, j0, buffers_[thread].data());
    return buffers_[thread].data();
  }
  std::unique_ptr<LoadedUnits> load() const { return products_.load(units_.rounded, units_.keys(), units_.dim); }

 private:
  const UnitRows& units_;
  const PairProducts& products_;
  std::vector<std::unique_ptr<LoadedUnits>> loaded_;
  std::vector<std::vector<float>> buffers_;
};

TileExtrema tile_extrema(const float* products, std::size_t i0, std::size_t j0, const UnitRows& units,
                         std::span<const float> mask) {
  const std::size_t keys = units.keys();
  TileExtrema e;
  for (std::size_t a = 0; a < kTile && i0 + a < keys; ++a) {
    const std::size_t i = i0 + a;
    if (!units.defined[i]) continue;
    const std::size_t first = j0 > i ? 0 : i + 1 - j0;  // pairs l > i only
    const std::size_t last = std::min(kTile, keys - j0);
    const float* p = products + a * kTile;
    const float* m = mask.data() + j0;
    if (i == 0) {
      for (std::size_t b = first; b < last; ++b) {
        if (m[b] == 0.0f) continue;
        e.sink_hi = std::max(e.sink_hi, p[b]);
        e.sink_lo = std::min(e.sink_lo, p[b]);
      }
      continue;
    }
    float* hi = e.hi.data() + (kTile - 1 - a);  // hi[b]: slot b - a + kTile - 1
    float* lo = e.lo.data() + (kTile - 1 - a);
#pragma omp simd
    for (std::size_t b = first; b < last; ++b) {
      const bool pair = m[b] != 0.0f;
      hi[b] = pair && p[b] > hi[b] ? p[b] : hi[b];
      lo[b] = pair && p[b] < lo[b] ? p[b] : lo[b];
    }
  }
  return e;
}

// One row's screen over the shared tiles.
class RowScreen {
 public:
  RowScreen(const UnitRows& units, std::span<const float> mask, std::size_t keys, const CosineModel& model,
            double margin)
      : units_(units),
        mask_(mask),
        keys_(keys),
        margin_(margin),
        rho_0_(model.rho_0),
        by_lag_(model.content_cosine_by_lag(keys)),
        model_by_lag_(by_lag_.begin(), by_lag_.end()),
        sink_model_(static_cast<float>(model.rho_0)) {}

  // The largest screened |delta| of a tile wholly inside the row's keys, from its extrema.
  float bound(const TileExtrema& e, std::size_t i0, std::size_t j0) const {
    float most = 0.0f;
    if (e.sink_hi >= e.sink_lo) most = std::max({most, e.sink_hi - sink_model_, sink_model_ - e.sink_lo});
    for (std::size_t s = 0; s < kSlots; ++s) {
      if (!(e.hi[s] >= e.lo[s])) continue;
      const float c = model_by_lag_[j0 + s - (kTile - 1) - i0];
      most = std::max({most, e.hi[s] - c, c - e.lo[s]});
    }
    return most;
  }

  // The screened |delta| of one pair, as screened_cosine_deviation computes it.
  float screened(const float* products, std::size_t a, std::size_t b, std::size_t i, std::size_t l) const {
    const float c = i == 0 ? sink_model_ : model_by_lag_[l - i];
    const float delta = (products[a * kTile + b] - c) * mask_[l];
    return delta < 0.0f ? -delta : delta;
  }

  // Calls f(a, b, i, l) for the defined pairs i < l < keys of tile (i0, j0).
  template <class F>
  void for_each_pair(std::size_t i0, std::size_t j0, const F& f) const {
    for (std::size_t a = 0; a < kTile && i0 + a < keys_; ++a) {
      const std::size_t i = i0 + a;
      if (!units_.defined[i]) continue;
      const std::size_t last = std::min(kTile, keys_ - j0);
      for (std::size_t b = j0 > i ? 0 : i + 1 - j0; b < last; ++b) {
        if (mask_[j0 + b] != 0.0f) f(a, b, i, j0 + b);
      }
    }
  }

  double exact(std::size_t i, std::size_t l) const {
    return exact_abs_deviation(units_, i, l, i == 0 ? rho_0_ : by_lag_[l - i]);
  }

  std::size_t keys() const { return keys_; }
  double margin() const { return margin_; }

 private:
  const UnitRows& units_;
  std::span<const float> mask_;
  std::size_t keys_;
  double margin_;
  double rho_0_;
  std::vector<double> by_lag_;       // [keys]
  std::vector<float> model_by_lag_;  // [keys] rounded as the one-row screen rounds it
  float sink_model_;
};

// A row whose maximum more than a few tiles and this share of them may hold screens its own
// prefix instead (with fp32 products where they crowd), rather than recompute them in double.
constexpr std::size_t kCandidateTileShare = 256;

// One row's exact maximum, or a negative number when too many tiles may hold it.
double row_maximum(const RowScreen& row, std::span<const TileExtrema> extrema, ThreadTiles& tiles) {
  const std::size_t keys = row.keys();
  const std::size_t blocks = (keys + kTile - 1) / kTile, full = keys / kTile;
  // [tiles of the prefix] the largest screened |delta| of each, by column as tile_index.
  std::vector<float> bound(tile_index(0, blocks), 0.0f);
  float screened_max = 0.0f;
  for (std::size_t bj = 0; bj < blocks; ++bj) {
    for (std::size_t bi = 0; bi <= bj; ++bi) {
      float& b = bound[tile_index(bi, bj)];
      if (bj < full) {
        b = row.bound(extrema[tile_index(bi, bj)], bi * kTile, bj * kTile);
      } else {  // the tiles the prefix cuts: their pairs one by one
        const float* p = tiles.tile(bi * kTile, bj * kTile);
        row.for_each_pair(bi * kTile, bj * kTile, [&](std::size_t a, std::size_t c, std::size_t i, std::size_t l) {
          b = std::max(b, row.screened(p, a, c, i, l));
        });
      }
      screened_max = std::max(screened_max, b);
    }
  }
  // The true maximum lies within margin of its screened value, which is within margin of the
  // screened maximum or above it.
  const double lower = static_cast<double>(screened_max) - row.margin();
  std::size_t candidates = 0;
  for (const float b : bound) candidates += static_cast<double>(b) + row.margin() >= lower;
  if (candidates > 8 + bound.size() / kCandidateTileShare) return -1.0;
  double maximum = 0.0;
  for (std::size_t bj = 0; bj < blocks; ++bj) {
    for (std::size_t bi = 0; bi <= bj; ++bi) {
      if (static_cast<double>(bound[tile_index(bi, bj)]) + row.margin() < lower) continue;
      const float* p = tiles.tile(bi * kTile, bj * kTile);
      row.for_each_pair(bi * kTile, bj * kTile, [&](std::size_t a, std::size_t c, std::size_t i, std::size_t l) {
        if (static_cast<double>(row.screened(p, a, c, i, l)) + row.margin() >= lower) {
          maximum = std::max(maximum, row.exact(i, l));
        }
      });
    }
  }
  return maximum;
}

}  // namespace

UnitRows prefix_units(const UnitRows& units, std::size_t keys) {
  ATTNGEOM_CHECK(keys <= units.keys());
  UnitRows out;
  out.dim = units.dim;
  out.values = units.values;
  out.inverse_norms.assign(units.inverse_norms.begin(),
                           units.inverse_norms.begin() + static_cast<std::ptrdiff_t>(keys));
  out.rounded.assign(units.rounded.begin(), units.rounded.begin() + static_cast<std::ptrdiff_t>(keys * units.dim));
  out.norms.assign(units.norms.begin(), units.norms.begin() + static_cast<std::ptrdiff_t>(keys));
  out.defined.assign(units.defined.begin(), units.defined.begin() + static_cast<std::ptrdiff_t>(keys));
  return out;
}

std::vector<double> prefix_max_deviations(const UnitRows& units, std::span<const std::size_t> keys,
                                          std::span<const CosineModel> models, const PairProducts& products) {
  ATTNGEOM_CHECK(keys.size() == models.size() && !keys.empty() && keys.back() == units.keys() &&
                 std::is_sorted(keys.begin(), keys.end()) && keys.front() >= 1);
  const std::size_t all = units.keys();
  std::vector<float> mask(all + kTile, 0.0f);  // [M + kTile] 1 where u_l is defined
  for (std::size_t l = 0; l < all; ++l) mask[l] = units.defined[l] ? 1.0f : 0.0f;
  ThreadTiles tiles(units, products);
  // Screened deltas also round the model cosine to float (u) and the difference (u, relative).
  const double margin = tiles.load()->error_bound() + 0x1p-22;

  // The extrema of every tile that some row holds whole.
  const std::size_t full = keys.back() / kTile;
  std::vector<TileExtrema> extrema(tile_index(0, full));
  parallel_for_each(extrema.size(), [&](std::size_t t) {
    std::size_t bj = 0;
    while (tile_index(0, bj + 1) <= t) ++bj;
    const std::size_t bi = t - tile_index(0, bj);
    extrema[t] = tile_extrema(tiles.tile(bi * kTile, bj * kTile), bi * kTile, bj * kTile, units, mask);
  });

  std::vector<double> maxima(keys.size());
  parallel_for_each(keys.size(), [&](std::size_t r) {
    const RowScreen row(units, mask, keys[r], models[r], margin);
    maxima[r] = row_maximum(row, extrema, tiles);
    if (maxima[r] < 0.0) {
      maxima[r] = screened_cosine_deviation(prefix_units(units, keys[r]), models[r], products).max_abs;
    }
  });
  return maxima;
}

}  // namespace attngeom::geometry
