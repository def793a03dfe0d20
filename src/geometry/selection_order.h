#pragma once
// The order in which keys join the top-N set: descending alpha, ties to the lower index.
#include <cstddef>
#include <span>
#include <vector>

namespace attngeom::geometry {

struct SelectionOrder {
  std::vector<std::size_t> order;  // [M] order[p] = key at position p; I_N = order[0..N)
  std::vector<std::size_t> rank;   // [M] rank[order[p]] = p; key k is in I_N iff rank[k] < N
};

SelectionOrder selection_order(std::span<const float> alpha);

}  // namespace attngeom::geometry
