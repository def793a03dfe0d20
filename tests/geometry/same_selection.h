#pragma once
// Field-by-field equality of one N's selection metrics, for paths that must give the CPU's bits
// (the GPU's selection, geometry/selection_step.h).
#include <gtest/gtest.h>

#include <cstddef>

#include "geometry/selection_metrics.h"

namespace attngeom::geometry::testing {

// got (with its curve [want.at_normalised_radius.size()]) equals want exactly.
inline void expect_same_selection(const SelectionPoint& got, const BallScores* curve, const SelectionMetrics& want) {
  EXPECT_EQ(got.n, want.n);
  EXPECT_EQ(got.precision, want.precision);
  EXPECT_EQ(got.recall, want.recall);
  EXPECT_EQ(got.f_score, want.f_score);
  EXPECT_EQ(got.r_min, want.r_min);
  EXPECT_EQ(got.r_max, want.r_max);
  EXPECT_EQ(got.margin, want.margin);
  EXPECT_EQ(got.unselected_inside_r_max, want.unselected_inside_r_max);
  EXPECT_EQ(got.selected_inside_r_min, want.selected_inside_r_min);
  EXPECT_EQ(got.a_in_min, want.a_in_min);
  EXPECT_EQ(got.a_out_max, want.a_out_max);
  EXPECT_EQ(got.f_best, want.f_best);
  EXPECT_EQ(got.f_best_radius, want.f_best_radius);
  EXPECT_EQ(got.s_norm, want.s_norm);
  EXPECT_EQ(got.cos_sink, want.cos_sink);
  EXPECT_EQ(got.cos_last, want.cos_last);
  EXPECT_EQ(got.witness.min_selected_weighted_norm, want.witness.min_selected_weighted_norm);
  EXPECT_EQ(got.witness.max_unselected_projection, want.witness.max_unselected_projection);
  EXPECT_EQ(got.witness.min_selected_cross_projection, want.witness.min_selected_cross_projection);
  for (std::size_t g = 0; g < want.at_normalised_radius.size(); ++g) {
    const BallScores& w = want.at_normalised_radius[g];
    EXPECT_EQ(curve[g].selected_inside, w.selected_inside) << "radius " << g;
    EXPECT_EQ(curve[g].unselected_inside, w.unselected_inside) << "radius " << g;
    EXPECT_EQ(curve[g].f_score, w.f_score) << "radius " << g;
  }
}

}  // namespace attngeom::geometry::testing
