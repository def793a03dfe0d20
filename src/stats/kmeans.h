#pragma once
// Seeded k-means (k-means++ starts, Lloyd iterations) on row-major points. Internal to the
// taxonomy cross-check.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace attngeom::stats {

struct KMeansResult {
  std::vector<std::size_t> assignment;  // [P]
  std::vector<double> centres;          // [k, F]
  double inertia = 0.0;                 // within-cluster sum of squared distances
};

// points: [P, F]. Requires P >= 1 and k >= 1; with P < k some clusters stay empty.
KMeansResult kmeans(std::span<const double> points, std::size_t count, std::size_t features, std::size_t k,
                    std::size_t restarts, std::size_t max_iterations, std::uint64_t seed);

}  // namespace attngeom::stats
