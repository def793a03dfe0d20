#include "geometry/bound_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "geometry/projection_sweep.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

constexpr double kRoundingAllowance = 1e-9;  // see ModelSweep::rounding()

std::vector<double> by_position(std::span<const float> x, const SelectionOrder& order) {
  std::vector<double> out(x.size());
  for (std::size_t p = 0; p < x.size(); ++p) out[p] = x[order.order[p]];
  return out;
}

}  // namespace

ModelSweep::ModelSweep(const BoundInputs& inputs)
    : model_(inputs.model),
      order_(selection_order(inputs.alpha)),
      alpha_(by_position(inputs.alpha, order_)),
      norms_(inputs.alpha.size()),
      sq_norms_(inputs.alpha.size()),
      weighted_by_key_(inputs.alpha.size(), 0.0),
      forward_(inputs.alpha.size()),
      backward_(inputs.alpha.size()),
      projection_(inputs.alpha.size()),
      mu_(inputs.alpha.size()),
      spread_(inputs.alpha.size()),
      support_(inputs.alpha.size()),
      rounding_(inputs.alpha.size()) {
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
  if (!(std::abs(model_.rho_0) <= 1.0) || !(model_.beta >= 0.0))
    throw InputError("bounds: need |rho_0| <= 1 and beta >= 0");
}

void ModelSweep::advance_to(std::size_t n) {
  const std::size_t keys = alpha_.size();
  ATTNGEOM_CHECK(n >= n_ && n < keys);
  for (; n_ < n; ++n_) {
    const double y = alpha_[n_] * norms_[n_];
    weighted_by_key_[order_.order[n_]] = y;
    weighted_sum_ += y;
    weighted_sq_sum_ += y * y;
    nonzero_ += alpha_[n_] != 0.0;
  }
  // projection_[k] = sum_i a_i c_ik: the sink row and column carry rho_0, content pairs r^|i-k|
  // (beta = +inf gives r = 0: only the diagonal term a_k remains).
  const double r = std::exp(-model_.beta);
  const std::vector<double>& a = weighted_by_key_;
  // Both recursions in one loop: each step waits on the previous one's result, so two
  // independent chains run in the time of one. std::fma halves each step's latency (one
  // rounding instead of two; -ffp-contract=off guards exact zeros elsewhere, none here).
  double forward = 0.0;
  double backward = 0.0;
  double content_sum = 0.0;
  for (std::size_t step = 1; step < keys; ++step) {
    forward = std::fma(r, forward, a[step]);
    forward_[step] = forward;  // sum_{1<=i<=k} a_i r^(k-i), k = step
    backward = std::fma(r, backward, a[keys - step]);
    backward_[keys - step] = backward;  // sum_{i>=k} a_i r^(i-k), k = keys - step
    content_sum += a[step];
  }
  for (std::size_t k = 1; k < keys; ++k) projection_[k] = forward_[k] + backward_[k] - a[k] + a[0] * model_.rho_0;
  projection_[0] = a[0] + model_.rho_0 * content_sum;
  double norm2 = 0.0;  // ||s_N||^2 = sum_k a_k projection_k
  for (std::size_t k = 0; k < keys; ++k) norm2 += a[k] * projection_[k];

  // Locals, so that no store can be taken to alias the members a loop reads: the loops vectorise.
  const double* alpha = alpha_.data();
  const double* norms = norms_.data();
  const double* sq_norms = sq_norms_.data();
  const double* projection = projection_.data();
  const std::size_t* order = order_.order.data();
  double* mu = mu_.data();
  // <x_p, s_N> by position into mu, gathered on its own.
  for (std::size_t p = 0; p < keys; ++p) mu[p] = norms[p] * projection[order[p]];
  // w drops key p from I_N (sign -1), or adds -alpha_p for p in J_N (sign +1).
  double* spread = spread_.data();
  std::size_t* support = support_.data();
  double* rounding = rounding_.data();
  const double weighted_sum = weighted_sum_;
  const double weighted_sq_sum = weighted_sq_sum_;
  const std::size_t nonzero = nonzero_;
  const auto refresh = [=](std::size_t begin, std::size_t end, double sign, std::size_t weighted_support) {
    for (std::size_t p = begin; p < end; ++p) {
      mu[p] = squared_distance(alpha[p], sq_norms[p], norm2, mu[p]);
      const double y = alpha[p] * norms[p];
      const double sum = weighted_sum + sign * y;
      const double sq_sum = weighted_sq_sum + sign * y * y;
      support[p] = alpha[p] != 0.0 ? weighted_support : nonzero;
      // Support 0: p_k is s_N itself (N = 1, say), so D^2 = 0 exactly, with nothing to round.
      rounding[p] = support[p] == 0 ? 0.0 : kRoundingAllowance * (weighted_sum + y) * (weighted_sum + y);
      if (support[p] == 0) mu[p] = 0.0;
      // With fewer than two weights there is no off-diagonal pair: exactly 0, not a rounding residue.
      spread[p] = support[p] < 2 ? 0.0 : std::max(0.0, sum * sum - sq_sum);
    }
  };
  refresh(0, n, -1.0, nonzero - 1);
  refresh(n, keys, 1.0, nonzero + 1);
}

EnvelopePoint envelope_from_intervals(std::size_t n, std::span<const double> lo, std::span<const double> hi) {
  const std::size_t keys = lo.size();
  ATTNGEOM_CHECK(n >= 1 && n < keys && hi.size() == keys);
  // Maxima and minima are exact in any order: reductions in lanes.
  double rmax_lo = 0.0;
  double rmax_hi = 0.0;
#pragma omp simd reduction(max : rmax_lo, rmax_hi)
  for (std::size_t p = 0; p < n; ++p) {
    rmax_lo = std::max(rmax_lo, lo[p]);
    rmax_hi = std::max(rmax_hi, hi[p]);
  }
  double rmin_lo = std::numeric_limits<double>::infinity();
  double rmin_hi = std::numeric_limits<double>::infinity();
#pragma omp simd reduction(min : rmin_lo, rmin_hi)
  for (std::size_t p = n; p < keys; ++p) {
    rmin_lo = std::min(rmin_lo, lo[p]);
    rmin_hi = std::min(rmin_hi, hi[p]);
  }
  // Squared radii bracket the true r_max^2 and r_min^2; a key surely inside a ball has
  // hi <= (lower end of its radius^2), one possibly inside has lo <= (upper end).
  std::size_t fp_sure = 0;
  std::size_t fp_possible = 0;
  for (std::size_t p = n; p < keys; ++p) {
    fp_sure += hi[p] <= rmax_lo;
    fp_possible += lo[p] <= rmax_hi;
  }
  std::size_t tp_sure = 0;
  std::size_t tp_possible = 0;
  for (std::size_t p = 0; p < n; ++p) {
    tp_sure += hi[p] <= rmin_lo;
    tp_possible += lo[p] <= rmin_hi;
  }
  const double nd = static_cast<double>(n);
  EnvelopePoint e;
  e.n = n;
  e.precision = {nd / (nd + static_cast<double>(fp_possible)), nd / (nd + static_cast<double>(fp_sure))};
  e.recall = {static_cast<double>(tp_sure) / nd, static_cast<double>(tp_possible) / nd};
  e.f_score = {f_score(e.precision.lower, e.recall.lower), f_score(e.precision.upper, e.recall.upper)};
  e.guarantees_separation = rmax_hi < rmin_lo;
  const double trivial_precision = nd / static_cast<double>(keys);
  e.vacuous = e.precision.lower <= trivial_precision && e.precision.upper >= 1.0 && e.recall.lower <= 0.0 &&
              e.recall.upper >= 1.0 && e.f_score.lower <= 0.0 && e.f_score.upper >= 1.0;
  return e;
}

}  // namespace attngeom::geometry
