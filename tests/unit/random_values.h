#pragma once
// Random test inputs shared by the unit tests.
#include <cstddef>
#include <random>
#include <vector>

namespace attngeom::testing {

// n values drawn from N(0, scale^2).
inline std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace attngeom::testing
