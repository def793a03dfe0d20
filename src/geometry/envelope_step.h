#pragma once
// The model side of the reconstructed bounds (docs/method.md section 4, reconstructed_bounds.h)
// at one N, and the R1 and R2 envelopes it gives: plain functions of pointers that the CPU's
// reconstructed_envelopes and a GPU thread (ops/cuda_envelope_kernels.cu) both run, so that
// both give the same bits (R2's tail probabilities, which take exp, up to its last bits).
// C++17, no library types: nvcc compiles it for the device too.
//
// Everything is by selection position. mu_k is the squared-distance formula applied to the
// model Gram nu_i nu_l c_il. Its projections sum_{i in I_N} alpha_i nu_i c_ik need no Gram:
// with a_i = alpha_i nu_i on I_N (0 elsewhere) and r = exp(-beta), the content part
// sum_{i>=1} a_i r^|i-k| is one forward and one backward first-order recursion over the keys,
// so each N costs O(M) however many keys joined. T_k and n_k follow from prefix sums.
#include <cmath>
#include <cstddef>

#include "geometry/envelope_point.h"
#include "geometry/selection_point.h"
#include "util/host_device.h"

namespace attngeom::geometry {

// mu and the measured D^2 are each sums of at most M + d products no larger than
// (A + alpha_k nu_k)^2, so each is off by < (M + d) eps of that (about 2e-12 at M = 8192,
// d = 256); this share of it covers both. Without it, exact ties (eta = 0) fall on either
// side of a radius by rounding alone.
inline constexpr double kRoundingAllowance = 1e-9;

// D_k^2 = ||w_k x_k - s_N||^2 = ||s_N||^2 + w_k (w_k ||x_k||^2 - 2 <x_k, s_N>), clamped at 0
// against rounding.
ATTNGEOM_HD inline double squared_distance(double weight, double sq_norm, double s_norm2, double dot) {
  const double d2 = s_norm2 + weight * (weight * sq_norm - 2.0 * dot);
  return d2 > 0.0 ? d2 : 0.0;
}

// std::max(0.0, x) (0 for NaN and -0).
ATTNGEOM_HD inline double at_least_zero(double x) { return 0.0 < x ? x : 0.0; }

// One row in selection order, with its cosine model.
template <class Index>
struct ModelRow {
  std::size_t keys = 0;              // M
  const double* alpha = nullptr;     // [M] alpha by position (descending)
  const double* norms = nullptr;     // [M] nu by position
  const double* sq_norms = nullptr;  // [M] nu^2 by position
  const Index* order = nullptr;      // [M] key at each position
  double decay = 0.0;                // r = exp(-beta)
  double rho_0 = 0.0;
};

// The sweep's state at N = n: I_N so far, and the model there. Every array is [M]; the
// state starts zeroed (n = 0, weighted_by_key all 0).
struct ModelState {
  std::size_t n = 0;
  double weighted_sum = 0.0;          // A = sum_{I_N} alpha_i nu_i
  double weighted_sq_sum = 0.0;       // Q = sum_{I_N} (alpha_i nu_i)^2
  std::size_t nonzero = 0;            // #{i in I_N : alpha_i != 0}
  double* weighted_by_key = nullptr;  // a_k = alpha_k nu_k for k in I_N, else 0
  double* forward = nullptr;          // scratch: sum_{1<=i<=k} a_i r^(k-i)
  double* backward = nullptr;         // scratch: sum_{i>=k} a_i r^(i-k)
  double* projection = nullptr;       // <x_k, s_N> / nu_k by key
  double* mu = nullptr;               // model D^2 by position, clamped at 0
  double* spread = nullptr;           // T_k
  std::size_t* support = nullptr;     // n_k
  double* rounding = nullptr;         // allowance for rounding (kRoundingAllowance)
};

// Grows I_N to n (n never decreasing, n < M): its sums, and a_k of its keys.
template <class Index>
ATTNGEOM_HD void add_selected(const ModelRow<Index>& row, std::size_t n, ModelState& s) {
  for (; s.n < n; ++s.n) {
    const double y = row.alpha[s.n] * row.norms[s.n];
    s.weighted_by_key[row.order[s.n]] = y;
    s.weighted_sum += y;
    s.weighted_sq_sum += y * y;
    s.nonzero += row.alpha[s.n] != 0.0;
  }
}

// The content part of projection[k] = sum_i a_i c_ik, r^|i-k| over the keys i >= 1 (beta = +inf
// gives r = 0: only the diagonal term a_k remains), as the forward and the backward recursion
// into forward[k] and backward[k], k >= 1; returns sum_{k >= 1} a_k.
ATTNGEOM_HD inline double content_recursions(const double* a, std::size_t keys, double r, double* forward_out,
                                             double* backward_out) {
  // Both recursions in one loop: each step waits on the previous one's result, so two
  // independent chains run in the time of one; fma halves each step's latency.
  double forward = 0.0;
  double backward = 0.0;
  double content_sum = 0.0;
  for (std::size_t step = 1; step < keys; ++step) {
    forward = fma(r, forward, a[step]);
    forward_out[step] = forward;  // k = step
    backward = fma(r, backward, a[keys - step]);
    backward_out[keys - step] = backward;  // k = keys - step
    content_sum += a[step];
  }
  return content_sum;
}

// projection[k] for k >= 1: both recursions (each holding a_k once too) and the sink's pair.
ATTNGEOM_HD inline double content_projection(const double* forward, const double* backward, const double* a,
                                             double rho_0, std::size_t k) {
  return forward[k] + backward[k] - a[k] + a[0] * rho_0;
}

// projection[0]: the sink's own term, and rho_0 with every content key.
ATTNGEOM_HD inline double sink_projection(const double* a, double rho_0, double content_sum) {
  return a[0] + rho_0 * content_sum;
}

// The model at key p given <x_p, s_N> (`dot`): mu, T_k, n_k and the rounding allowance.
struct KeyModel {
  double mu = 0.0;
  double spread = 0.0;
  double rounding = 0.0;
  std::size_t support = 0;
};

// w drops key p from I_N (`selected`), or adds -alpha_p for p in J_N.
ATTNGEOM_HD inline KeyModel key_model(double alpha, double norm, double sq_norm, double dot, double norm2,
                                      double weighted_sum, double weighted_sq_sum, std::size_t nonzero, bool selected) {
  const double sign = selected ? -1.0 : 1.0;
  const std::size_t weighted_support = selected ? nonzero - 1 : nonzero + 1;
  KeyModel k;
  k.mu = squared_distance(alpha, sq_norm, norm2, dot);
  const double y = alpha * norm;
  const double sum = weighted_sum + sign * y;
  const double sq_sum = weighted_sq_sum + sign * y * y;
  k.support = alpha != 0.0 ? weighted_support : nonzero;
  // Support 0: p_k is s_N itself (N = 1, say), so D^2 = 0 exactly, with nothing to round.
  k.rounding = k.support == 0 ? 0.0 : kRoundingAllowance * (weighted_sum + y) * (weighted_sum + y);
  if (k.support == 0) k.mu = 0.0;
  // With fewer than two weights there is no off-diagonal pair: exactly 0, not a rounding residue.
  k.spread = k.support < 2 ? 0.0 : at_least_zero(sum * sum - sq_sum);
  return k;
}

// Grows I_N to n (n never decreasing, n < M) and refreshes mu, spread, support and rounding.
template <class Index>
ATTNGEOM_HD void advance_model(const ModelRow<Index>& row, std::size_t n, ModelState& s) {
  const std::size_t keys = row.keys;
  add_selected(row, n, s);
  const double* a = s.weighted_by_key;
  const double content_sum = content_recursions(a, keys, row.decay, s.forward, s.backward);
  for (std::size_t k = 1; k < keys; ++k) s.projection[k] = content_projection(s.forward, s.backward, a, row.rho_0, k);
  s.projection[0] = sink_projection(a, row.rho_0, content_sum);
  double norm2 = 0.0;  // ||s_N||^2 = sum_k a_k projection_k
  for (std::size_t k = 0; k < keys; ++k) norm2 += a[k] * s.projection[k];

  // Locals, so that no store can be taken to alias what a loop reads: the loops vectorise.
  const double* alpha = row.alpha;
  const double* norms = row.norms;
  const double* sq_norms = row.sq_norms;
  const double* projection = s.projection;
  const Index* order = row.order;
  double* mu = s.mu;
  // <x_p, s_N> by position into mu, gathered on its own.
  for (std::size_t p = 0; p < keys; ++p) mu[p] = norms[p] * projection[order[p]];
  double* spread = s.spread;
  std::size_t* support = s.support;
  double* rounding = s.rounding;
  const double weighted_sum = s.weighted_sum;
  const double weighted_sq_sum = s.weighted_sq_sum;
  const std::size_t nonzero = s.nonzero;
  for (std::size_t p = 0; p < keys; ++p) {
    const KeyModel k =
        key_model(alpha[p], norms[p], sq_norms[p], mu[p], norm2, weighted_sum, weighted_sq_sum, nonzero, p < n);
    mu[p] = k.mu;
    spread[p] = k.spread;
    rounding[p] = k.rounding;
    support[p] = k.support;
  }
}

// What envelope_from_intervals takes from the intervals: the squared radii's brackets, and the
// keys surely and possibly inside each ball.
struct IntervalCounts {
  double rmax_lo = 0.0;  // max over I_N of lo, hi
  double rmax_hi = 0.0;
  double rmin_lo = HUGE_VAL;  // min over J_N of lo, hi
  double rmin_hi = HUGE_VAL;
  std::size_t fp_sure = 0;      // J_N with hi <= rmax_lo
  std::size_t fp_possible = 0;  // J_N with lo <= rmax_hi
  std::size_t tp_sure = 0;      // I_N with hi <= rmin_lo
  std::size_t tp_possible = 0;  // I_N with lo <= rmin_hi
};

// The envelope from the counts (1 <= n < keys).
ATTNGEOM_HD inline EnvelopePoint envelope_from_counts(std::size_t n, std::size_t keys, const IntervalCounts& c) {
  const double nd = static_cast<double>(n);
  EnvelopePoint e;
  e.n = n;
  e.precision = {nd / (nd + static_cast<double>(c.fp_possible)), nd / (nd + static_cast<double>(c.fp_sure))};
  e.recall = {static_cast<double>(c.tp_sure) / nd, static_cast<double>(c.tp_possible) / nd};
  e.f_score = {f_score(e.precision.lower, e.recall.lower), f_score(e.precision.upper, e.recall.upper)};
  e.guarantees_separation = c.rmax_hi < c.rmin_lo;
  const double trivial_precision = nd / static_cast<double>(keys);
  e.vacuous = e.precision.lower <= trivial_precision && e.precision.upper >= 1.0 && e.recall.lower <= 0.0 &&
              e.recall.upper >= 1.0 && e.f_score.lower <= 0.0 && e.f_score.upper >= 1.0;
  return e;
}

// Envelope of P, R, F from intervals [lo_p, hi_p] of every D_p^2 (by position; I_N = [0, n), 1 <= n < keys).
ATTNGEOM_HD inline EnvelopePoint envelope_from_intervals(std::size_t n, const double* lo, const double* hi,
                                                         std::size_t keys) {
  // Maxima and minima are exact in any order: reductions in lanes.
  IntervalCounts c;
  double rmax_lo = 0.0;
  double rmax_hi = 0.0;
  ATTNGEOM_SIMD(reduction(max : rmax_lo, rmax_hi))
  for (std::size_t p = 0; p < n; ++p) {
    rmax_lo = rmax_lo < lo[p] ? lo[p] : rmax_lo;
    rmax_hi = rmax_hi < hi[p] ? hi[p] : rmax_hi;
  }
  double rmin_lo = HUGE_VAL;
  double rmin_hi = HUGE_VAL;
  ATTNGEOM_SIMD(reduction(min : rmin_lo, rmin_hi))
  for (std::size_t p = n; p < keys; ++p) {
    rmin_lo = lo[p] < rmin_lo ? lo[p] : rmin_lo;
    rmin_hi = hi[p] < rmin_hi ? hi[p] : rmin_hi;
  }
  c.rmax_lo = rmax_lo;
  c.rmax_hi = rmax_hi;
  c.rmin_lo = rmin_lo;
  c.rmin_hi = rmin_hi;
  // Squared radii bracket the true r_max^2 and r_min^2; a key surely inside a ball has
  // hi <= (lower end of its radius^2), one possibly inside has lo <= (upper end).
  for (std::size_t p = n; p < keys; ++p) {
    c.fp_sure += hi[p] <= rmax_lo;
    c.fp_possible += lo[p] <= rmax_hi;
  }
  for (std::size_t p = 0; p < n; ++p) {
    c.tp_sure += hi[p] <= rmin_lo;
    c.tp_possible += lo[p] <= rmin_hi;
  }
  return envelope_from_counts(n, keys, c);
}

// R1's interval of key p: D^2 in [mu - T eta - rounding, mu + T eta + rounding].
ATTNGEOM_HD inline void deterministic_interval(const ModelState& s, std::size_t p, double eta, double& lo, double& hi) {
  const double margin = s.spread[p] * eta + s.rounding[p];
  lo = at_least_zero(s.mu[p] - margin);
  hi = s.mu[p] + margin;
}

// R1 at the state's N: D^2 in [mu - T eta - rounding, mu + T eta + rounding].
ATTNGEOM_HD inline EnvelopePoint deterministic_point(const ModelState& s, std::size_t keys, double eta, double* lo,
                                                     double* hi) {
  for (std::size_t p = 0; p < keys; ++p) deterministic_interval(s, p, eta, lo[p], hi[p]);
  return envelope_from_intervals(s.n, lo, hi, keys);
}

// R2's terms that depend on a key's support n alone (n >= 2): n (n - 1), its log, and the root
// in its margin, sqrt(2 sigma^2 log(n (n - 1) M / delta) / d).
struct SupportTerm {
  double pairs = 0.0;
  double log_pairs = 0.0;
  double margin_root = 0.0;
};

// On the host: the GPU's table of them comes from here, as the CPU's cache does.
inline SupportTerm support_term(std::size_t support, double sigma2, double delta, std::size_t keys, std::size_t dim) {
  SupportTerm t;
  t.pairs = static_cast<double>(support) * static_cast<double>(support - 1);
  t.log_pairs = std::log(t.pairs);
  const double per_key = delta / static_cast<double>(keys);
  t.margin_root = std::sqrt(2.0 * sigma2 * std::log(t.pairs / per_key) / static_cast<double>(dim));
  return t;
}

// The tail bound n (n - 1) exp(-d m^2 / (2 sigma^2 T^2)), at most 1; for m > 0 and a key that
// is not deterministic.
ATTNGEOM_HD inline double support_tail(const SupportTerm& t, double margin, double spread, std::size_t dim,
                                       double sigma2) {
  // Clearly below log(n (n - 1)), the product exceeds 1 by far more than the rounding of exp
  // and the product, so the bound is exactly 1 without the exp (most keys at most N).
  constexpr double kSureOneGap = 1e-9;
  const double exponent = static_cast<double>(dim) * margin * margin / (2.0 * sigma2 * spread * spread);
  if (exponent < t.log_pairs - kSureOneGap) return 1.0;
  const double bound = t.pairs * exp(-exponent);
  return bound < 1.0 ? bound : 1.0;
}

// Union bound of R2 for one key: D^2 = mu exactly without an off-diagonal pair or a spread.
ATTNGEOM_HD inline bool deterministic_key(double spread, std::size_t support) { return support < 2 || spread == 0.0; }

// The supports of one N span at most three consecutive values (nonzero - 1, + 0, + 1):
// least and most of them.
ATTNGEOM_HD inline void support_range(const std::size_t* support, std::size_t keys, std::size_t& least,
                                      std::size_t& most) {
  least = support[0];
  most = support[0];
  ATTNGEOM_SIMD(reduction(min : least) reduction(max : most))
  for (std::size_t p = 0; p < keys; ++p) {
    least = support[p] < least ? support[p] : least;
    most = most < support[p] ? support[p] : most;
  }
}

// R2's intervals at the state's N: each key within its margin at tail delta / M, roots[k] the
// margin root of support least + k (unused below support 2).
ATTNGEOM_HD inline void probabilistic_interval(const ModelState& s, std::size_t p, std::size_t least,
                                               const double* roots, double& lo, double& hi) {
  const std::size_t support = s.support[p];
  const double root = support == least ? roots[0] : support == least + 1 ? roots[1] : roots[2];
  const double margin = (deterministic_key(s.spread[p], support) ? 0.0 : s.spread[p] * root) + s.rounding[p];
  lo = at_least_zero(s.mu[p] - margin);
  hi = s.mu[p] + margin;
}

ATTNGEOM_HD inline EnvelopePoint probabilistic_point(const ModelState& s, std::size_t keys, std::size_t least,
                                                     const double* roots, double* lo, double* hi) {
  for (std::size_t p = 0; p < keys; ++p) probabilistic_interval(s, p, least, roots, lo[p], hi[p]);
  return envelope_from_intervals(s.n, lo, hi, keys);
}

namespace envelope_step {

// A key that cannot deviate sits exactly at mu in exact arithmetic, but a measured distance
// carries rounding of order 1e-16 relative: a threshold placed exactly at mu would split such
// keys by the last bit. It keeps this relative distance instead.
inline constexpr double kFixedKeyGuard = 1e-9;

// Threshold t between the farthest selected key (p_in) and the nearest unselected one (p_out):
// where their tails balance, or, when a side cannot deviate, as far from the other side as
// that allows (just above a fixed mu_in, just below a fixed mu_out).
ATTNGEOM_HD inline double balanced_threshold(const ModelState& s, std::size_t p_in, std::size_t p_out) {
  const double mu_in = s.mu[p_in];
  const double mu_out = s.mu[p_out];
  const double t_in = s.spread[p_in];
  const double t_out = s.spread[p_out];
  if (deterministic_key(t_in, s.support[p_in])) return mu_in * (1.0 + kFixedKeyGuard);
  if (deterministic_key(t_out, s.support[p_out])) return mu_out * (1.0 - kFixedKeyGuard);
  return (mu_in * t_out + mu_out * t_in) / (t_in + t_out);
}

}  // namespace envelope_step

// Delta_N > 0 whenever every selected D^2 <= t < every unselected D^2, so
// Pr(Delta_N <= 0) <= sum_I Pr(D_i^2 > t) + sum_J Pr(D_j^2 <= t) = N (1 - E[R] bound) + E[FP] bound.
// tail(margin, spread, support): support_tail with that support's terms.
// Pr(D_p^2 > t) of a selected key, Pr(D_p^2 <= t) of an unselected one.
template <class Tail>
ATTNGEOM_HD double missed_term(const ModelState& s, std::size_t p, double t, Tail& tail) {
  const bool fixed = deterministic_key(s.spread[p], s.support[p]);
  return fixed ? (s.mu[p] > t ? 1.0 : 0.0) : (t > s.mu[p] ? tail(t - s.mu[p], s.spread[p], s.support[p]) : 1.0);
}
template <class Tail>
ATTNGEOM_HD double false_positive_term(const ModelState& s, std::size_t p, double t, Tail& tail) {
  const bool fixed = deterministic_key(s.spread[p], s.support[p]);
  return fixed ? (s.mu[p] <= t ? 1.0 : 0.0) : (s.mu[p] > t ? tail(s.mu[p] - t, s.spread[p], s.support[p]) : 1.0);
}

// The bound from the first largest mu of I_N (`inside`), the first smallest of J_N (`outside`),
// and the sums of missed_term over I_N and false_positive_term over J_N, each in position order.
ATTNGEOM_HD inline SeparationBound separation_from(const ModelState& s, std::size_t inside, std::size_t outside,
                                                   double missed, double false_positives) {
  SeparationBound b;
  b.n = s.n;
  b.model_margin = sqrt(s.mu[outside]) - sqrt(s.mu[inside]);
  b.threshold_radius = sqrt(at_least_zero(envelope_step::balanced_threshold(s, inside, outside)));
  b.expected_false_positives = false_positives;
  b.expected_recall = 1.0 - missed / static_cast<double>(s.n);
  b.separation_probability = b.model_margin > 0.0 ? at_least_zero(1.0 - missed - false_positives) : 0.0;
  return b;
}

template <class Tail>
ATTNGEOM_HD SeparationBound separation_bound(const ModelState& s, std::size_t keys, Tail& tail) {
  const std::size_t n = s.n;
  const double* mu = s.mu;
  std::size_t inside = 0;  // the first largest mu of I_N, the first smallest of J_N
  for (std::size_t p = 1; p < n; ++p) inside = mu[p] > mu[inside] ? p : inside;
  std::size_t outside = n;
  for (std::size_t p = n + 1; p < keys; ++p) outside = mu[p] < mu[outside] ? p : outside;
  const double t = envelope_step::balanced_threshold(s, inside, outside);
  double missed = 0.0;
  for (std::size_t p = 0; p < n; ++p) missed += missed_term(s, p, t, tail);
  double false_positives = 0.0;
  for (std::size_t p = n; p < keys; ++p) false_positives += false_positive_term(s, p, t, tail);
  return separation_from(s, inside, outside, missed, false_positives);
}

}  // namespace attngeom::geometry
