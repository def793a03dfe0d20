#pragma once
// The per-row inputs of the head taxonomy (docs/method.md section 6): the magnitudes of the sink, the
// last token and the rest, and the cosine trajectories read at small and at large N. The
// classification across heads is stats/taxonomy.h.
#include <cstddef>
#include <span>

#include "geometry/head_row.h"
#include "geometry/mass_step.h"
#include "geometry/selection_metrics.h"

namespace attngeom::geometry {

// HeadMagnitudes (geometry/mass_step.h) of a row.
HeadMagnitudes head_magnitudes(const HeadRowView& row);
HeadMagnitudes head_magnitudes(const ValidatedRow& checked);

// Where the trajectories are read.
struct FeatureWindow {
  std::size_t small_n_max = 4;     // small N: N <= this (the seed's small-N regime [1, 4])
  double large_n_fraction = 0.25;  // large N: N >= this share of M - 1
};

struct TaxonomyFeatures {
  double sink_share = 0.0;  // magnitudes over their sum; 0 when all are 0
  double last_share = 0.0;
  double rest_share = 0.0;
  double cos_sink_small = 0.0;  // mean cos(s_N, v_0) over the small N of the grid
  double cos_sink_large = 0.0;  // ... over the large N
  double cos_last_small = 0.0;  // mean cos(s_N, v_L) over the small N
  double cos_last_large = 0.0;  // ... over the large N
};

// grid: selection metrics of this row over an N grid (e.g. default_n_grid). A missing small
// (large) N set falls back to the smallest (largest) N of the grid; an empty grid (a row
// with one key: nothing to select) leaves the four cosines NaN, and classify() then
// matches no rule (unclassified).
TaxonomyFeatures taxonomy_features(const HeadMagnitudes& magnitudes, std::span<const SelectionMetrics> grid,
                                   std::size_t keys, const FeatureWindow& window = {});

}  // namespace attngeom::geometry
