// The GPU's envelopes (ops/cuda_envelope_kernels.cu) run on the CPU in the GPU's arrangement:
// each N from a fresh model state instead of one sweep through the smaller N, nu by position
// from the lane norms, R2's terms from a table of the three supports of that N (as
// CudaSelection builds it), against reconstructed_envelopes, bit for bit (on the CPU R2's tails
// take the same exp; on a GPU they may differ in their last bits).
#include "geometry/envelope_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "geometry/lane_sums.h"
#include "geometry/reconstructed_bounds.h"
#include "geometry/selection_order.h"
#include "geometry/value_diagnostics.h"
#include "random_rows.h"
#include "same_geometry.h"

namespace attngeom::geometry {
namespace {

struct Bounds {
  double eta = 0.0;
  ProbabilisticEnvelopeOptions r2;
};

void expect_gpu_arrangement_matches(const testing::OwnedRow& owned, const CosineModel& model, const Bounds& bounds) {
  const HeadRowView row = owned.view();
  const std::size_t keys = row.keys();
  const std::size_t dim = row.dim;
  const std::vector<double> norms_by_key = value_norms(row);
  const std::vector<std::size_t> grid = default_n_grid(keys);
  const ReconstructedEnvelopes want =
      reconstructed_envelopes({row.alpha, norms_by_key, model}, grid, bounds.eta, bounds.r2);

  const SelectionOrder order = selection_order(row.alpha);
  std::vector<int> key(keys);
  std::vector<double> alpha(keys), norms(keys), sq_norms(keys);
  std::size_t nonzero_total = 0;
  for (std::size_t p = 0; p < keys; ++p) {
    key[p] = static_cast<int>(order.order[p]);
    alpha[p] = row.alpha[order.order[p]];
    norms[p] = std::sqrt(squared_norm_in_lanes(row.values.data() + order.order[p] * dim, dim));
    sq_norms[p] = norms[p] * norms[p];
    nonzero_total += alpha[p] != 0.0;
  }
  const ModelRow<int> model_row{keys,       alpha.data(),          norms.data(), sq_norms.data(),
                                key.data(), std::exp(-model.beta), model.rho_0};
  for (std::size_t g = 0; g < grid.size(); ++g) {
    const std::size_t n = grid[g];
    SCOPED_TRACE("M = " + std::to_string(keys) + ", N = " + std::to_string(n));
    std::vector<double> arrays(7 * keys, 0.0), lo(keys), hi(keys);
    std::vector<std::size_t> support(keys);
    ModelState s;
    s.weighted_by_key = arrays.data();
    s.forward = arrays.data() + keys;
    s.backward = arrays.data() + 2 * keys;
    s.projection = arrays.data() + 3 * keys;
    s.mu = arrays.data() + 4 * keys;
    s.spread = arrays.data() + 5 * keys;
    s.rounding = arrays.data() + 6 * keys;
    s.support = support.data();
    advance_model(model_row, n, s);
    EXPECT_TRUE(
        testing::same_envelope_point(deterministic_point(s, keys, bounds.eta, lo.data(), hi.data()), want.r1[g]));
    const std::size_t nz = std::min(n, nonzero_total);
    SupportTerm terms[3];  // supports nz - 1, nz, nz + 1
    for (std::size_t j = 0; j < 3; ++j) {
      if (nz + j >= 3) terms[j] = support_term(nz + j - 1, bounds.r2.sigma2, bounds.r2.delta, keys, dim);
    }
    std::size_t least = 0;
    std::size_t most = 0;
    support_range(s.support, keys, least, most);
    double roots[3] = {0.0, 0.0, 0.0};
    for (std::size_t k = 0; k <= most - least; ++k) {
      if (least + k >= 2) roots[k] = terms[least + k + 1 - nz].margin_root;
    }
    EXPECT_TRUE(testing::same_envelope_point(probabilistic_point(s, keys, least, roots, lo.data(), hi.data()),
                                             want.r2.points[g]));
    auto tail = [&](double margin, double spread, std::size_t k) {
      return support_tail(terms[k + 1 - nz], margin, spread, dim, bounds.r2.sigma2);
    };
    testing::expect_same_separation(separation_bound(s, keys, tail), want.r2.separation[g], 0.0);
  }
}

TEST(EnvelopeStep, GpuArrangementGivesTheCpuBits) {
  std::mt19937_64 rng(71);
  const CosineModel models[] = {{0.1, 0.3}, {0.0, -0.2}, {std::numeric_limits<double>::infinity(), 0.0}, {2.0, 0.9}};
  const Bounds bounds[] = {{0.05, {24, 0.3, 0.05}}, {0.0, {24, std::numeric_limits<double>::min(), 0.01}}};
  int i = 0;
  for (const std::size_t keys : {2u, 7u, 130u, 600u}) {
    for (const testing::RandomRowTraits traits :
         {testing::RandomRowTraits{}, testing::RandomRowTraits{0.3, 0.2, 0.05}}) {
      const testing::OwnedRow row = testing::random_row(rng, keys, 24, traits);
      for (const CosineModel& model : models) expect_gpu_arrangement_matches(row, model, bounds[i++ % 2]);
    }
  }
}

}  // namespace
}  // namespace attngeom::geometry
