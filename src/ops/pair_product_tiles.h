#pragma once
// The cosine-deviation screens of analyze (geometry/pair_products.h, whose interface
// analysis/screen_products.h adapts these to): the products of a row's unit vectors through
// oneDNN matmul, in a format coarser than fp32 and faster. The screen only picks the pairs
// that may hold the maximum deviation, which are recomputed in double, so nothing analyze
// writes depends on the kernel (sigma2 does not read the products at all).
//   int8: each vector quantised with its own scale, products exact in int32 (VNNI or AMX),
//         then rescaled; an outlying coordinate coarsens its vector's whole grid.
//   bf16: each coordinate rounded to bf16, products accumulated in fp32 straight into the
//         tile (AMX); relative per coordinate, so outliers cost nothing.
// Each loads one row's units ([count, d] floats of norm 1 or 0) in its format; tile(i0, j0,
// out) then writes out[a * kTile + b] ~ <u_{i0 + a}, u_{j0 + b}>, within error_bound() of the
// exact products.
#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <vector>

#include "ops/tile_matmul.h"

namespace attngeom {

// The formats a kernel's tile product reads and writes.
struct TileFormat {
  const char* name;
  dnnl::memory::data_type left, right, out;
};

// What both kernels hold: the row's product runner and the bound on its tiles' error.
class TileUnits {
 public:
  double error_bound() const { return error_bound_; }

 protected:
  explicit TileUnits(const TileMatmul& product) : runner_(product), dim_(product.dim()) {}

  TileMatmul::Runner runner_;
  std::size_t dim_;
  double error_bound_ = 0.0;
};

class Int8Tiles : public TileUnits {
 public:
  static constexpr TileFormat kFormat{"int8", dnnl::memory::data_type::u8, dnnl::memory::data_type::s8,
                                      dnnl::memory::data_type::s32};
  // False where the CPU has no int8 dot-product instructions (VNNI): oneDNN's fallback there
  // sums pairs of u8 x s8 products in saturating int16, which would break the error bound;
  // false too for d > 1040, where an int32 product of two int8 vectors may no longer convert
  // to float exactly.
  static bool available(std::size_t dim);

  Int8Tiles(const TileMatmul& product, std::span<const float> units, std::size_t count);
  void tile(std::size_t i0, std::size_t j0, float* out);

 private:
  double quantise(std::span<const float> unit, std::size_t k);

  std::vector<std::uint8_t> shifted_;   // [M rounded up to kTile, d] q + 128, padding q = 0
  std::vector<std::int8_t> quantised_;  // [M rounded up to kTile, d] q
  std::vector<float> scales_;           // [M rounded up to kTile] s_k
  std::vector<std::int32_t> shifts_;    // [M rounded up to kTile] 128 sum_t q_kt
  std::vector<std::int32_t> dots_;      // [kTile, kTile] the last tile's <q_i + 128, q_l>
  std::vector<float> levels_;           // [d] the key being quantised
};

class Bf16Tiles : public TileUnits {
 public:
  static constexpr TileFormat kFormat{"bf16", dnnl::memory::data_type::bf16, dnnl::memory::data_type::bf16,
                                      dnnl::memory::data_type::f32};
  // False where oneDNN has no bf16 matmul on this CPU. The bound holds for any of its kernels
  // (AMX, AVX512-BF16 or emulated): products of two bf16 are exact in fp32, sums round in fp32.
  static bool available(std::size_t dim);

  Bf16Tiles(const TileMatmul& product, std::span<const float> units, std::size_t count);
  void tile(std::size_t i0, std::size_t j0, float* out);

 private:
  double round_row(const float* x, std::size_t k);

  std::vector<std::uint16_t> rounded_;  // [M rounded up to kTile, d] bf16 bits, padding zero
};

}  // namespace attngeom
