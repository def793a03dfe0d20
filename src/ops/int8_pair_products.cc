#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/pair_product_tiles.h"
#include "util/error.h"

namespace attngeom {
namespace {

constexpr std::size_t kTile = TileMatmul::kTile;
constexpr std::int32_t kShift = 128;  // u8 = q + 128 holds q in [-127, 127]
constexpr float kLevels = 127.0f;
// Every |<q_i, q_l>| <= d 127^2 must convert to float exactly (< 2^24).
constexpr std::size_t kMaxDim = (std::size_t{1} << 24) / (127 * 127);

bool cpu_has_int8_dot() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto has = [isa](dnnl::cpu_isa feature) {
    return (isa & static_cast<unsigned>(feature)) == static_cast<unsigned>(feature);
  };
  return has(dnnl::cpu_isa::avx512_core_vnni) || has(dnnl::cpu_isa::avx2_vnni);
}

}  // namespace

bool Int8Tiles::available(std::size_t dim) { return cpu_has_int8_dot() && dim <= kMaxDim; }

Int8Tiles::Int8Tiles(const TileMatmul& product, std::span<const float> units, std::size_t count) : TileUnits(product) {
  ATTNGEOM_CHECK(units.size() == count * dim_);
  const std::size_t padded = (count + kTile - 1) / kTile * kTile;
  shifted_.assign(padded * dim_, static_cast<std::uint8_t>(kShift));
  quantised_.assign(padded * dim_, 0);
  scales_.assign(padded, 0.0f);
  shifts_.assign(padded, 0);
  dots_.resize(kTile * kTile);
  levels_.resize(dim_);
  double max_error = 0.0;
  for (std::size_t k = 0; k < count; ++k) max_error = std::max(max_error, quantise(units.subspan(k * dim_, dim_), k));
  // p_k = s_k q_k; float(<q_i, q_l>) * (s_i * s_l) is two float roundings of <p_i, p_l>.
  error_bound_ = screen_error_bound(max_error, kTwoFloatRoundings, 0.0);
}

void Int8Tiles::tile(std::size_t i0, std::size_t j0, float* out) {
  runner_.run(shifted_.data() + i0 * dim_, quantised_.data() + j0 * dim_, dots_.data());
  // [kTile, kTile] <q_i + 128, q_l> - 128 sum_t q_lt = <q_i, q_l>, exact in int32 and in float.
  const float* column_scales = scales_.data() + j0;
  const std::int32_t* column_shifts = shifts_.data() + j0;
  for (std::size_t r = 0; r < kTile; ++r) {
    const float row_scale = scales_[i0 + r];
    const std::int32_t* dots = dots_.data() + r * kTile;
    float* row = out + r * kTile;
    for (std::size_t b = 0; b < kTile; ++b) {
      row[b] = static_cast<float>(dots[b] - column_shifts[b]) * (row_scale * column_scales[b]);
    }
  }
}

// q_k = round(u_k / s_k) with s_k = max_t |u_kt| / 127 (through its float reciprocal: the
// bound reads the q_k made); a zero vector stays zero (s_k = 0). Returns |u_k - s_k q_k|.
// Float, int and double work in separate loops, each of which vectorises.
double Int8Tiles::quantise(std::span<const float> unit, std::size_t k) {
  const float* x = unit.data();
  float largest = 0.0f;
#pragma omp simd reduction(max : largest)
  for (std::size_t t = 0; t < dim_; ++t) largest = std::max(largest, std::abs(x[t]));
  if (largest == 0.0f) return 0.0;
  const float scale = largest / kLevels;
  const float inverse = kLevels / largest;
  scales_[k] = scale;
  float* levels = levels_.data();
  std::int8_t* quantised = quantised_.data() + k * dim_;
  std::uint8_t* shifted = shifted_.data() + k * dim_;
  std::int32_t sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::size_t t = 0; t < dim_; ++t) {
    levels[t] = std::clamp(std::nearbyint(x[t] * inverse), -kLevels, kLevels);
    const auto level = static_cast<std::int32_t>(levels[t]);
    quantised[t] = static_cast<std::int8_t>(level);
    shifted[t] = static_cast<std::uint8_t>(level + kShift);
    sum += level;
  }
  shifts_[k] = kShift * sum;
  double error2 = 0.0;
#pragma omp simd reduction(+ : error2)
  for (std::size_t t = 0; t < dim_; ++t) {
    const double error = x[t] - static_cast<double>(scale) * levels[t];  // the product is exact: 24 x 8 bits
    error2 += error * error;
  }
  return std::sqrt(error2);
}

}  // namespace attngeom
