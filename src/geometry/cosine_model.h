#pragma once
// The cosine model of docs/method.md section 4 and how far a row's measured cosines stray from it.
//   c_ii = 1; c_0l = rho_0 (sink with content); c_il = exp(-beta |i - l|) between content keys.
// beta = +infinity stands for independent content directions (c_il = 0 for i != l).
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/head_row.h"
#include "geometry/pair_products.h"
#include "geometry/selection_metrics.h"
#include "geometry/value_diagnostics.h"

namespace attngeom::geometry {

struct CosineModel {
  double beta = 0.0;
  double rho_0 = 0.0;

  double cosine(std::size_t i, std::size_t l) const;
  // [M] exp(-beta tau) for tau = 0..M-1: content cosines by lag, one exp each.
  std::vector<double> content_cosine_by_lag(std::size_t keys) const;
  // [M] model cosines of key l with every key, from that table.
  void column(std::size_t l, std::span<const double> by_lag, std::span<double> out) const;
};

// delta_il = <u_i, u_l> - c_il over the pairs i < l whose vectors are both non-zero (a zero
// vector has no direction, and its weight alpha_k ||v_k|| = 0 keeps it out of every bound).
struct CosineDeviation {
  double max_abs = 0.0;  // eta for R1: max |delta|
  double sigma2 = 0.0;   // A4's variance proxy estimate d * mean(delta^2), for R2
  std::size_t pairs = 0;
};
// gram: the row's Gram matrix (row_gram), so all M(M-1)/2 cosines cost O(M^2).
CosineDeviation cosine_deviation(const HeadRowView& row, const RowGram& gram, const CosineModel& model);

// The pairs and sigma2 of screened_cosine_deviation, without the maximum (left 0).
CosineDeviation deviation_spread(const UnitRows& units, const CosineModel& model);
// The same from the count of defined keys and square_sum(), the sum of delta^2 over their
// pairs (deviation_sums.h), called only where there is a pair.
template <class SquareSum>
CosineDeviation deviation_spread(std::size_t defined, std::size_t dim, SquareSum square_sum) {
  CosineDeviation out;
  out.pairs = defined * (defined - (defined > 0)) / 2;
  if (out.pairs > 0) out.sigma2 = static_cast<double>(dim) * square_sum() / static_cast<double>(out.pairs);
  return out;
}

// The cosine of keys i < l in double from the row's values and inverse norms, as the screen
// below recomputes each candidate: products of two floats are exact in double, so this is the
// cosine to a few ulps.
double unit_pair_cosine(const UnitRows& units, std::size_t i, std::size_t l);

// The same without a double Gram. max_abs: every pair's cosine comes from `products` tile by
// tile (O(M^2 d) at the kernel's speed, O(kTile^2) memory), and each pair whose screened
// |delta| comes within twice the loaded units' error bound of the screened maximum is
// recomputed in double from the unit vectors; the true maximum is always among them, so
// max_abs is exact whatever the kernel. sigma2 does not read the products at all: it is
// d * deviation_square_sum / pairs (deviation_sums.h), the same for every kernel.
CosineDeviation screened_cosine_deviation(const UnitRows& units, const CosineModel& model,
                                          const PairProducts& products);
// The same with its pairs and sigma2 given (deviation_spread of these units and model).
CosineDeviation screened_cosine_deviation(const UnitRows& units, const CosineModel& model, const PairProducts& products,
                                          const CosineDeviation& spread);

}  // namespace attngeom::geometry
