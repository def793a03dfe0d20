#define EIGEN_DONT_PARALLELIZE  // threads are the caller's (see linalg.cc)
#include "geometry/deviation_sums.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "util/error.h"

namespace attngeom::geometry {
namespace {

using FloatRows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using GramMap = Eigen::Map<Eigen::MatrixXd>;  // [d, d], lower triangle

// Adds to gram the float block Grams of keys [begin, end) (begin a multiple of kGramBlock),
// block by block in double.
void add_block_grams(const UnitRows& units, std::size_t begin, std::size_t end, GramMap gram) {
  const auto dim = static_cast<Eigen::Index>(units.dim);
  const Eigen::Map<const FloatRows> rows(units.rounded.data(), static_cast<Eigen::Index>(end), dim);  // [end, d]
  Eigen::MatrixXf block_gram(dim, dim);                                                               // [d, d]
  constexpr auto kBlock = static_cast<Eigen::Index>(kGramBlock);
  for (auto k0 = static_cast<Eigen::Index>(begin); k0 < static_cast<Eigen::Index>(end); k0 += kBlock) {
    block_gram.setZero();
    block_gram.selfadjointView<Eigen::Lower>().rankUpdate(
        rows.middleRows(k0, std::min(kBlock, static_cast<Eigen::Index>(end) - k0)).transpose());
    gram.triangularView<Eigen::Lower>() += block_gram.cast<double>();
  }
}

// sum_{i,l} <u_i, u_l>^2 = ||U^T U||_F^2 over all ordered pairs, the diagonal included, from the
// lower triangle of U^T U.
double squared_frobenius(const GramMap& gram) {
  double diagonal = 0.0, below = 0.0;
  for (Eigen::Index j = 0; j < gram.cols(); ++j) {
    diagonal += gram(j, j) * gram(j, j);
    for (Eigen::Index k = j + 1; k < gram.rows(); ++k) below += gram(k, j) * gram(k, j);
  }
  return diagonal + 2.0 * below;
}

// ||u_k||^4 of key k in double.
double fourth_power(const UnitRows& units, std::size_t k) {
  const float* u = units.rounded_unit(k);
  double norm2 = 0.0;
#pragma omp simd reduction(+ : norm2)
  for (std::size_t t = 0; t < units.dim; ++t) norm2 += static_cast<double>(u[t]) * u[t];
  return norm2 * norm2;
}

// sum c cos and sum c^2 over the defined pairs of keys 0..keys-1, c the model's cosines.
struct ModelTerms {
  double cosine_products = 0.0;
  double squares = 0.0;
};

ModelTerms model_terms(const UnitRows& units, std::size_t keys, const CosineModel& model) {
  const std::size_t dim = units.dim;
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
  return {model_cosine_products, model_squares};
}

// sum (cos - c)^2 = sum cos^2 - 2 sum c cos + sum c^2, never negative.
double square_sum_of(double all_pairs, double fourth_powers, const ModelTerms& model) {
  const double cosine_squares = (all_pairs - fourth_powers) / 2.0;
  return std::max(0.0, cosine_squares - 2.0 * model.cosine_products + model.squares);
}

std::size_t full_blocks(std::size_t keys) { return keys / kGramBlock * kGramBlock; }

}  // namespace

double deviation_square_sum(const UnitRows& units, const CosineModel& model) {
  const std::size_t keys = units.keys();
  if (keys < 2) return 0.0;
  double fourth_powers = 0.0;  // sum_k ||u_k||^4
  for (std::size_t k = 0; k < keys; ++k) fourth_powers += fourth_power(units, k);
  std::vector<double> gram(units.dim * units.dim, 0.0);
  const GramMap map(gram.data(), static_cast<Eigen::Index>(units.dim), static_cast<Eigen::Index>(units.dim));
  add_block_grams(units, 0, keys, map);
  return square_sum_of(squared_frobenius(map), fourth_powers, model_terms(units, keys, model));
}

SharedDeviationSquareSums::SharedDeviationSquareSums(const UnitRows& units, std::span<const std::size_t> keys)
    : units_(units), keys_(keys.begin(), keys.end()) {
  ATTNGEOM_CHECK(!keys_.empty() && std::is_sorted(keys_.begin(), keys_.end()) && keys_.back() <= units.keys());
  const std::size_t square = units.dim * units.dim;
  std::vector<double> gram(square, 0.0);  // [d, d] the full blocks so far
  const GramMap map(gram.data(), static_cast<Eigen::Index>(units.dim), static_cast<Eigen::Index>(units.dim));
  std::size_t summed = 0;  // keys in gram, and in fourth
  double fourth = 0.0;
  for (const std::size_t m : keys_) {
    for (; summed < m; ++summed) fourth += fourth_power(units, summed);
    fourth_powers_.push_back(fourth);
    const std::size_t blocks_end = full_blocks(m);
    if (grams_.empty() || blocks_end != gram_ends_.back()) {
      add_block_grams(units, gram_ends_.empty() ? 0 : gram_ends_.back(), blocks_end, map);
      grams_.insert(grams_.end(), gram.begin(), gram.end());
      gram_ends_.push_back(blocks_end);
    }
    gram_of_row_.push_back(gram_ends_.size() - 1);
  }
}

double SharedDeviationSquareSums::of_row(std::size_t r, const CosineModel& model) const {
  const std::size_t keys = keys_[r];
  if (keys < 2) return 0.0;
  const std::size_t square = units_.dim * units_.dim;
  const std::size_t at = gram_of_row_[r];
  std::vector<double> gram(grams_.begin() + static_cast<std::ptrdiff_t>(at * square),
                           grams_.begin() + static_cast<std::ptrdiff_t>((at + 1) * square));
  const GramMap map(gram.data(), static_cast<Eigen::Index>(units_.dim), static_cast<Eigen::Index>(units_.dim));
  add_block_grams(units_, gram_ends_[at], keys, map);  // the row's last, partial block
  return square_sum_of(squared_frobenius(map), fourth_powers_[r], model_terms(units_, keys, model));
}

}  // namespace attngeom::geometry
