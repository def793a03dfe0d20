#pragma once
// Random (alpha, V) rows for property tests, with the awkward cases switched on by traits:
// tied weights, exact-zero weights (masked keys), all-zero value vectors.
#include <cstddef>
#include <random>
#include <vector>

#include "geometry/head_row.h"

namespace attngeom::geometry::testing {

struct OwnedRow {
  std::vector<float> alpha;   // [M]
  std::vector<float> values;  // [M, d]
  std::size_t dim = 0;
  HeadRowView view() const { return {alpha, values, dim}; }
};

struct RandomRowTraits {
  double tie_share = 0.0;          // share of keys whose weight copies another key's weight
  double zero_weight_share = 0.0;  // share of keys with alpha exactly 0
  double zero_vector_share = 0.0;  // share of keys with v = 0
};

inline OwnedRow random_row(std::mt19937_64& rng, std::size_t keys, std::size_t dim, const RandomRowTraits& traits) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> raw(keys);
  for (std::size_t k = 0; k < keys; ++k) raw[k] = std::exp(3.0 * gauss(rng));  // spread over decades
  for (std::size_t k = 1; k < keys; ++k) {
    if (unit(rng) < traits.tie_share) raw[k] = raw[std::uniform_int_distribution<std::size_t>(0, k - 1)(rng)];
  }
  for (std::size_t k = 0; k < keys; ++k) {
    if (unit(rng) < traits.zero_weight_share) raw[k] = 0.0;
  }
  double total = 0.0;
  for (const double r : raw) total += r;
  if (total == 0.0) {  // every weight drawn zero: put all mass on one key
    raw[0] = 1.0;
    total = 1.0;
  }
  OwnedRow row;
  row.dim = dim;
  for (const double r : raw) row.alpha.push_back(static_cast<float>(r / total));
  row.values.resize(keys * dim);
  for (std::size_t k = 0; k < keys; ++k) {
    const bool zero = unit(rng) < traits.zero_vector_share;
    for (std::size_t t = 0; t < dim; ++t) row.values[k * dim + t] = zero ? 0.0f : static_cast<float>(gauss(rng));
  }
  return row;
}

}  // namespace attngeom::geometry::testing
