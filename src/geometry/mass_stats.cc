#include "geometry/mass_stats.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "util/error.h"

namespace attngeom::geometry {

MassStats mass_stats(std::span<const float> alpha, const MassOptions& options) {
  if (alpha.empty()) throw InputError("mass statistics: empty attention row");
  const std::size_t keys = alpha.size();
  MassStats out;
  out.sink_mass = alpha.front();
  out.last_mass = alpha.back();
  double entropy = 0.0;
  for (const float a : alpha) {
    if (a > 0.0f) entropy -= static_cast<double>(a) * std::log(static_cast<double>(a));  // 0 log 0 = 0
  }
  out.normalised_entropy = keys > 1 ? entropy / std::log(static_cast<double>(keys)) : 0.0;
  const std::size_t window = std::min(options.recency_window, keys);
  for (std::size_t k = keys - window; k < keys; ++k) out.recency_mass += alpha[k];
  std::vector<float> sorted(alpha.begin(), alpha.end());
  const std::size_t top = std::min(options.top_k, keys);
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(top), sorted.end(), std::greater<>());
  for (std::size_t k = 0; k < top; ++k) out.top_k_mass += sorted[k];
  // Shares of a distribution: a float row summing to 1 + 4e-8 must not report more than all.
  out.recency_mass = std::min(out.recency_mass, 1.0);
  out.top_k_mass = std::min(out.top_k_mass, 1.0);
  return out;
}

}  // namespace attngeom::geometry
