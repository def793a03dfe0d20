#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/gemm.h"
#include "ops/pair_product_tiles.h"
#include "util/error.h"
#include "util/float_error.h"

namespace attngeom {
namespace {

constexpr std::size_t kTile = TileMatmul::kTile;
// bf16's smallest normal: AMX and AVX512-BF16 read smaller inputs as zero, so they are zeroed
// here, where the error they make is measured.
constexpr float kSmallestNormal = 0x1p-126f;

}  // namespace

bool Bf16Tiles::available(std::size_t) { return cpu_has_bf16_matmul(); }

Bf16Tiles::Bf16Tiles(const TileMatmul& product, std::span<const float> units, std::size_t count) : TileUnits(product) {
  ATTNGEOM_CHECK(units.size() == count * dim_);
  rounded_.assign((count + kTile - 1) / kTile * kTile * dim_, 0);  // [M rounded up to kTile, d]
  double max_error = 0.0;
  for (std::size_t k = 0; k < count; ++k) max_error = std::max(max_error, round_row(units.data() + k * dim_, k));
  // Each product of two bf16 is exact in fp32; the d - 1 fp32 additions, in whatever order
  // the kernel takes, err by gamma_d sum |p_it p_lt| <= gamma_d |p_i| |p_l|; results below
  // 2^-126 are flushed (the d products and d - 1 sums, 2^-126 each at most).
  const double relative = summation_error_factor(dim_, 0x1p-24);
  error_bound_ = screen_error_bound(max_error, relative, 2.0 * static_cast<double>(dim_) * 0x1p-126);
}

void Bf16Tiles::tile(std::size_t i0, std::size_t j0, float* out) {
  runner_.run(rounded_.data() + i0 * dim_, rounded_.data() + j0 * dim_, out);
}

// p_k = bf16(u_k), round to nearest even (units are finite: no NaN case); returns
// |u_k - p_k|. Each difference is exact in float (it has at most 16 significant bits).
double Bf16Tiles::round_row(const float* x, std::size_t k) {
  std::uint16_t* p = rounded_.data() + k * dim_;
  double error2 = 0.0;
#pragma omp simd reduction(+ : error2)
  for (std::size_t t = 0; t < dim_; ++t) {
    const auto bits = std::bit_cast<std::uint32_t>(x[t]);
    const std::uint32_t nearest = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    const std::uint32_t kept = std::abs(x[t]) < kSmallestNormal ? 0u : nearest;
    p[t] = static_cast<std::uint16_t>(kept >> 16);
    const double error = x[t] - std::bit_cast<float>(kept);
    error2 += error * error;
  }
  return std::sqrt(error2);
}

}  // namespace attngeom
