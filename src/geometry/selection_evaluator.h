#pragma once
// Turns <v, s_N> into every docs/method.md section 2 metric at one N, on the CPU: the memory
// and the sort around evaluate_selection (selection_step.h). Internal to selection_metrics.cc.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/radix_sort.h"
#include "geometry/selection_metrics.h"
#include "geometry/selection_step.h"

namespace attngeom::geometry {

// One row in selection order. The values stay where they are, in key order.
struct PositionedRow {
  std::size_t keys = 0;
  std::size_t dim = 0;
  std::vector<double> alpha;       // [M] alpha by position (descending)
  std::vector<std::size_t> order;  // [M] key at each position
  const float* values = nullptr;   // [M, d] v by key
  std::vector<double> sq_norms;    // [M] ||v||^2 by position
  std::size_t sink_position = 0;   // position of key 0
  std::size_t last_position = 0;   // position of key M-1

  const float* value(std::size_t p) const { return values + order[p] * dim; }  // [d] v at position p
};

class SelectionEvaluator {
 public:
  // Reads row's sq_norms as they are now: set them first.
  SelectionEvaluator(const PositionedRow& row, std::span<const double> normalised_radii);

  SelectionMetrics evaluate(std::size_t n,
                            std::span<const double> dots,  // [M] <v_p, s_N> by position
                            std::span<const double> s);    // [d] s_N

 private:
  std::span<const double> normalised_radii_;
  std::vector<double> weighted_norm_min_;  // [M] min_{q <= p} alpha_q ||v_q||, fixed for the row
  PositionedView<std::size_t> view_;
  std::vector<double> offset_;           // [M] scratch (SelectionScratch)
  std::vector<std::size_t> recomputed_;  // [M]
  std::vector<double> recomputed_d2_;    // [M]
  std::vector<double> selected_sorted_;  // [M]
  std::vector<std::size_t> tally_;       // [M]
  RadixSorter sorter_;
};

}  // namespace attngeom::geometry
