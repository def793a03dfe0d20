#pragma once
// Field-by-field equality of one N's selection metrics and envelopes, for paths that must give
// the same bits (the GPU's, geometry/selection_step.h and envelope_step.h; the shared sweeps).
#include <gtest/gtest.h>

#include <cstddef>

#include "geometry/reconstructed_bounds.h"
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

inline bool same_envelope_point(const EnvelopePoint& a, const EnvelopePoint& b) {
  return a.n == b.n && a.precision.lower == b.precision.lower && a.precision.upper == b.precision.upper &&
         a.recall.lower == b.recall.lower && a.recall.upper == b.recall.upper && a.f_score.lower == b.f_score.lower &&
         a.f_score.upper == b.f_score.upper && a.guarantees_separation == b.guarantees_separation &&
         a.vacuous == b.vacuous;
}

// R2's separation statements: the threshold exactly, the sums of tail probabilities (which take
// exp) within `tolerance` of their size.
inline void expect_same_separation(const SeparationBound& got, const SeparationBound& want, double tolerance) {
  EXPECT_EQ(got.n, want.n);
  EXPECT_EQ(got.model_margin, want.model_margin);
  EXPECT_EQ(got.threshold_radius, want.threshold_radius);
  EXPECT_NEAR(got.expected_recall, want.expected_recall, tolerance);
  EXPECT_NEAR(got.expected_false_positives, want.expected_false_positives,
              tolerance * (1.0 + want.expected_false_positives));
  EXPECT_NEAR(got.separation_probability, want.separation_probability,
              tolerance * (1.0 + want.expected_false_positives));
}

}  // namespace attngeom::geometry::testing
