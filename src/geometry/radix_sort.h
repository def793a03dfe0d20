#pragma once
// Exact ascending sort of doubles in near-linear time, for the thousands of short arrays the
// exact F_best sorts per row. The IEEE-754 bit pattern, read as an unsigned integer, orders
// like the value once negative patterns are flipped and non-negative ones get the sign bit
// (-0.0 then sorts before +0.0, which compare equal). This is a most-significant-digit radix
// sort that buckets by the highest bits which differ within the range being sorted (up to 8,
// about two keys per bucket), then recurses into crowded buckets. Clustered keys (the ball
// offsets D^2 - ||s_N||^2: most near 0, a few far below) therefore split in a few passes,
// where equal-width value buckets would pile up and comparison sorts would pay a
// mispredicted branch per comparison.
#include <cstddef>
#include <span>
#include <vector>

namespace attngeom::geometry {

class RadixSorter {
 public:
  // values: none NaN. Partial sort: afterwards
  // values[first..] hold the largest values in ascending order, and everything before `first`
  // is no larger (in no particular order); first = 0 sorts them all.
  void sort_from(std::span<double> values, std::size_t first);

 private:
  std::vector<double> scratch_;
};

}  // namespace attngeom::geometry
