#pragma once
// The second moment of a row's cosine deviations about the model without the M(M-1)/2
// pairwise cosines: sum over defined pairs i < l of (<u_i, u_l> - c_il)^2 in O(M d^2 + M d),
// so that the O(M^2 d) products of the deviation screen serve the maximum alone and may be
// as coarse as its error bound allows (pair_products.h).
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/cosine_model.h"
#include "geometry/value_diagnostics.h"

namespace attngeom::geometry {

// Keys per float block Gram: each of its sums is accurate to gamma_kGramBlock (deviation_sums.cc).
inline constexpr std::size_t kGramBlock = 256;

// With U the units rounded to float ([M, d], zero rows for zero vectors), r = exp(-beta):
//   sum cos^2 = (||U^T U||_F^2 - sum_k ||u_k||^4) / 2, the d x d Gram in float blocks of
//               kGramBlock keys, added up in double;
//   sum c cos = rho_0 <u_0, sum_{l>=1} u_l> + sum_{l>=2} <u_l, h_l>, h_l = r (h_{l-1} + u_{l-1});
//   sum c^2   = rho_0^2 (defined keys - 1) + the same recursion in r^2 on the defined flags
//               (the sink terms only when u_0 is defined);
// the last two in double. Accurate to (2 gamma + gamma^2) / 2 * sum_{i,l} <|u_i|, |u_l|>^2 with
// gamma = gamma_kGramBlock in float (about 1.5e-5), plus the cancellation of the three sums in
// double; never negative.
double deviation_square_sum(const UnitRows& units, const CosineModel& model);

// deviation_square_sum of many rows over one kv head's units, rows ending at ascending keys,
// each as its own row gives it, bit for bit: the double sum of the float block Grams of the
// full blocks that rows share, and the running sum of ||u_k||^4, are taken once for all rows
// (O(T d^2)); each row adds its last, partial block (O(kGramBlock d^2)) and its own model terms
// (O(M d)), instead of O(M d^2) each.
class SharedDeviationSquareSums {
 public:
  // units: the longest row's (kept by reference); keys: each row's M, ascending.
  SharedDeviationSquareSums(const UnitRows& units, std::span<const std::size_t> keys);
  // deviation_square_sum of row r (keys 0..keys[r] - 1) against `model`; any order, any thread.
  double of_row(std::size_t r, const CosineModel& model) const;

 private:
  const UnitRows& units_;
  std::vector<std::size_t> keys_;         // [rows]
  std::vector<double> fourth_powers_;     // [rows] sum_{k < M_r} ||u_k||^4
  std::vector<double> grams_;             // [grams, d, d] lower triangles, each the sum of the blocks before its end
  std::vector<std::size_t> gram_ends_;    // [grams] the keys each holds, a multiple of kGramBlock
  std::vector<std::size_t> gram_of_row_;  // [rows] the gram of the row's full blocks
};

}  // namespace attngeom::geometry
