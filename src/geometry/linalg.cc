// Eigen's own OpenMP threading is off: the caller parallelises over rows and heads, and a
// hidden thread pool inside the GEMM would fight it for the same cores.
#define EIGEN_DONT_PARALLELIZE
#include "geometry/linalg.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>

#include "util/error.h"

namespace attngeom::geometry {
namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using MatrixMap = Eigen::Map<RowMatrix>;

}  // namespace

std::vector<double> gram_matrix(std::span<const double> rows, std::size_t count, std::size_t dim) {
  ATTNGEOM_CHECK(rows.size() == count * dim);
  std::vector<double> gram(count * count, 0.0);  // the rank update adds to it
  const ConstMatrixMap v(rows.data(), static_cast<Eigen::Index>(count), static_cast<Eigen::Index>(dim));
  MatrixMap g(gram.data(), static_cast<Eigen::Index>(count), static_cast<Eigen::Index>(count));
  g.selfadjointView<Eigen::Lower>().rankUpdate(v);
  // Mirror so that row i is the full column i: callers then read contiguous memory. Tiled, as
  // a transposed copy with a full-row stride misses the cache on every element.
  constexpr std::size_t kTile = 64;
  for (std::size_t i0 = 0; i0 < count; i0 += kTile) {
    for (std::size_t j0 = i0; j0 < count; j0 += kTile) {
      for (std::size_t i = i0; i < std::min(i0 + kTile, count); ++i) {
        for (std::size_t j = std::max(j0, i + 1); j < std::min(j0 + kTile, count); ++j) {
          gram[i * count + j] = gram[j * count + i];
        }
      }
    }
  }
  return gram;
}

bool psd_factor(std::span<const double> matrix, std::size_t n, double tolerance, std::span<double> factor) {
  ATTNGEOM_CHECK(matrix.size() == n * n && factor.size() == n * n);
  const auto size = static_cast<Eigen::Index>(n);
  const ConstMatrixMap a(matrix.data(), size, size);
  const Eigen::LDLT<Eigen::MatrixXd> ldlt(a);
  if (ldlt.info() != Eigen::Success) return false;
  const double scale = std::max(1.0, a.diagonal().cwiseAbs().maxCoeff());
  Eigen::VectorXd d = ldlt.vectorD();
  // Pivots of a PSD matrix are Schur-complement diagonals, so they lie in [0, max diagonal].
  // An indefinite one can instead pass a pivot through ~0 and blow the next ones up, leaving
  // only a rounding-sized negative (rho_0 = 0.2, L = 63: pivots -4e-15 and 2e14).
  if (!d.allFinite() || d.minCoeff() < -tolerance * scale || d.maxCoeff() > (1.0 + tolerance) * scale) return false;
  d = d.cwiseMax(0.0).cwiseSqrt();
  // matrix = P^T L D L^T P, so factor = P^T L D^(1/2).
  Eigen::MatrixXd lower = ldlt.matrixL();
  lower = lower * d.asDiagonal();
  MatrixMap out(factor.data(), size, size);
  out = ldlt.transpositionsP().transpose() * lower;
  return true;
}

void multiply(std::span<const double> a, std::span<const double> b, std::size_t rows, std::size_t inner,
              std::size_t cols, std::span<double> out) {
  ATTNGEOM_CHECK(a.size() == rows * inner && b.size() == inner * cols && out.size() == rows * cols);
  const ConstMatrixMap am(a.data(), static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(inner));
  const ConstMatrixMap bm(b.data(), static_cast<Eigen::Index>(inner), static_cast<Eigen::Index>(cols));
  MatrixMap cm(out.data(), static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  cm.noalias() = am * bm;
}

}  // namespace attngeom::geometry
