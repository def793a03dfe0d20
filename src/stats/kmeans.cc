#include "stats/kmeans.h"

#include <algorithm>
#include <limits>
#include <random>
#include <utility>

#include "util/error.h"

namespace attngeom::stats {
namespace {

double squared_distance(const double* a, const double* b, std::size_t features) {
  double sum = 0.0;
  for (std::size_t f = 0; f < features; ++f) sum += (a[f] - b[f]) * (a[f] - b[f]);
  return sum;
}

// k-means++: each next centre is a point drawn with probability proportional to its squared
// distance to the nearest centre so far.
std::vector<double> plus_plus_centres(std::span<const double> points, std::size_t count, std::size_t features,
                                      std::size_t k, std::mt19937_64& rng) {
  std::vector<double> centres;
  std::uniform_int_distribution<std::size_t> first(0, count - 1);
  const std::size_t start = first(rng);
  centres.insert(centres.end(), points.begin() + static_cast<std::ptrdiff_t>(start * features),
                 points.begin() + static_cast<std::ptrdiff_t>((start + 1) * features));
  std::vector<double> nearest(count, std::numeric_limits<double>::infinity());
  while (centres.size() < k * features) {
    const double* latest = centres.data() + centres.size() - features;
    double total = 0.0;
    for (std::size_t p = 0; p < count; ++p) {
      nearest[p] = std::min(nearest[p], squared_distance(points.data() + p * features, latest, features));
      total += nearest[p];
    }
    std::size_t chosen = 0;
    if (total > 0.0) {
      double target = std::uniform_real_distribution<double>(0.0, total)(rng);
      for (; chosen + 1 < count && target >= nearest[chosen]; ++chosen) target -= nearest[chosen];
    }
    centres.insert(centres.end(), points.begin() + static_cast<std::ptrdiff_t>(chosen * features),
                   points.begin() + static_cast<std::ptrdiff_t>((chosen + 1) * features));
  }
  return centres;
}

KMeansResult lloyd(std::span<const double> points, std::size_t count, std::size_t features, std::size_t k,
                   std::vector<double> centres, std::size_t max_iterations) {
  KMeansResult r;
  r.assignment.assign(count, 0);
  for (std::size_t iteration = 0; iteration < max_iterations; ++iteration) {
    bool changed = iteration == 0;
    for (std::size_t p = 0; p < count; ++p) {
      std::size_t best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (std::size_t c = 0; c < k; ++c) {
        const double d = squared_distance(points.data() + p * features, centres.data() + c * features, features);
        if (d < best_d) {
          best_d = d;
          best = c;
        }
      }
      changed |= r.assignment[p] != best;
      r.assignment[p] = best;
    }
    if (!changed) break;
    std::vector<double> sums(k * features, 0.0);
    std::vector<std::size_t> sizes(k, 0);
    for (std::size_t p = 0; p < count; ++p) {
      ++sizes[r.assignment[p]];
      for (std::size_t f = 0; f < features; ++f) sums[r.assignment[p] * features + f] += points[p * features + f];
    }
    for (std::size_t c = 0; c < k; ++c) {
      if (sizes[c] == 0) continue;  // an empty cluster keeps its centre
      for (std::size_t f = 0; f < features; ++f)
        centres[c * features + f] = sums[c * features + f] / static_cast<double>(sizes[c]);
    }
  }
  for (std::size_t p = 0; p < count; ++p) {
    r.inertia += squared_distance(points.data() + p * features, centres.data() + r.assignment[p] * features, features);
  }
  r.centres = std::move(centres);
  return r;
}

}  // namespace

KMeansResult kmeans(std::span<const double> points, std::size_t count, std::size_t features, std::size_t k,
                    std::size_t restarts, std::size_t max_iterations, std::uint64_t seed) {
  if (count == 0 || k == 0 || features == 0 || points.size() != count * features || restarts == 0) {
    throw InputError("k-means: need at least one point, one feature, one cluster and one start");
  }
  std::mt19937_64 rng(seed);
  KMeansResult best;
  best.inertia = std::numeric_limits<double>::infinity();
  const std::size_t centres = std::min(k, count);
  for (std::size_t start = 0; start < restarts; ++start) {
    KMeansResult r = lloyd(points, count, features, centres, plus_plus_centres(points, count, features, centres, rng),
                           max_iterations);
    if (r.inertia < best.inertia) best = std::move(r);
  }
  return best;
}

}  // namespace attngeom::stats
