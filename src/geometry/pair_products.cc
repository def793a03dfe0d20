#define EIGEN_DONT_PARALLELIZE  // threads are the caller's (see linalg.cc)
#include "geometry/pair_products.h"

#include <Eigen/Core>
#include <vector>

#include "util/error.h"
#include "util/float_error.h"

namespace attngeom::geometry {
namespace {

using FloatRows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

class Fp32Units final : public LoadedUnits {
 public:
  Fp32Units(std::span<const float> units, std::size_t count, std::size_t dim)
      : rows_(FloatRows::Zero(static_cast<Eigen::Index>((count + kTile - 1) / kTile * kTile),
                              static_cast<Eigen::Index>(dim))) {
    ATTNGEOM_CHECK(units.size() == count * dim);
    std::copy(units.begin(), units.end(), rows_.data());
  }

  void tile(std::size_t i0, std::size_t j0, float* out) override {
    constexpr auto t = static_cast<Eigen::Index>(kTile);
    Eigen::Map<FloatRows> result(out, t, t);
    const auto rows = rows_.middleRows(static_cast<Eigen::Index>(i0), t);
    if (i0 == j0) {
      // A diagonal tile is symmetric and only its upper triangle is read: a rank update (SYRK)
      // fills just that, at about two thirds of the full product's time.
      result.triangularView<Eigen::Upper>().setZero();
      result.selfadjointView<Eigen::Upper>().rankUpdate(rows);
      return;
    }
    result.noalias() = rows * rows_.middleRows(static_cast<Eigen::Index>(j0), t).transpose();
  }

  double error_bound() const override { return fp32_product_error_bound(static_cast<std::size_t>(rows_.cols())); }

 private:
  FloatRows rows_;  // [M rounded up to kTile, d], zero padded
};

class Fp32PairProducts final : public PairProducts {
 public:
  std::unique_ptr<LoadedUnits> load(std::span<const float> units, std::size_t count, std::size_t dim) const override {
    return std::make_unique<Fp32Units>(units, count, dim);
  }
};

}  // namespace

// Rounding each input to float moves each product by at most 2u + u^2 of |u_it u_lt|, the sum
// adds gamma_d; both scale sum_t |u_it u_lt| <= 1 (Cauchy-Schwarz on unit vectors).
double fp32_product_error_bound(std::size_t dim) {
  constexpr double u = 0x1p-24;
  return 2.0 * u + u * u + summation_error_factor(dim, u) * (1.0 + u) * (1.0 + u);
}

const PairProducts& fp32_pair_products() {
  static const Fp32PairProducts products;
  return products;
}

}  // namespace attngeom::geometry
