#include "geometry/selection_order.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace attngeom::geometry {
namespace {

constexpr std::size_t kRadixFrom = 256;

// An unsigned key that ascends as x descends: the IEEE-754 pattern with negative patterns
// flipped and the sign bit set on the rest orders like the value; its complement reverses
// that. -0 is read as +0, which compares equal to it.
std::uint32_t descending_key(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x + 0.0f);
  const std::uint32_t ascending = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return ~ascending;
}

// Stable on an ascending index list: equal weights keep the lower index first.
std::vector<std::size_t> order_by_comparison(std::span<const float> alpha) {
  std::vector<std::size_t> order(alpha.size());  // [M]
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return alpha[a] > alpha[b]; });
  return order;
}

// A least-significant-digit radix sort, a byte per pass: each pass is stable, so equal
// weights keep the lower index first, as the ascending index list starts.
std::vector<std::size_t> order_by_radix(std::span<const float> alpha) {
  const std::size_t keys = alpha.size();
  std::vector<std::uint32_t> key(keys), key_scratch(keys);    // [M]
  std::vector<std::size_t> order(keys), order_scratch(keys);  // [M]
  for (std::size_t k = 0; k < keys; ++k) {
    key[k] = descending_key(alpha[k]);
    order[k] = k;
  }
  for (int shift = 0; shift < 32; shift += 8) {
    std::array<std::size_t, 257> start{};  // [257] where each digit's keys begin
    for (const std::uint32_t x : key) ++start[((x >> shift) & 0xFFu) + 1];
    // A digit that every key shares moves nothing.
    if (start[((key[0] >> shift) & 0xFFu) + 1] == keys) continue;
    for (std::size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
    for (std::size_t p = 0; p < keys; ++p) {
      const std::size_t to = start[(key[p] >> shift) & 0xFFu]++;
      key_scratch[to] = key[p];
      order_scratch[to] = order[p];
    }
    key.swap(key_scratch);
    order.swap(order_scratch);
  }
  return order;
}

}  // namespace

SelectionOrder selection_order(std::span<const float> alpha) {
  SelectionOrder result;
  // The radix sort's four passes over 257 counters outweigh a comparison sort on short rows.
  result.order = alpha.size() < kRadixFrom ? order_by_comparison(alpha) : order_by_radix(alpha);
  result.rank.resize(alpha.size());
  for (std::size_t p = 0; p < alpha.size(); ++p) result.rank[result.order[p]] = p;
  return result;
}

}  // namespace attngeom::geometry
