#include "geometry/selection_order.h"

#include <algorithm>
#include <numeric>

namespace attngeom::geometry {

SelectionOrder selection_order(std::span<const float> alpha) {
  SelectionOrder result;
  result.order.resize(alpha.size());
  std::iota(result.order.begin(), result.order.end(), std::size_t{0});
  // Stable on an ascending index list: equal weights keep the lower index first.
  std::stable_sort(result.order.begin(), result.order.end(),
                   [&](std::size_t a, std::size_t b) { return alpha[a] > alpha[b]; });
  result.rank.resize(alpha.size());
  for (std::size_t p = 0; p < result.order.size(); ++p) result.rank[result.order[p]] = p;
  return result;
}

}  // namespace attngeom::geometry
