#include "geometry/deviation_maxima.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "geometry/lag_walk_step.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

constexpr std::size_t kTile = LoadedUnits::kTile;
constexpr std::size_t kMaxParts = 64;

// The diagonals of tiles (l's block less i's block) of part `part`, ascending: pairs of a long
// and a short diagonal, so that the parts' tile counts differ by at most one diagonal's.
std::vector<std::size_t> diagonals_of(std::size_t part, std::size_t parts, std::size_t blocks) {
  std::vector<std::size_t> out;
  for (std::size_t q = part; 2 * q < blocks; q += parts) {
    out.push_back(q);
    if (blocks - 1 - q != q) out.push_back(blocks - 1 - q);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The lags [first, last) that the tiles of these diagonals hold, overlapping ranges merged.
std::vector<std::pair<std::size_t, std::size_t>> lags_of(std::span<const std::size_t> diagonals, std::size_t keys) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const std::size_t k : diagonals) {
    const std::size_t first = k == 0 ? 1 : k * kTile - kTile + 1;
    const std::size_t last = std::min(keys, k * kTile + kTile);
    if (first >= last) continue;
    if (!out.empty() && first <= out.back().second) {
      out.back().second = std::max(out.back().second, last);
    } else {
      out.emplace_back(first, last);
    }
  }
  return out;
}

// One part's screen: running extrema by lag of its pairs' screened cosines, walked in order of
// the later key, and the exact extrema of the pairs it recomputes. Lag 0 holds the sink's pairs.
class PartWalk {
 public:
  PartWalk(const UnitRows& units, std::span<const float> key_mask, float margin, std::span<const std::size_t> diagonals)
      : units_(units),
        key_mask_(key_mask),
        margin_(margin),
        high_(units.keys(), -std::numeric_limits<float>::infinity()),
        low_(units.keys(), std::numeric_limits<float>::infinity()),
        exact_(units.keys()),
        lags_(lags_of(diagonals, units.keys())) {}

  // The pairs (i0 + a, l) of a tile (tile[a * kTile + l - j0]) with c0 <= l < c1, by ascending
  // i: for one lag, ascending l, as the running extrema need.
  void screen(const float* tile, std::size_t i0, std::size_t j0, std::size_t c0, std::size_t c1) {
    for (std::size_t a = 0; a < kTile && i0 + a + 1 < c1; ++a) {
      const std::size_t i = i0 + a;
      if (!units_.defined[i]) continue;
      const std::size_t first = std::max(c0, i + 1);
      if (i == 0) {
        screen_sink(tile, j0, first, c1);
      } else {
        screen_content(tile + a * kTile + (first - j0), i, first, c1);
      }
    }
  }

  // max |delta| over the pairs walked so far, against a row's model.
  double maximum(const CosineModel& model) const {
    double out = exact_[0].widest(model.rho_0);
    for (const auto& [first, last] : lags_) {
      for (std::size_t tau = first; tau < last; ++tau) {
        if (exact_[tau].seen()) {
          out = std::max(out, exact_[tau].widest(lag_model_cosine(static_cast<int>(tau), model.beta, 0.0)));
        }
      }
    }
    return out;
  }

 private:
  // Pairs (i, l), first <= l < c1, i >= 1: lag l - i, contiguous in l. screened[l - first].
  void screen_content(const float* screened, std::size_t i, std::size_t first, std::size_t c1) {
    const std::size_t count = c1 - first;
    const float* mask = key_mask_.data() + first;
    float* high = high_.data() + (first - i);
    float* low = low_.data() + (first - i);
    const float margin = margin_;
    unsigned char near[kTile];
    std::size_t any = 0;
    for (std::size_t k = 0; k < count; ++k) {
      const float c = screened[k] + mask[k];  // NaN where u_l is zero: every comparison fails
      const float h = c > high[k] ? c : high[k];
      const float w = c < low[k] ? c : low[k];
      high[k] = h;
      low[k] = w;
      near[k] = static_cast<unsigned char>((c >= h - margin) | (c <= w + margin));
      any += near[k];
    }
    for (std::size_t k = 0; any > 0 && k < count; ++k) {
      if (near[k]) exact_[first + k - i].add(unit_pair_cosine(units_, i, first + k));
    }
  }

  void screen_sink(const float* tile, std::size_t j0, std::size_t first, std::size_t c1) {
    for (std::size_t l = first; l < c1; ++l) {
      const float c = tile[l - j0] + key_mask_[l];
      high_[0] = c > high_[0] ? c : high_[0];
      low_[0] = c < low_[0] ? c : low_[0];
      if (c >= high_[0] - margin_ || c <= low_[0] + margin_) exact_[0].add(unit_pair_cosine(units_, 0, l));
    }
  }

  const UnitRows& units_;
  std::span<const float> key_mask_;  // [T] 0 where u_l is defined, NaN where not
  float margin_;
  std::vector<float> high_, low_;                          // [T] screened running extrema by lag
  std::vector<LagExtrema> exact_;                          // [T] extrema of the recomputed pairs by lag
  std::vector<std::pair<std::size_t, std::size_t>> lags_;  // the lags of the part's tiles
};

}  // namespace

DeviationMaxima::DeviationMaxima(const UnitRows& units, std::span<const std::size_t> keys, const PairProducts& products)
    : units_(units),
      keys_(keys.begin(), keys.end()),
      products_(products),
      blocks_((units.keys() + kTile - 1) / kTile),
      parts_(std::clamp<std::size_t>((blocks_ + 1) / 2, 1, kMaxParts)),
      key_mask_(units.keys()),
      partial_(parts_ * keys.size(), 0.0) {
  ATTNGEOM_CHECK(!keys_.empty() && std::is_sorted(keys_.begin(), keys_.end()) && keys_.front() >= 1 &&
                 keys_.back() == units.keys());
  idle_.push_back(products.load(units.rounded, units.keys(), units.dim));
  // A screened cosine is within the bound of unit_pair_cosine's (to a few ulps); 2^-22 more
  // covers the float threshold's rounding.
  margin_ = static_cast<float>(2.0 * (idle_.back()->error_bound() + 0x1p-22));
  for (std::size_t k = 0; k < units.keys(); ++k) {
    key_mask_[k] = units.defined[k] ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  }
}

std::unique_ptr<LoadedUnits> DeviationMaxima::take_loaded() {
  {
    const std::lock_guard<std::mutex> lock(idle_mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<LoadedUnits> loaded = std::move(idle_.back());
      idle_.pop_back();
      return loaded;
    }
  }
  return products_.load(units_.rounded, units_.keys(), units_.dim);
}

void DeviationMaxima::put_back(std::unique_ptr<LoadedUnits> loaded) {
  const std::lock_guard<std::mutex> lock(idle_mutex_);
  idle_.push_back(std::move(loaded));
}

void DeviationMaxima::compute(std::size_t part, std::span<const CosineModel> models) {
  ATTNGEOM_CHECK(part < parts_ && models.size() == keys_.size());
  const std::size_t keys = units_.keys();
  const std::vector<std::size_t> diagonals = diagonals_of(part, parts_, blocks_);
  std::unique_ptr<LoadedUnits> loaded = take_loaded();
  PartWalk walk(units_, key_mask_, margin_, diagonals);
  std::vector<float> tiles(diagonals.size() * kTile * kTile);  // [diagonals, kTile, kTile] of one block of l
  std::vector<std::size_t> tile_rows;                          // their i0, ascending
  double* row_maximum = partial_.data() + part * keys_.size();
  std::size_t r = 0;
  for (std::size_t b = 0; b < blocks_; ++b) {
    const std::size_t j0 = b * kTile;
    tile_rows.clear();
    for (auto k = diagonals.rbegin(); k != diagonals.rend(); ++k) {
      if (*k > b) continue;
      const std::size_t i0 = (b - *k) * kTile;
      loaded->tile(i0, j0, tiles.data() + tile_rows.size() * kTile * kTile);
      tile_rows.push_back(i0);
    }
    const std::size_t end = std::min(j0 + kTile, keys);
    for (std::size_t c0 = j0; c0 < end;) {
      // Up to the next row's last key, so that each row is read once all its pairs are walked.
      const std::size_t c1 = std::min(end, keys_[r]);
      for (std::size_t t = 0; t < tile_rows.size(); ++t) {
        walk.screen(tiles.data() + t * kTile * kTile, tile_rows[t], j0, c0, c1);
      }
      for (; r < keys_.size() && keys_[r] <= c1; ++r) row_maximum[r] = walk.maximum(models[r]);
      c0 = c1;
    }
  }
  put_back(std::move(loaded));
}

std::vector<double> DeviationMaxima::maxima() const {
  std::vector<double> out(keys_.size(), 0.0);
  for (std::size_t p = 0; p < parts_; ++p) {
    for (std::size_t r = 0; r < keys_.size(); ++r) out[r] = std::max(out[r], partial_[p * keys_.size() + r]);
  }
  return out;
}

}  // namespace attngeom::geometry
