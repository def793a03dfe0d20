#define EIGEN_DONT_PARALLELIZE  // threads are the caller's (see linalg.cc)
#include "geometry/deviation_sums.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

namespace attngeom::geometry {
namespace {

using FloatRows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// sum_{i,l} <u_i, u_l>^2 = ||U^T U||_F^2 over all ordered pairs, the diagonal included.
double squared_cosines_all_pairs(const UnitRows& units) {
  const auto keys = static_cast<Eigen::Index>(units.keys());
  const auto dim = static_cast<Eigen::Index>(units.dim);
  const Eigen::Map<const FloatRows> rows(units.rounded.data(), keys, dim);  // [M, d]
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(dim, dim);                   // [d, d], lower triangle
  Eigen::MatrixXf block_gram(dim, dim);                                     // [d, d]
  constexpr auto kBlock = static_cast<Eigen::Index>(kGramBlock);
  for (Eigen::Index k0 = 0; k0 < keys; k0 += kBlock) {
    block_gram.setZero();
    block_gram.selfadjointView<Eigen::Lower>().rankUpdate(rows.middleRows(k0, std::min(kBlock, keys - k0)).transpose());
    gram.triangularView<Eigen::Lower>() += block_gram.cast<double>();
  }
  double diagonal = 0.0, below = 0.0;
  for (Eigen::Index j = 0; j < dim; ++j) {
    diagonal += gram(j, j) * gram(j, j);
    for (Eigen::Index k = j + 1; k < dim; ++k) below += gram(k, j) * gram(k, j);
  }
  return diagonal + 2.0 * below;
}

}  // namespace

double deviation_square_sum(const UnitRows& units, const CosineModel& model) {
  const std::size_t keys = units.keys();
  const std::size_t dim = units.dim;
  if (keys < 2) return 0.0;

  double fourth_powers = 0.0;  // sum_k ||u_k||^4
  for (std::size_t k = 0; k < keys; ++k) {
    const float* u = units.rounded_unit(k);
    double norm2 = 0.0;
#pragma omp simd reduction(+ : norm2)
    for (std::size_t t = 0; t < dim; ++t) norm2 += static_cast<double>(u[t]) * u[t];
    fourth_powers += norm2 * norm2;
  }
  const double cosine_squares = (squared_cosines_all_pairs(units) - fourth_powers) / 2.0;

  // Content pairs 1 <= i < l: h = sum_{1 <= i < l} r^(l - i) u_i and g = sum r^(2 (l - i)) over
  // the defined i, both carried from l - 1 to l.
  const double r = std::exp(-model.beta);              // 0 for beta = +inf
  std::vector<double> h(dim, 0.0), sum_all(dim, 0.0);  // [d] each
  double* carried = h.data();
  double* content_sum = sum_all.data();
  double g = 0.0, model_cosine_products = 0.0, model_squares = 0.0;
  std::size_t defined = units.defined[0];
  for (std::size_t l = 1; l < keys; ++l) {
    const float* u = units.rounded_unit(l);
    if (l >= 2) {
      const float* previous = units.rounded_unit(l - 1);
#pragma omp simd
      for (std::size_t t = 0; t < dim; ++t) carried[t] = r * (carried[t] + previous[t]);
      g = r * r * (g + units.defined[l - 1]);
    }
    double dot = 0.0;
#pragma omp simd reduction(+ : dot)
    for (std::size_t t = 0; t < dim; ++t) {
      dot += u[t] * carried[t];
      content_sum[t] += u[t];
    }
    model_cosine_products += dot;
    if (units.defined[l]) {
      model_squares += g;
      ++defined;
    }
  }
  if (units.defined[0]) {
    const float* sink = units.rounded_unit(0);
    double sink_dot = 0.0;
#pragma omp simd reduction(+ : sink_dot)
    for (std::size_t t = 0; t < dim; ++t) sink_dot += sink[t] * content_sum[t];
    model_cosine_products += model.rho_0 * sink_dot;
    model_squares += model.rho_0 * model.rho_0 * static_cast<double>(defined - 1);
  }
  return std::max(0.0, cosine_squares - 2.0 * model_cosine_products + model_squares);
}

}  // namespace attngeom::geometry
