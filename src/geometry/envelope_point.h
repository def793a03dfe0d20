#pragma once
// What the reconstructed bounds R1 and R2 (reconstructed_bounds.h) state at one N, as plain
// structs that a GPU kernel writes too (C++17, no library types).
#include <cstddef>

#include "util/host_device.h"

namespace attngeom::geometry {

struct Interval {
  double lower = 0.0;
  double upper = 0.0;
  ATTNGEOM_HD double width() const { return upper - lower; }
};

// One N of an envelope: where P(N), R(N), F(N) must lie.
struct EnvelopePoint {
  std::size_t n = 0;
  Interval precision;
  Interval recall;
  Interval f_score;
  bool guarantees_separation = false;  // the bound implies Delta_N > 0, hence P = R = F = 1
  // No interval is tighter than what holds for any data (P in [N/M, 1], R and F in [0, 1]).
  bool vacuous = false;
};

// R2's statements at one N about a fixed radius sqrt(t), t chosen between the model's
// selected and unselected squared distances where the two nearest tails balance.
struct SeparationBound {
  std::size_t n = 0;
  double model_margin = 0.0;              // sqrt(min_J mu) - sqrt(max_I mu): the margin with no deviations
  double threshold_radius = 0.0;          // sqrt(t)
  double separation_probability = 0.0;    // lower bound on Pr(Delta_N > 0); 0 (vacuous) when model_margin <= 0
  double expected_recall = 0.0;           // lower bound on E[R(sqrt(t), N)]
  double expected_false_positives = 0.0;  // upper bound on E[FP(sqrt(t))]
};

}  // namespace attngeom::geometry
