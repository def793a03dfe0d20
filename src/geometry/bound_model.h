#pragma once
// Internal to the reconstructed bounds: the model side of docs/method.md section 4 at each N, by
// selection position, on the CPU: the memory around advance_model (envelope_step.h).
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/envelope_step.h"
#include "geometry/reconstructed_bounds.h"
#include "geometry/selection_order.h"

namespace attngeom::geometry {

class ModelSweep {
 public:
  explicit ModelSweep(const BoundInputs& inputs);  // InputError on inconsistent inputs
  ModelSweep(const ModelSweep&) = delete;          // state_ points into this object
  ModelSweep& operator=(const ModelSweep&) = delete;

  // Grows I_N to n (n never decreasing) and refreshes mu, spread and support.
  void advance_to(std::size_t n);

  std::size_t keys() const { return alpha_.size(); }
  const ModelState& state() const { return state_; }
  std::span<const double> mu() const { return mu_; }                 // [M] model D^2, clamped at 0
  std::span<const double> spread() const { return spread_; }         // [M] T_k
  std::span<const std::size_t> support() const { return support_; }  // [M] n_k
  std::span<const double> rounding() const { return rounding_; }     // [M] see kRoundingAllowance

 private:
  SelectionOrder order_;
  std::vector<double> alpha_;     // [M] by position
  std::vector<double> norms_;     // [M] nu by position
  std::vector<double> sq_norms_;  // [M] nu^2 by position
  std::vector<double> weighted_by_key_, forward_, backward_, projection_, mu_, spread_, rounding_;  // [M]
  std::vector<std::size_t> support_;                                                                // [M]
  ModelRow<std::size_t> row_;
  ModelState state_;
};

// envelope_from_intervals (envelope_step.h) over spans of the same length.
EnvelopePoint envelope_from_intervals(std::size_t n, std::span<const double> lo, std::span<const double> hi);

}  // namespace attngeom::geometry
