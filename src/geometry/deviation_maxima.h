#pragma once
// The maximum cosine deviation max |delta| (cosine_model.h) of many rows over one kv head's
// values, rows ending at ascending keys, without scanning every pair of every row. A content
// pair's delta depends on the pair only through its cosine and its lag, and a rounded
// difference is monotone in the cosine, so a row's maximum is met at the largest or the
// smallest cosine of some lag among its pairs (the sink's pairs against rho_0 alike). Running
// extrema by lag over the later key, from the double cosines that screened_cosine_deviation
// recomputes (unit_pair_cosine), give each row's max_abs exactly, bit for bit: O(T^2 d) per kv
// head and O(M) per row, against O(M^2 d) per row.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/cosine_model.h"

namespace attngeom::geometry {

class DeviationMaxima {
 public:
  // units: the longest row's (kept by reference); keys: each row's M, ascending, the last
  // units.keys().
  DeviationMaxima(const UnitRows& units, std::span<const std::size_t> keys);

  // Independent parts (lags tau = p, p + parts, ...; the sink's pairs with part 0), each to
  // compute once, in any order, on any thread, given every row's model.
  std::size_t parts() const { return parts_; }
  void compute(std::size_t part, std::span<const CosineModel> models);
  // After every part: each row's max |delta| over its pairs of non-zero vectors (0 without any).
  std::vector<double> maxima() const;

 private:
  const UnitRows& units_;
  std::vector<std::size_t> keys_;  // [rows]
  std::size_t parts_;
  std::vector<double> partial_;  // [parts, rows] each part's maximum of each row
};

}  // namespace attngeom::geometry
