#pragma once
// The cosine deviations (cosine_model.h) of many rows of one kv head at once, lag by lag, as
// plain functions of pointers that a GPU kernel runs one lag per thread and the CPU runs in
// tests (C++17, no library types). A content pair's model cosine depends only on its lag and
// the row's model, so one walk per lag tau over the pairs (l - tau, l) in order of l, kept as
// running moments, gives a row its terms at that lag once l reaches the row's last key:
// O(T^2) per kv head for every row and O(T) per row, against O(M^2) per row for the rows' own
// passes. The sink's pairs (0, l) walk as lag 0, against rho_0. A walk reads only column l of
// the Gram at step l, so it goes on from one strip of columns to the next: the Gram is never
// whole, and its memory is linear in T.
//
// A lag's largest |delta| is met at its largest or smallest cosine (a rounded difference is
// monotone in its first operand), so max |delta| equals a pass over the pairs bit for bit.
// sum delta^2 is the moments' expansion about the lag's first cosine, so that its rounding
// error scales with the spread of the cosines and their distance from the model rather than
// with the cosines themselves.
#include <cmath>
#include <cstdint>

#include "util/host_device.h"

namespace attngeom::geometry {

// Columns [first, first + width) of a kv head's Gram matrix of values: G(i, l) for i <= l at
// gram[(l - first) * ld + i] (the upper triangle, column-major), ld >= first + width; norms[k]
// = ||v_k||. The whole matrix is first = 0, ld = size.
struct UpperGram {
  const double* gram = nullptr;   // [width, ld]
  const double* norms = nullptr;  // [size]
  int ld = 0;
  int first = 0;
};

// delta's terms over some pairs.
struct DeviationTerms {
  double max_abs = 0.0;
  double sum_sq = 0.0;
  double pairs = 0.0;  // exact up to 2^53
};

// The largest and smallest of the cosines seen at one lag (deviation_maxima.h too).
struct LagExtrema {
  double largest = -HUGE_VAL;
  double smallest = HUGE_VAL;
  ATTNGEOM_HD bool seen() const { return largest >= smallest; }
  ATTNGEOM_HD void add(double cosine) {
    largest = fmax(largest, cosine);
    smallest = fmin(smallest, cosine);
  }
  // max |cosine - model| over the cosines seen, 0 without any: met at one of the two (a
  // rounded difference is monotone in its first operand).
  ATTNGEOM_HD double widest(double model) const {
    return seen() ? fmax(fabs(largest - model), fabs(smallest - model)) : 0.0;
  }
};

// The running moments of one lag's cosines, pairs of zero vectors left out (no direction).
struct LagWalk {
  int tau = 0;         // the lag; 0 walks the sink's pairs (0, l)
  int next = 1;        // the later key l of the next pair
  double shift = 0.0;  // the first cosine taken
  LagExtrema extrema;
  double sum = 0.0;     // of cosine - shift
  double sum_sq = 0.0;  // of (cosine - shift)^2
  double pairs = 0.0;
};

ATTNGEOM_HD inline LagWalk start_lag_walk(int tau) {
  LagWalk walk;
  walk.tau = tau;
  walk.next = tau + 1;  // the first pair (1, tau + 1), or (0, 1) for the sink
  return walk;
}

// The cosine of the pair (i, l), i < l, both vectors non-zero, as the rows' own pass takes it.
ATTNGEOM_HD inline double gram_cosine(const UpperGram& g, int i, int l) {
  return g.gram[static_cast<std::int64_t>(l - g.first) * g.ld + i] / (g.norms[i] * g.norms[l]);
}

// Takes the walk's pairs whose later key is at most `last`, all of them columns that g holds
// once the pairs before g.first are taken.
ATTNGEOM_HD inline void walk_to(LagWalk& walk, const UpperGram& g, int last) {
  for (; walk.next <= last; ++walk.next) {
    const int l = walk.next;
    const int i = walk.tau == 0 ? 0 : l - walk.tau;
    if (g.norms[i] == 0.0 || g.norms[l] == 0.0) continue;
    const double cosine = gram_cosine(g, i, l);
    if (walk.pairs == 0.0) walk.shift = cosine;
    walk.extrema.add(cosine);
    const double centred = cosine - walk.shift;
    walk.sum += centred;
    walk.sum_sq += centred * centred;
    walk.pairs += 1.0;
  }
}

// The model cosine at the walk's lag: rho_0 for the sink's pairs, exp(-beta tau) otherwise
// (beta = inf gives 0, beta = 0 gives 1).
ATTNGEOM_HD inline double lag_model_cosine(int tau, double beta, double rho_0) {
  return tau == 0 ? rho_0 : exp(-beta * static_cast<double>(tau));
}

// The terms of the pairs taken so far against the lag's model cosine.
ATTNGEOM_HD inline DeviationTerms lag_terms(const LagWalk& walk, double model) {
  DeviationTerms out;
  if (walk.pairs == 0.0) return out;
  out.max_abs = walk.extrema.widest(model);
  const double offset = model - walk.shift;  // sum (c - model)^2 = sum ((c - shift) - offset)^2
  out.sum_sq = fmax(walk.sum_sq - 2.0 * offset * walk.sum + walk.pairs * offset * offset, 0.0);
  out.pairs = walk.pairs;
  return out;
}

ATTNGEOM_HD inline void add_terms(DeviationTerms& total, const DeviationTerms& more) {
  total.max_abs = fmax(total.max_abs, more.max_abs);
  total.sum_sq += more.sum_sq;
  total.pairs += more.pairs;
}

}  // namespace attngeom::geometry
