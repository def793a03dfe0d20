#include "geometry/bound_model.h"

#include <cmath>

#include "util/error.h"

namespace attngeom::geometry {
namespace {

std::vector<double> by_position(std::span<const float> x, const SelectionOrder& order) {
  std::vector<double> out(x.size());
  for (std::size_t p = 0; p < x.size(); ++p) out[p] = x[order.order[p]];
  return out;
}

}  // namespace

ModelSweep::ModelSweep(const BoundInputs& inputs)
    : order_(selection_order(inputs.alpha)),
      alpha_(by_position(inputs.alpha, order_)),
      norms_(inputs.alpha.size()),
      sq_norms_(inputs.alpha.size()),
      weighted_by_key_(inputs.alpha.size(), 0.0),
      forward_(inputs.alpha.size()),
      backward_(inputs.alpha.size()),
      projection_(inputs.alpha.size()),
      mu_(inputs.alpha.size()),
      spread_(inputs.alpha.size()),
      rounding_(inputs.alpha.size()),
      support_(inputs.alpha.size()) {
  const std::size_t keys = inputs.alpha.size();
  if (keys == 0 || inputs.norms.size() != keys)
    throw InputError("bounds: alpha and norms must both hold M >= 1 entries");
  for (std::size_t p = 0; p < keys; ++p) {
    const double nu = inputs.norms[order_.order[p]];
    if (!std::isfinite(nu) || nu < 0.0) throw InputError("bounds: value norms must be finite and >= 0");
    if (!std::isfinite(alpha_[p]) || alpha_[p] < 0.0) throw InputError("bounds: alpha must be finite and >= 0");
    norms_[p] = nu;
    sq_norms_[p] = nu * nu;
  }
  const CosineModel& model = inputs.model;
  if (!(std::abs(model.rho_0) <= 1.0) || !(model.beta >= 0.0))
    throw InputError("bounds: need |rho_0| <= 1 and beta >= 0");
  row_ = {keys,       alpha_.data(), norms_.data(), sq_norms_.data(), order_.order.data(), std::exp(-model.beta),
          model.rho_0};
  state_.weighted_by_key = weighted_by_key_.data();
  state_.forward = forward_.data();
  state_.backward = backward_.data();
  state_.projection = projection_.data();
  state_.mu = mu_.data();
  state_.spread = spread_.data();
  state_.support = support_.data();
  state_.rounding = rounding_.data();
}

void ModelSweep::advance_to(std::size_t n) {
  ATTNGEOM_CHECK(n >= state_.n && n < keys());
  advance_model(row_, n, state_);
}

EnvelopePoint envelope_from_intervals(std::size_t n, std::span<const double> lo, std::span<const double> hi) {
  ATTNGEOM_CHECK(n >= 1 && n < lo.size() && hi.size() == lo.size());
  return envelope_from_intervals(n, lo.data(), hi.data(), lo.size());
}

}  // namespace attngeom::geometry
