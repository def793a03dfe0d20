#include "geometry/mass_stats.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "util/error.h"

namespace attngeom::geometry {

MassStats mass_stats(std::span<const float> alpha, const MassOptions& options) {
  if (alpha.empty()) throw InputError("mass statistics: empty attention row");
  std::vector<float> sorted(alpha.begin(), alpha.end());
  const std::size_t top = std::min(options.top_k, alpha.size());
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(top), sorted.end(), std::greater<>());
  return mass_step(alpha.data(), alpha.size(), sorted.data(), options);
}

}  // namespace attngeom::geometry
