#pragma once
// Approximate inner products of a row's unit vectors, one tile at a time: the O(M^2 d) part of
// the maximum cosine deviation (cosine_model.h), behind a seam so that analyze can run it in
// bf16 or int8 through oneDNN (ops/pair_product_tiles.h) while the default stays fp32
// (Eigen). The products only screen: error_bound() says how far they may be off, and
// screened_cosine_deviation recomputes in double every pair that could hold the maximum, so
// the maximum is exact whatever the kernel.
#include <cstddef>
#include <memory>
#include <span>

namespace attngeom::geometry {

// One row's unit vectors, loaded in the kernel's format.
class LoadedUnits {
 public:
  static constexpr std::size_t kTile = 256;
  virtual ~LoadedUnits() = default;
  // out[a * kTile + b] ~ <u_{i0 + a}, u_{j0 + b}>, a, b < kTile; rows past M read as zero.
  // Callers ask for j0 >= i0 only; on a diagonal tile (j0 = i0) only b > a is read, and the
  // entries below the diagonal may hold anything.
  virtual void tile(std::size_t i0, std::size_t j0, float* out) = 0;
  // Bound on |tile entry - <u_i, u_l>| (exact, of the unrounded unit vectors) for these units.
  virtual double error_bound() const = 0;
};

class PairProducts {
 public:
  virtual ~PairProducts() = default;
  // units: [count, dim] vectors of norm 1 or 0, rounded to float (UnitRows::rounded); the
  // kernel rounds them on to its own format. Safe to call concurrently.
  virtual std::unique_ptr<LoadedUnits> load(std::span<const float> units, std::size_t count, std::size_t dim) const = 0;
};

// fp32 products (Eigen): inputs rounded to float, any summation order.
const PairProducts& fp32_pair_products();
// Their error bound at this d: also that of every float product of two rounded unit vectors.
double fp32_product_error_bound(std::size_t dim);

}  // namespace attngeom::geometry
