#pragma once
// Internal to the reconstructed bounds: the model side of docs/method.md section 4 at each N, by
// selection position. mu_k is the squared-distance formula applied to the model Gram
// nu_i nu_l c_il. Its projections sum_{i in I_N} alpha_i nu_i c_ik need no Gram: with
// a_i = alpha_i nu_i on I_N (0 elsewhere) and r = exp(-beta), the content part
// sum_{i>=1} a_i r^|i-k| is one forward and one backward first-order recursion over the keys,
// so each N costs O(M) however many keys joined. T_k and n_k follow from prefix sums.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/reconstructed_bounds.h"
#include "geometry/selection_order.h"

namespace attngeom::geometry {

class ModelSweep {
 public:
  explicit ModelSweep(const BoundInputs& inputs);  // InputError on inconsistent inputs

  // Grows I_N to n (n never decreasing) and refreshes mu, spread and support.
  void advance_to(std::size_t n);

  std::size_t keys() const { return alpha_.size(); }
  std::span<const double> mu() const { return mu_; }                 // [M] model D^2, clamped at 0
  std::span<const double> spread() const { return spread_; }         // [M] T_k
  std::span<const std::size_t> support() const { return support_; }  // [M] n_k
  // [M] allowance for rounding: mu and the measured D^2 are each sums of at most M + d
  // products no larger than (A + alpha_k nu_k)^2, so each is off by < (M + d) eps of that
  // (about 2e-12 at M = 8192, d = 256); 1e-9 of it covers both. Without it, exact ties
  // (eta = 0) fall on either side of a radius by rounding alone.
  std::span<const double> rounding() const { return rounding_; }

 private:
  CosineModel model_;
  SelectionOrder order_;
  std::vector<double> alpha_;            // [M] by position
  std::vector<double> norms_;            // [M] nu by position
  std::vector<double> sq_norms_;         // [M] nu^2 by position
  std::vector<double> weighted_by_key_;  // [M] a_k = alpha_k nu_k for k in I_N, else 0
  std::vector<double> forward_;          // [M] scratch: sum_{1<=i<=k} a_i r^(k-i)
  std::vector<double> backward_;         // [M] scratch: sum_{i>=k} a_i r^(i-k)
  std::vector<double> projection_;       // [M] <x_k, s_N> / nu_k by key
  std::size_t n_ = 0;
  double weighted_sum_ = 0.0;     // A = sum_{I_N} alpha_i nu_i
  double weighted_sq_sum_ = 0.0;  // Q = sum_{I_N} (alpha_i nu_i)^2
  std::size_t nonzero_ = 0;       // #{i in I_N : alpha_i != 0}
  std::vector<double> mu_;
  std::vector<double> spread_;
  std::vector<std::size_t> support_;
  std::vector<double> rounding_;
};

// Envelope of P, R, F from intervals [lo_p, hi_p] of every D_p^2 (by position; I_N = [0, n)).
EnvelopePoint envelope_from_intervals(std::size_t n, std::span<const double> lo, std::span<const double> hi);

}  // namespace attngeom::geometry
