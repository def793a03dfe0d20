// Selection metrics on inputs whose answers are known by hand, and on degenerate inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "geometry/selection_metrics.h"
#include "random_rows.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

using testing::OwnedRow;

SelectionMetrics at(const OwnedRow& row, std::size_t n, ProjectionMethod method = ProjectionMethod::kGram) {
  const std::vector<std::size_t> ns = {n};
  SelectionOptions options;
  options.method = method;
  return selection_metrics(row.view(), ns, options).front();
}

void expect_no_nan(const SelectionMetrics& m) {
  for (const double x :
       {m.precision, m.recall, m.f_score, m.r_min, m.r_max, m.margin, m.a_in_min, m.a_out_max, m.f_best,
        m.f_best_radius, m.s_norm, m.cos_sink, m.cos_last, m.witness.min_selected_weighted_norm,
        m.witness.max_unselected_projection, m.witness.min_selected_cross_projection}) {
    EXPECT_TRUE(std::isfinite(x)) << "N = " << m.n;
  }
}

// v_k = 2 e_k (orthogonal, equal norms), alpha distinct and descending. With S2 = sum_{I} alpha^2 * 4:
// D_i = sqrt(S2 - 4 alpha_i^2) for i in I, D_j = sqrt(S2 + 4 alpha_j^2) for j in J.
TEST(SelectionClosedForm, OrthogonalEqualNormValues) {
  const std::vector<float> alpha = {0.4f, 0.25f, 0.15f, 0.1f, 0.06f, 0.04f};
  OwnedRow row{alpha, std::vector<float>(alpha.size() * alpha.size(), 0.0f), alpha.size()};
  for (std::size_t k = 0; k < alpha.size(); ++k) row.values[k * alpha.size() + k] = 2.0f;
  for (const ProjectionMethod method : {ProjectionMethod::kGram, ProjectionMethod::kDirect}) {
    for (std::size_t n = 1; n < alpha.size(); ++n) {
      const SelectionMetrics m = at(row, n, method);
      double s2 = 0.0;
      for (std::size_t i = 0; i < n; ++i) s2 += 4.0 * alpha[i] * static_cast<double>(alpha[i]);
      const double a_in = alpha[n - 1];
      const double a_out_last = alpha.back();
      EXPECT_NEAR(m.r_max, std::sqrt(s2 - 4.0 * a_in * a_in), 1e-12) << n;
      EXPECT_NEAR(m.r_min, std::sqrt(s2 + 4.0 * a_out_last * a_out_last), 1e-12) << n;
      EXPECT_NEAR(m.s_norm, std::sqrt(s2), 1e-12) << n;
      EXPECT_GT(m.margin, 0.0);
      EXPECT_EQ(m.precision, 1.0);
      EXPECT_EQ(m.recall, 1.0);
      EXPECT_EQ(m.f_score, 1.0);
      EXPECT_EQ(m.f_best, 1.0);
      EXPECT_EQ(m.a_in_min, a_in);
      EXPECT_EQ(m.a_out_max, alpha[n]);
      EXPECT_NEAR(m.cos_sink, 2.0 * alpha[0] / std::sqrt(s2), 1e-12);  // key 0 is always selected
      EXPECT_EQ(m.cos_last, 0.0);                                      // key M-1 is never selected
    }
  }
}

TEST(SelectionClosedForm, NEqualsOneIsTrivial) {
  std::mt19937_64 rng(1);
  const OwnedRow row = testing::random_row(rng, 50, 8, {});
  const SelectionMetrics m = at(row, 1);
  EXPECT_EQ(m.r_max, 0.0);  // exactly: s_1 = p_{i_1}
  EXPECT_EQ(m.recall, 1.0);
  EXPECT_EQ(m.selected_inside_r_min, 1u);
  EXPECT_EQ(m.unselected_inside_r_max, 0u);  // no other point sits exactly on s_1 here
  EXPECT_EQ(m.precision, 1.0);
  EXPECT_EQ(m.f_best, 1.0);
  EXPECT_EQ(m.f_best_radius, 0.0);
  EXPECT_EQ(m.witness.min_selected_cross_projection, 0.0);
}

// d = 1, alpha = (0.4, 0.3, 0.2, 0.1), v = (1, -1, 1, 1): points p = (0.4, -0.3, 0.2, 0.1).
// N = 2: s = 0.1, D = (0.3, 0.4, 0.1, 0.0): r_max = 0.4, r_min = 0, FP(r_max) = 2, so P = 1/2,
// R = 0, F = 0; F(r) peaks at r = 0.4 with TP = 2, FP = 2: 2*2 / (2 + 2 + 2) = 2/3.
TEST(SelectionClosedForm, CollinearValuesWithOppositeSigns) {
  const OwnedRow row{{0.4f, 0.3f, 0.2f, 0.1f}, {1.0f, -1.0f, 1.0f, 1.0f}, 1};
  const SelectionMetrics m = at(row, 2);
  constexpr double kFloatInputs = 1e-7;  // the weights are floats
  EXPECT_NEAR(m.s_norm, 0.1, kFloatInputs);
  EXPECT_NEAR(m.r_max, 0.4, kFloatInputs);
  EXPECT_NEAR(m.r_min, 0.0, kFloatInputs);
  EXPECT_NEAR(m.margin, -0.4, kFloatInputs);
  EXPECT_EQ(m.unselected_inside_r_max, 2u);
  EXPECT_EQ(m.precision, 0.5);
  EXPECT_EQ(m.recall, 0.0);
  EXPECT_EQ(m.f_score, 0.0);
  EXPECT_DOUBLE_EQ(m.f_best, 2.0 / 3.0);
  EXPECT_NEAR(m.f_best_radius, 0.4, kFloatInputs);
  EXPECT_NEAR(m.cos_sink, 1.0, 1e-12);
  EXPECT_NEAR(m.cos_last, 1.0, 1e-12);
}

// All values along one direction with the same sign: every top-N set is perfectly separated.
TEST(SelectionClosedForm, CollinearPositiveValuesAlwaysSeparate) {
  const OwnedRow row{{0.35f, 0.25f, 0.2f, 0.12f, 0.08f}, {3, 0, 3, 0, 3, 0, 3, 0, 3, 0}, 2};
  for (std::size_t n = 1; n < 5; ++n) {
    const SelectionMetrics m = at(row, n);
    EXPECT_GT(m.margin, 0.0) << n;
    EXPECT_EQ(m.f_score, 1.0) << n;
  }
}

TEST(SelectionDegenerate, SingleKeyHasNoN) {
  const OwnedRow row{{1.0f}, {1.0f, 2.0f}, 2};
  EXPECT_TRUE(default_n_grid(1).empty());
  EXPECT_TRUE(every_n(1).empty());
  EXPECT_TRUE(selection_metrics(row.view(), every_n(1)).empty());
  const std::vector<std::size_t> one = {1};
  EXPECT_THROW(selection_metrics(row.view(), one), InputError);
}

TEST(SelectionDegenerate, LastNLeavesOneUnselectedKey) {
  std::mt19937_64 rng(2);
  const OwnedRow row = testing::random_row(rng, 20, 4, {});
  const SelectionMetrics m = at(row, 19);
  expect_no_nan(m);
  EXPECT_LE(m.unselected_inside_r_max, 1u);
  EXPECT_EQ(m.a_out_max, *std::min_element(row.alpha.begin(), row.alpha.end()));
}

TEST(SelectionDegenerate, TiesGoToTheLowerIndex) {
  // Keys 1 and 2 tie; key 1 must join I_2 first. Their values differ, which tells them apart.
  const OwnedRow row{{0.4f, 0.2f, 0.2f, 0.2f}, {1, 0, 0, 1, 0, 0, 0, 0}, 2};
  // v = (1,0), (0,1), (0,0), (0,0): with key 1 selected at N = 2, s = (0.4, 0.2).
  const SelectionMetrics m = at(row, 2);
  EXPECT_NEAR(m.s_norm, std::sqrt(0.4 * 0.4 + 0.2 * 0.2), 1e-7);
  EXPECT_EQ(m.a_in_min, 0.2f);
  EXPECT_EQ(m.a_out_max, 0.2f);
}

TEST(SelectionDegenerate, AllZeroValuesGiveDocumentedValues) {
  const OwnedRow row{{0.5f, 0.3f, 0.2f}, std::vector<float>(9, 0.0f), 3};
  for (const std::size_t n : {1, 2}) {
    const SelectionMetrics m = at(row, n);
    expect_no_nan(m);
    EXPECT_EQ(m.r_max, 0.0);
    EXPECT_EQ(m.r_min, 0.0);
    EXPECT_EQ(m.s_norm, 0.0);
    EXPECT_EQ(m.recall, 1.0);  // every point sits on s_N = 0
    EXPECT_EQ(m.precision, static_cast<double>(n) / 3.0);
    EXPECT_EQ(m.cos_sink, 0.0);
  }
}

TEST(SelectionDegenerate, MaskedKeysSitExactlyAtTheRepresentativeNorm) {
  // Keys 2 and 3 are masked (alpha = 0): p = 0, so D = ||s_N|| exactly, for both methods.
  const OwnedRow row{{0.7f, 0.3f, 0.0f, 0.0f}, {1, 2, -1, 0.5f, 3, 3, 4, 4}, 2};
  for (const ProjectionMethod method : {ProjectionMethod::kGram, ProjectionMethod::kDirect}) {
    for (const std::size_t n : {1, 2, 3}) {
      const SelectionMetrics m = at(row, n, method);
      expect_no_nan(m);
      EXPECT_EQ(m.r_min, m.s_norm) << n;  // N = 1: the masked keys are nearer than key 1
      if (n >= 2) {
        EXPECT_EQ(m.a_out_max, 0.0f) << n;  // only masked keys are left out
      }
      if (n == 3) {
        EXPECT_EQ(m.r_max, m.s_norm);  // a masked key is selected and sits at ||s_N||
        EXPECT_EQ(m.precision, 0.75);  // the other masked key ties with r_max: inside
      }
    }
  }
}

// A key of tiny alpha lies within an ulp of ||s_N||^2 in D^2, so only the sign of its offset
// D^2 - ||s_N||^2 = alpha (alpha ||v||^2 - 2 <v, s_N>) says which side of a ball it is on.
// alpha = (1, 2e-17, 1e-17, 1e-17) (the sum is 1 in float), v = (1,0), (0,1), (-1,0), (1,0).
// N = 2: s = (1, 2e-17); offsets -1, -4e-34 (r_max: key 1), +2e-17 (key 2, outside), -2e-17
// (key 3, r_min, inside r_max). So P = 2/3, R = 1/2 (key 1 lies beyond r_min), F = 4/7; at r = ||s_N||
// both selected keys and key 3 are inside (P = 2/3, R = 1); F_best = 4/5 at r_max. Rounded
// distances would put all four tiny keys at exactly ||s_N|| (P = 1/2, R = 1).
TEST(SelectionClosedForm, TinyWeightsAreJudgedByTheSignOfTheirOffset) {
  const OwnedRow row{{1.0f, 2e-17f, 1e-17f, 1e-17f}, {1, 0, 0, 1, -1, 0, 1, 0}, 2};
  for (const ProjectionMethod method : {ProjectionMethod::kGram, ProjectionMethod::kDirect}) {
    const SelectionMetrics m = at(row, 2, method);
    EXPECT_EQ(m.unselected_inside_r_max, 1u);
    EXPECT_EQ(m.selected_inside_r_min, 1u);
    EXPECT_DOUBLE_EQ(m.precision, 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(m.recall, 0.5);
    EXPECT_DOUBLE_EQ(m.f_score, 4.0 / 7.0);
    EXPECT_DOUBLE_EQ(m.f_best, 0.8);
    EXPECT_DOUBLE_EQ(m.f_best_radius, m.r_max);
    EXPECT_NEAR(m.r_min, 1.0, 1e-12);
    const BallScores at_one = m.at_normalised_radius[3];  // rho = 1
    ASSERT_EQ(SelectionOptions().normalised_radii[3], 1.0);
    EXPECT_EQ(at_one.selected_inside, 2u);
    EXPECT_EQ(at_one.unselected_inside, 1u);
  }
}

TEST(SelectionInputErrors, RejectBadRowsAndBadN) {
  const OwnedRow good{{0.5f, 0.5f}, {1, 2}, 1};
  const std::vector<std::size_t> one = {1};
  const std::vector<std::size_t> descending = {2, 1};
  EXPECT_THROW(selection_metrics(OwnedRow{{0.5f, 0.4f}, {1, 2}, 1}.view(), one), InputError);   // sum != 1
  EXPECT_THROW(selection_metrics(OwnedRow{{1.5f, -0.5f}, {1, 2}, 1}.view(), one), InputError);  // negative
  EXPECT_THROW(selection_metrics(OwnedRow{{0.5f, 0.5f}, {1, NAN}, 1}.view(), one), InputError);
  EXPECT_THROW(selection_metrics(OwnedRow{{0.5f, 0.5f}, {1, 2, 3}, 1}.view(), one), InputError);  // shape
  EXPECT_THROW(selection_metrics(good.view(), std::vector<std::size_t>{2}), InputError);          // N = M
  EXPECT_THROW(selection_metrics(OwnedRow{{0.2f, 0.3f, 0.5f}, {1, 2, 3}, 1}.view(), descending), InputError);
  SelectionOptions descending_radii;
  descending_radii.normalised_radii = {1.0, 0.5};
  EXPECT_THROW(selection_metrics(good.view(), one, descending_radii), InputError);
  EXPECT_NO_THROW(selection_metrics(good.view(), one));
}

}  // namespace
}  // namespace attngeom::geometry
